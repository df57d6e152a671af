#!/usr/bin/env bash
# Replay fidelity (issue 11's target): record seed 002's redo-log pattern (bench/trace/redo.c:
# THREADS threads, each O_DIRECT, ROUNDS × lseek + 32 KiB write + fsync) with
# `iolab trace record`, replay it on the same machine with each timing, and print per replay
# whether the operation counts are equal and the elapsed time against the recorded span.
#
#   bench/trace/fidelity.sh [DIR] [THREADS] [ROUNDS]     # default /var/tmp/iolab-fidelity 4 64; REPEAT=5
#   IOLAB=target/release/iolab bench/trace/fidelity.sh   # another build
#
# DIR's filesystem must accept O_DIRECT (tmpfs does not).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-/var/tmp/iolab-fidelity}
threads=${2:-4}
rounds=${3:-64}
iolab=${IOLAB:-target/debug/iolab}
[ -x "$iolab" ] || cargo build -q -p iolab
rm -rf "$dir"
mkdir -p "$dir/data" "$dir/replay"
cc -O2 -pthread -o "$dir/redo" bench/trace/redo.c
"$iolab" trace record -o "$dir/redo.trace" -- "$dir/redo" "$dir/data" "$threads" "$rounds"
"$iolab" trace show "$dir/redo.trace" --rate 50MB --latency 5ms | tail -1
# Prepare once (files created and marked as iolab's), then alternate: the untraced program,
# and a replay with each timing, REPEAT times; medians compared within this one run.
"$iolab" replay "$dir/redo.trace" --target "$dir/replay" --timing afap --prepare --no-store --output json >/dev/null
python3 - "$iolab" "$dir" "$threads" "$rounds" "${REPEAT:-5}" <<'PY'
import json, statistics, subprocess, sys, time
iolab, d, threads, rounds, repeat = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
prog, replays, rec, counts, split = [], {"think": [], "recorded": [], "afap": []}, None, {}, None
for _ in range(repeat):
    t = time.perf_counter()
    subprocess.run([f"{d}/redo", f"{d}/data", threads, rounds], check=True)
    prog.append(time.perf_counter() - t)
    for timing in replays:
        out = subprocess.run([iolab, "replay", f"{d}/redo.trace", "--target", f"{d}/replay", "--timing", timing,
                              "--no-store", "--output", "json"], check=True, capture_output=True).stdout
        f = json.loads(out)["fidelity"]
        replays[timing].append(f["replayed_s"])
        rec = f["recorded_s"]
        split = (f["recorded_calls_s"], f["recorded_gaps_s"], f["tracer_gap_ms"])
        counts[timing] = counts.get(timing, True) and f["counts_equal"] and f["results_equal"]
        cls = " ".join(f"{c['class']} {c['replayed_ops']}/{c['recorded_ops']}" for c in f["classes"])
med = statistics.median
print(f"untraced program: median {med(prog):.3f} s of {repeat} ({', '.join(f'{x:.3f}' for x in prog)})")
print(f"recorded span under strace: {rec:.3f} s; the busiest thread {split[0]:.3f} s in calls, {split[1]:.3f} s between them (smallest gap {split[2]:.3f} ms)")
print(f"replayed/recorded counts of the last replay: {cls}")
for timing, xs in replays.items():
    print(f"replay --timing {timing:8}: counts and results {'equal' if counts[timing] else 'DIFFER'} in all {repeat}; "
          f"median {med(xs):.3f} s ({', '.join(f'{x:.3f}' for x in xs)}); "
          f"vs untraced program {100 * (med(xs) / med(prog) - 1):+.1f}%, vs recorded span {100 * (med(xs) / rec - 1):+.1f}%")
PY
