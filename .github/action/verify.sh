#!/usr/bin/env bash
# action.yml, step "verify": runs `hintaudit verify` (the binary HINTAUDIT) with the action's
# inputs (INPUT_*; list inputs one value per line) and a SARIF report at INPUT_SARIF_FILE.
# Never fails itself: outputs `exit-code`, `sarif-file` and `sarif-written` for the steps
# after it (validate, upload, then fail on findings).
set -euo pipefail

args=(verify --format sarif --output "$INPUT_SARIF_FILE" --fail-on "$INPUT_FAIL_ON")
one() { if [ -n "$2" ]; then args+=("$1" "$2"); fi; }
each() {
  local line
  while IFS= read -r line; do
    line="${line#"${line%%[![:space:]]*}"}"
    line="${line%"${line##*[![:space:]]}"}"
    if [ -n "$line" ]; then args+=("$1" "$line"); fi
  done <<<"$2"
}
flag() {
  case "$2" in
    true) args+=("$1") ;;
    false | "") ;;
    *) echo "::error title=hintaudit action::$1 takes true or false, not '$2'"; exit 2 ;;
  esac
}
one --stdio "$INPUT_STDIO"
one --url "$INPUT_URL"
one --database "$INPUT_DATABASE"
each --watch "$INPUT_WATCH"
each --ignore-path "$INPUT_IGNORE_PATH"
one --cases "$INPUT_CASES"
each --tool "$INPUT_TOOL"
one --config "$INPUT_CONFIG"
each --ignore-table "$INPUT_IGNORE_TABLE"
each --ignore-column "$INPUT_IGNORE_COLUMN"
one --timeout "$INPUT_TIMEOUT"
each --schema "$INPUT_SCHEMA"
flag --allow-unexercised "$INPUT_ALLOW_UNEXERCISED"
flag --reset "$INPUT_RESET"
flag --suggest "$INPUT_SUGGEST"

rm -f "$INPUT_SARIF_FILE"
mkdir -p "$(dirname "$INPUT_SARIF_FILE")"
code=0
"${HINTAUDIT:?}" "${args[@]}" || code=$?
echo "exit-code=$code" >>"$GITHUB_OUTPUT"
echo "sarif-file=$INPUT_SARIF_FILE" >>"$GITHUB_OUTPUT"
if [ -s "$INPUT_SARIF_FILE" ]; then
  echo "sarif-written=true" >>"$GITHUB_OUTPUT"
else
  echo "sarif-written=false" >>"$GITHUB_OUTPUT"
fi
echo "hintaudit verify exited $code"
