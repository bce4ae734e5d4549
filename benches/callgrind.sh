#!/usr/bin/env bash
# Instructions per tool call, counted by valgrind's callgrind, for the SQLite overhead bench
# (benches/overhead): bare, audited (layer + audited pool), audited + Prometheus recorder,
# audited + recorder + spans sampled at 10%. Each variant runs alone (HINTAUDIT_BENCH_PROFILE)
# at two call counts; the difference divided by the difference of calls leaves out the
# set-up (pools, servers, the OTLP receiver, warm-up).
#
#   benches/callgrind.sh            # N1=100 N2=400 calls
#   N1=200 N2=800 benches/callgrind.sh
#
# Needs valgrind. Builds the bench with `cargo bench --no-run` (release profile).
set -euo pipefail
cd "$(dirname "$0")/.."
N1=${N1:-100}
N2=${N2:-400}
command -v valgrind >/dev/null || { echo "valgrind not found (apt-get install valgrind)"; exit 1; }
bin=$(cargo bench --no-run --bench overhead --message-format=json 2>/dev/null \
  | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
[ -x "$bin" ] || { echo "bench binary not found"; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Instructions (Ir) of one run of variant $1 with $2 calls.
instructions() {
  HINTAUDIT_BENCH_PROFILE=$1 HINTAUDIT_BENCH_CALLS=$2 HINTAUDIT_BENCH_SAMPLE=0.1 \
    valgrind --tool=callgrind --callgrind-out-file="$out/cg.$1.$2" "$bin" >/dev/null 2>"$out/log.$1.$2"
  awk '/^(summary|totals):/ {print $2; exit}' "$out/cg.$1.$2"
}
echo "commit $(git rev-parse --short HEAD); $(valgrind --version); calls $N1 and $N2"
printf '%-44s %14s %10s\n' "variant" "instr/call" "vs bare"
bare=""
for v in "0:bare server, plain sqlx pool" "2:audited: layer + audited pool" \
         "5:audited + Prometheus recorder" "7:audited + recorder + spans sampled 10%"; do
  i=${v%%:*}; label=${v#*:}
  a=$(instructions "$i" "$N1"); b=$(instructions "$i" "$N2")
  per=$(( (b - a) / (N2 - N1) ))
  [ -z "$bare" ] && bare=$per
  printf '%-44s %14d %+9.1f%%\n' "$label" "$per" "$(echo "scale=4; ($per - $bare) * 100 / $bare" | bc)"
done
