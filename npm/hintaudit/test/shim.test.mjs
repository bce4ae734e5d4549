// The launcher's shim (bin/hintaudit.js) and the platform packages npm/pack.mjs makes: one
// name for each (os, cpu, libc), every one among the launcher's optionalDependencies.
// Run: node --test npm/hintaudit/test/
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

import { PLATFORMS, launcher, packageName, platformManifest } from '../../pack.mjs';

const require = createRequire(import.meta.url);
const shimPath = fileURLToPath(new URL('../bin/hintaudit.js', import.meta.url));
const shim = require(shimPath);

test('the C library comes from the diagnostic report, not from ldd', () => {
  assert.equal(shim.libc({ header: { glibcVersionRuntime: '2.36' } }), 'gnu');
  assert.equal(shim.libc({ header: {} }), 'musl');
  // This Node's own report says one or the other.
  assert.ok(['gnu', 'musl'].includes(shim.libc()));
});

test('the shim and pack.mjs name each platform package alike, each an optional dependency', () => {
  const own = launcher();
  const names = Object.values(PLATFORMS).map((p) => {
    const c = { glibc: 'gnu', musl: 'musl' }[p.libc] ?? null;
    const name = shim.platformPackage(p.os, p.cpu, c);
    assert.equal(name, packageName(p));
    assert.equal(platformManifest(p).name, name);
    return name;
  });
  assert.deepEqual(names.sort(), Object.keys(own.optionalDependencies).sort());
  for (const pinned of Object.values(own.optionalDependencies)) {
    assert.equal(pinned, own.version, 'platform packages pinned to the launcher version');
  }
});

test('a platform package carries os, cpu and libc, and no install script', () => {
  const m = platformManifest(PLATFORMS['x86_64-unknown-linux-musl']);
  assert.deepEqual([m.os, m.cpu, m.libc], [['linux'], ['x64'], ['musl']]);
  assert.equal(platformManifest(PLATFORMS['aarch64-apple-darwin']).libc, undefined);
  for (const manifest of [m, launcher()]) {
    assert.equal(manifest.scripts, undefined, `${manifest.name} has no scripts`);
  }
});

test('a missing platform package names --omit=optional; an unknown platform says so', () => {
  const missing = () => {
    throw new Error('Cannot find module');
  };
  assert.throws(
    () => shim.binaryPath('@hintaudit/cli-linux-x64-gnu', missing),
    /--omit=optional/,
  );
  assert.throws(
    () => shim.binaryPath('@hintaudit/cli-win32-x64', missing),
    /No hintaudit binary is built for this platform\. Supported: @hintaudit\/cli-linux-x64-gnu/,
  );
  const found = shim.binaryPath('@hintaudit/cli-linux-x64-gnu', () => '/m/pkg/package.json');
  assert.equal(found, path.join('/m/pkg', 'bin', 'hintaudit'));
});

test('run without its platform package, the shim exits 2 with that message', () => {
  // A copy of the launcher with no node_modules beside it.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hintaudit-shim-'));
  fs.mkdirSync(path.join(dir, 'bin'));
  fs.copyFileSync(shimPath, path.join(dir, 'bin', 'hintaudit.js'));
  fs.copyFileSync(new URL('../package.json', import.meta.url), path.join(dir, 'package.json'));
  const run = spawnSync(process.execPath, [path.join(dir, 'bin', 'hintaudit.js'), '--version'], {
    encoding: 'utf8',
  });
  fs.rmSync(dir, { recursive: true, force: true });
  assert.equal(run.status, 2);
  assert.match(run.stderr, /is not installed/);
});

test('the release workflow builds every target pack.mjs knows, and no other', () => {
  const workflow = fs.readFileSync(
    new URL('../../../.github/workflows/release.yml', import.meta.url),
    'utf8',
  );
  const targets = [...workflow.matchAll(/\{ target: ([\w-]+),/g)].map((m) => m[1]);
  assert.deepEqual(targets.sort(), Object.keys(PLATFORMS).sort());
});
