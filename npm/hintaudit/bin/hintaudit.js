#!/usr/bin/env node
// `npx hintaudit …`: runs the hintaudit binary of the platform package npm installed beside
// this one. The platform packages are this package's optionalDependencies, one per
// operating system, CPU and C library; npm (pnpm, yarn) installs only the one whose `os`,
// `cpu` and `libc` fields match. Nothing runs at install time (no postinstall script: pnpm 10
// blocks those): the binary is found here, when the command runs.
'use strict';

const { spawn } = require('node:child_process');
const path = require('node:path');

const SCOPE = '@hintaudit';

/**
 * The C library this Node runs on, `'gnu'` or `'musl'`, without running `ldd`: Node built on
 * glibc names the glibc version it runs with in its diagnostic report's header; Node built on
 * musl does not.
 * @param {object} report a diagnostic report (`process.report.getReport()`, Node 12+)
 * @returns {'gnu' | 'musl'}
 */
function libc(report = diagnosticReport()) {
  return report.header && report.header.glibcVersionRuntime ? 'gnu' : 'musl';
}

function diagnosticReport() {
  // The report lists network interfaces unless told not to (Node 22+): not needed here.
  process.report.excludeNetwork = true;
  return process.report.getReport();
}

/**
 * The platform package's name for an operating system, CPU and C library (Linux only):
 * `@hintaudit/cli-linux-x64-gnu`, `@hintaudit/cli-darwin-arm64`, …
 * @param {string} platform `process.platform`
 * @param {string} arch `process.arch`
 * @param {'gnu' | 'musl' | null} c the C library on Linux, null elsewhere
 */
function platformPackage(platform, arch, c) {
  return `${SCOPE}/cli-${platform}-${arch}${platform === 'linux' ? `-${c}` : ''}`;
}

/**
 * The binary to run: `bin/hintaudit` in the platform package, as Node resolves it from this
 * file. Throws an Error whose message says what is missing and why it likely is.
 * @param {string} name the platform package's name
 * @param {(request: string) => string} resolve resolves a module request to a path
 */
function binaryPath(name, resolve = require.resolve) {
  let manifest;
  try {
    manifest = resolve(`${name}/package.json`);
  } catch {
    throw new Error(missingMessage(name));
  }
  return path.join(path.dirname(manifest), 'bin', 'hintaudit');
}

function missingMessage(name) {
  const own = require('../package.json');
  const supported = Object.keys(own.optionalDependencies || {});
  const lines = [
    `hintaudit: the package ${name}, which holds the hintaudit binary for this platform, is not installed.`,
  ];
  if (supported.includes(name)) {
    lines.push(
      'npm installs it as an optional dependency of hintaudit, and leaves it out when optional',
      'dependencies are omitted: `npm install --omit=optional` (or `omit=optional` in .npmrc, or',
      'a lockfile made with it). Install again without --omit=optional.',
    );
  } else {
    lines.push(
      `No hintaudit binary is built for this platform. Supported: ${supported.join(', ')};`,
      'elsewhere build it from source: cargo install --path crates/cli.',
    );
  }
  return lines.join('\n');
}

/** Runs the binary with this process's arguments and exits as it does. */
function main() {
  const c = process.platform === 'linux' ? libc() : null;
  let binary;
  try {
    binary = binaryPath(platformPackage(process.platform, process.arch, c));
  } catch (e) {
    process.stderr.write(`${e.message}\n`);
    process.exit(2);
  }
  const child = spawn(binary, process.argv.slice(2), { stdio: 'inherit' });
  // A signal sent to this process alone (a process manager's SIGTERM) reaches the binary
  // too; Ctrl-C reaches both anyway, and hintaudit stops once on either.
  const forward = (signal) => child.kill(signal);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, forward);
  }
  child.on('error', (e) => {
    process.stderr.write(`hintaudit: cannot run ${binary}: ${e.message}\n`);
    process.exit(2);
  });
  child.on('exit', (code, signal) => {
    if (signal) {
      // Die of the same signal, so the caller sees what the binary saw.
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code);
  });
}

if (require.main === module) {
  main();
} else {
  module.exports = { libc, platformPackage, binaryPath };
}
