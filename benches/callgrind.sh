#!/usr/bin/env bash
# Instructions per tool call, counted by valgrind's callgrind, for the SQLite overhead bench
# (benches/overhead): bare, audited (layer + audited pool), audited + Prometheus recorder,
# audited + recorder + spans sampled at 10%. Each variant runs alone (HINTAUDIT_BENCH_PROFILE)
# at two call counts; the difference divided by the difference of calls leaves out the
# set-up (pools, servers, the OTLP receiver, warm-up). Each count runs RUNS times (default 3)
# and the median total is taken: a run's total still moves by up to about 4 million
# instructions now and then (sqlx's worker threads and glibc's allocator meet in a different
# order), where most runs agree within half a million. Runs go one at a time (see median).
#
#   benches/callgrind.sh            # N1=100 N2=1100 calls, RUNS=3
#   N1=200 N2=800 RUNS=5 benches/callgrind.sh
#   VARIANTS="0 2" benches/callgrind.sh   # bench variant numbers, 0 (bare) first
#   BIN=/tmp/overhead-old benches/callgrind.sh   # a bench binary built before
#
# Needs valgrind. Builds the bench with `cargo bench --no-run` (release profile).
set -euo pipefail
cd "$(dirname "$0")/.."
N1=${N1:-100}
N2=${N2:-1100}
RUNS=${RUNS:-3}
command -v valgrind >/dev/null || { echo "valgrind not found (apt-get install valgrind)"; exit 1; }
# BIN: a bench binary built before (say, of another commit, for a comparison).
bin=${BIN:-$(cargo bench --no-run --bench overhead --message-format=json 2>/dev/null \
  | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)}
[ -x "$bin" ] || { echo "bench binary not found"; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Instructions (Ir) of one run of variant $1 with $2 calls, run $3.
instructions() {
  HINTAUDIT_BENCH_PROFILE=$1 HINTAUDIT_BENCH_CALLS=$2 HINTAUDIT_BENCH_SAMPLE=0.1 \
    valgrind --tool=callgrind --callgrind-out-file="$out/cg.$1.$2.$3" "$bin" >/dev/null 2>"$out/log.$1.$2.$3" \
    || { echo "variant $1, $2 calls: the bench failed under valgrind:" >&2; tail -20 "$out/log.$1.$2.$3" >&2; exit 1; }
  awk '/^(summary|totals):/ {print $2; exit}' "$out/cg.$1.$2.$3"
}
# The median of RUNS runs of variant $1 with $2 calls, one after another: two valgrind runs
# side by side on two cores count about 13,000 instructions per call fewer than one alone
# (tokio's runtime parks and fires timers less often while it waits on sqlx's worker
# threads), so runs never overlap and the machine should be otherwise idle.
median() {
  local r
  for r in $(seq 1 "$RUNS"); do instructions "$1" "$2" "$r" > "$out/ir.$1.$2.$r"; done
  for r in $(seq 1 "$RUNS"); do [ -s "$out/ir.$1.$2.$r" ] || exit 1; done
  cat "$out"/ir."$1"."$2".* | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'
}
labels=([0]="bare server, plain sqlx pool" [2]="audited: layer + audited pool" \
        [3]="  part: the layer over the plain pool" [4]="  part: the audited pool, no layer" \
        [5]="audited + Prometheus recorder" [7]="audited + recorder + spans sampled 10%")
echo "${BIN:+binary $BIN, }commit $(git rev-parse --short HEAD); $(valgrind --version); calls $N1 and $N2, median of $RUNS runs"
printf '%-44s %14s %10s\n' "variant" "instr/call" "vs bare"
bare=""
for i in ${VARIANTS:-0 2 5 7}; do
  a=$(median "$i" "$N1"); b=$(median "$i" "$N2")
  per=$(( (b - a) / (N2 - N1) ))
  [ -z "$bare" ] && bare=$per
  printf '%-44s %14d %+9.1f%%\n' "${labels[$i]:-variant $i}" "$per" "$(echo "scale=4; ($per - $bare) * 100 / $bare" | bc)"
done
