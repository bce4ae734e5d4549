#!/usr/bin/env bash
# action.yml, step "validate": checks SARIF_FILE against the OASIS SARIF 2.1.0 JSON schema
# before it is uploaded. The schema comes from a package, not from the web: the npm package
# @microsoft/jest-sarif ships it (lib/schemas/sarif-2.1.0-rtm.5.json), checked against the
# SHA-256 pinned here; check-jsonschema (PyPI, run by pipx) validates, reading its patterns
# as Python regular expressions: two `language` patterns hold a stray `]`, a literal that
# ECMA-262's strict (unicode) reading and check-jsonschema's default engine reject.
set -euo pipefail

SCHEMA_PACKAGE="@microsoft/jest-sarif@1.0.0-beta.0"
SCHEMA_PATH="package/lib/schemas/sarif-2.1.0-rtm.5.json"
SCHEMA_SHA256="2d99159ae54a3eea97f81781cff48780548657c35949f4b7f25e99a2ba4de4f8"
VALIDATOR="check-jsonschema==0.39.0"

fail() {
  echo "::error title=hintaudit action::$*"
  exit 1
}
sha256() {
  if command -v sha256sum >/dev/null; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d' ' -f1
}

dir="$(mktemp -d "${RUNNER_TEMP:-/tmp}/sarif-schema.XXXXXX")"
tarball="$(cd "$dir" && npm pack --silent "$SCHEMA_PACKAGE")"
tar -xzf "$dir/$tarball" -C "$dir" "$SCHEMA_PATH"
schema="$dir/$SCHEMA_PATH"
[ "$(sha256 "$schema")" = "$SCHEMA_SHA256" ] || fail "the SARIF schema from $SCHEMA_PACKAGE is not the pinned one"
pipx run --spec "$VALIDATOR" check-jsonschema --regex-variant python --schemafile "$schema" "${SARIF_FILE:?}" \
  || fail "$SARIF_FILE is not valid SARIF 2.1.0 (above)"
