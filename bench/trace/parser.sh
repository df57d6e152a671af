#!/usr/bin/env bash
# The strace parser's throughput on one core and its memory bound (issue 11's target: at least
# 100 MB/s of strace text, memory that does not grow with the text). Generates SIZE_MB of
# synthetic `strace -f -ttt -T -y` text (bench/trace/gen_strace.py) of each KIND — redo: 8 threads
# of seed 002's redo-log pattern with unfinished/resumed pairs and other calls; fork: a
# fork-heavy program, hundreds of thousands of short-lived processes each writing a file and
# exiting — imports it (release build) into a trace written to nowhere, and prints the
# wall-clock and CPU-time rates and the peak resident memory. CPU time is the figure to judge by
# on a shared machine: MB per CPU-second is MB/s on one core.
#
#   bench/trace/parser.sh [SIZE_MB] [KIND...]     # default 500 redo fork
set -euo pipefail
cd "$(dirname "$0")/../.."
size=${1:-500}
shift || true
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(redo fork)
tmp=$(mktemp -d /var/tmp/iolab-parser.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cargo build -q --release -p iolab-trace --example import_bench
for kind in "${kinds[@]}"; do
  python3 bench/trace/gen_strace.py "$tmp/big.strace" "$size" "$kind"
  for run in 1 2 3; do
    echo "$kind run $run: $(target/release/examples/import_bench "$tmp/big.strace")"
  done
  rm -f "$tmp/big.strace"
done
