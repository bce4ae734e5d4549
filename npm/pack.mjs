// Packs hintaudit's npm packages from binaries already built: the launcher (npm/hintaudit)
// and one platform package per binary, each with the `os`, `cpu` and `libc` fields npm
// matches against the machine that installs it.
//
//   node npm/pack.mjs --out DIR TARGET=BINARY [TARGET=BINARY ...]
//
// TARGET is a Rust target triple (x86_64-unknown-linux-gnu, aarch64-apple-darwin, …) and
// BINARY the hintaudit binary built for it. Writes DIR/hintaudit-VERSION.tgz and
// DIR/hintaudit-cli-PLATFORM-VERSION.tgz for each binary, and prints their paths. Every
// platform package must be one of the launcher's optionalDependencies, at its version.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** Rust target triple → the platform package's suffix and npm's `os`, `cpu`, `libc`. */
export const PLATFORMS = {
  'x86_64-unknown-linux-gnu': { os: 'linux', cpu: 'x64', libc: 'glibc' },
  'x86_64-unknown-linux-musl': { os: 'linux', cpu: 'x64', libc: 'musl' },
  'aarch64-unknown-linux-gnu': { os: 'linux', cpu: 'arm64', libc: 'glibc' },
  'aarch64-unknown-linux-musl': { os: 'linux', cpu: 'arm64', libc: 'musl' },
  'aarch64-apple-darwin': { os: 'darwin', cpu: 'arm64', libc: null },
  'x86_64-apple-darwin': { os: 'darwin', cpu: 'x64', libc: null },
};

/** The platform package's name: `@hintaudit/cli-linux-x64-gnu`, `@hintaudit/cli-darwin-arm64`. */
export function packageName({ os, cpu, libc }) {
  const c = { glibc: '-gnu', musl: '-musl' }[libc] ?? '';
  return `@hintaudit/cli-${os}-${cpu}${c}`;
}

/** The launcher's package.json. */
export function launcher() {
  return JSON.parse(fs.readFileSync(path.join(here, 'hintaudit', 'package.json'), 'utf8'));
}

/** The platform package's package.json for `platform`, at the launcher's version. */
export function platformManifest(platform, own = launcher()) {
  const name = packageName(platform);
  const pinned = (own.optionalDependencies || {})[name];
  if (pinned !== own.version) {
    throw new Error(
      `${name} is not among the launcher's optionalDependencies at ${own.version} (found ${pinned})`,
    );
  }
  return {
    name,
    version: own.version,
    description: `The hintaudit binary for ${platform.os} ${platform.cpu}${platform.libc ? ` (${platform.libc})` : ''}: installed by the hintaudit package, which runs it.`,
    license: own.license,
    repository: own.repository,
    os: [platform.os],
    cpu: [platform.cpu],
    ...(platform.libc ? { libc: [platform.libc] } : {}),
    files: ['bin/hintaudit'],
    // Yarn PnP: a binary must sit on disk to be run.
    preferUnplugged: true,
  };
}

/** Runs `npm pack` in `dir` into `out`; returns the tarball's path. */
function npmPack(dir, out) {
  const printed = execFileSync('npm', ['pack', '--silent', '--pack-destination', out], {
    cwd: dir,
    encoding: 'utf8',
  });
  const file = printed.trim().split('\n').pop();
  return path.join(out, file);
}

/** Stages and packs the platform package of `triple` with `binary`; returns the tarball. */
function packPlatform(triple, binary, out) {
  const platform = PLATFORMS[triple];
  if (!platform) {
    throw new Error(`unknown target ${triple}; known: ${Object.keys(PLATFORMS).join(', ')}`);
  }
  const manifest = platformManifest(platform);
  const stage = fs.mkdtempSync(path.join(out, '.stage-'));
  try {
    fs.mkdirSync(path.join(stage, 'bin'));
    fs.copyFileSync(binary, path.join(stage, 'bin', 'hintaudit'));
    fs.chmodSync(path.join(stage, 'bin', 'hintaudit'), 0o755);
    fs.writeFileSync(path.join(stage, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    fs.writeFileSync(
      path.join(stage, 'README.md'),
      `# ${manifest.name}\n\n${manifest.description}\nInstall \`hintaudit\` instead: \`npx hintaudit --help\`.\n`,
    );
    return npmPack(stage, out);
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

function parseArgs(argv) {
  let out = null;
  const binaries = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--out') {
      out = argv[++i];
    } else if (argv[i].includes('=')) {
      const at = argv[i].indexOf('=');
      binaries.push([argv[i].slice(0, at), argv[i].slice(at + 1)]);
    } else {
      throw new Error(`unexpected argument ${argv[i]}`);
    }
  }
  if (!out || binaries.length === 0) {
    throw new Error('usage: node npm/pack.mjs --out DIR TARGET=BINARY [TARGET=BINARY ...]');
  }
  return { out: path.resolve(out), binaries };
}

function main() {
  const { out, binaries } = parseArgs(process.argv.slice(2));
  fs.mkdirSync(out, { recursive: true });
  const tarballs = binaries.map(([triple, binary]) => packPlatform(triple, binary, out));
  tarballs.push(npmPack(path.join(here, 'hintaudit'), out));
  for (const t of tarballs) {
    console.log(t);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    main();
  } catch (e) {
    console.error(`npm/pack.mjs: ${e.message}`);
    process.exit(2);
  }
}
