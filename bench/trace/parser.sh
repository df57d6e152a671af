#!/usr/bin/env bash
# The strace parser's throughput on one core and its memory bound (issue 11's target: at least
# 100 MB/s of strace text, memory that does not grow with the text). Generates SIZE_MB of
# `strace -f -ttt -T -y` text (bench/trace/gen_strace.py: 8 threads of seed 002's redo-log
# pattern, unfinished/resumed pairs, other calls), imports it into a trace written to nowhere,
# and prints the wall-clock and CPU-time rates and the peak resident memory. CPU time is the
# figure to judge by on a shared machine: MB per CPU-second is MB/s on one core.
#
#   bench/trace/parser.sh [SIZE_MB]     # default 500
set -euo pipefail
cd "$(dirname "$0")/../.."
size=${1:-500}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 bench/trace/gen_strace.py "$tmp/big.strace" "$size"
cargo build -q --release -p iolab-trace --example import_bench
for run in 1 2 3; do
  echo "run $run: $(target/release/examples/import_bench "$tmp/big.strace")"
done
