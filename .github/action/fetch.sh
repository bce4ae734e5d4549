#!/usr/bin/env bash
# action.yml, step "fetch": downloads the hintaudit release archive of HINTAUDIT_VERSION for
# this runner, checks its SHA-256 against the pinned checksums before anything in it runs,
# unpacks it, and puts the binary on PATH (output `path`: the binary).
#
# Environment: HINTAUDIT_VERSION; HINTAUDIT_CHECKSUMS (a SHA256SUMS file; default the
# action's pinned .github/action/SHA256SUMS); HINTAUDIT_DOWNLOAD_URL (default the action
# repository's release v$HINTAUDIT_VERSION); HINTAUDIT_ACTION_PATH,
# HINTAUDIT_ACTION_REPOSITORY; GITHUB_OUTPUT, GITHUB_PATH, RUNNER_TEMP as GitHub sets them.
set -euo pipefail

fail() {
  echo "::error title=hintaudit action::$*"
  exit 1
}

# The Rust target of this runner: Linux (glibc, else musl: `getconf GNU_LIBC_VERSION` answers
# on glibc only) or macOS, x86_64 or arm64.
target() {
  local arch os
  case "$(uname -m)" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) fail "no hintaudit release for CPU $(uname -m)" ;;
  esac
  case "$(uname -s)" in
    Linux)
      if getconf GNU_LIBC_VERSION >/dev/null 2>&1; then os=unknown-linux-gnu; else os=unknown-linux-musl; fi ;;
    Darwin) os=apple-darwin ;;
    *) fail "no hintaudit release for $(uname -s)" ;;
  esac
  echo "$arch-$os"
}

sha256() {
  if command -v sha256sum >/dev/null; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d' ' -f1
}

version="${HINTAUDIT_VERSION:?}"
checksums="${HINTAUDIT_CHECKSUMS:-$HINTAUDIT_ACTION_PATH/.github/action/SHA256SUMS}"
base="${HINTAUDIT_DOWNLOAD_URL:-${GITHUB_SERVER_URL:-https://github.com}/$HINTAUDIT_ACTION_REPOSITORY/releases/download/v$version}"
name="hintaudit-$version-$(target)"
archive="$name.tar.gz"

[ -f "$checksums" ] || fail "no checksums file $checksums"
expected="$(awk -v f="$archive" '!/^#/ && ($2 == f || $2 == "*" f) { print $1 }' "$checksums")"
[ -n "$expected" ] || fail "no pinned checksum for $archive in $checksums: this action pins no such release"

dir="${RUNNER_TEMP:?}/hintaudit-$version"
rm -rf "$dir"
mkdir -p "$dir"
echo "fetching $base/$archive"
curl --fail --silent --show-error --location --retry 3 --output "$dir/$archive" "$base/$archive"
actual="$(sha256 "$dir/$archive")"
if [ "$actual" != "$expected" ]; then
  rm -f "$dir/$archive"
  fail "checksum mismatch for $archive: expected $expected, got $actual; not running it"
fi
echo "checksum ok: $archive $actual"
tar -xzf "$dir/$archive" -C "$dir"
bin="$dir/$name/hintaudit"
[ -x "$bin" ] || fail "$archive holds no $name/hintaudit"
"$bin" --version
echo "$dir/$name" >>"$GITHUB_PATH"
echo "path=$bin" >>"$GITHUB_OUTPUT"
