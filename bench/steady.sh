#!/usr/bin/env bash
# What steady-state judging costs (issue 29): the same job with and without --steady-state,
# interleaved, each run SECS seconds. With it, a SNIA criterion that can never pass (range
# 0.001%) runs every round to the maximum, so both runs last as long and do the same I/O; and a
# fio criterion (iops_slope, ss_dur = SECS) judged every second. Reported: elapsed, iolab's CPU
# (user + system, from the process's rusage) and the phase's IOPS; medians of ROUNDS runs.
# The judge runs on the coordinating thread, so the IOPS ratio should be 1 within noise.
# `auto` is --ramp auto (the warm-up judge, also on the coordinating thread; its IOPS are those
# after the warm-up it found). Then what a pts-iops round costs beyond its cells: a 2 x 2 matrix
# of 1 s cells, 5 rounds (a rule that never passes), on a file under /var/tmp (O_DIRECT), its
# elapsed time against the cells' 20 s: the per-cell overhead (a phase's setup and teardown).
#
#   bash bench/steady.sh [target/release/iolab]
set -euo pipefail
bin=${1:-target/release/iolab}
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-5}
dir=/dev/shm/iolab-steady-bench
rm -rf "$dir"; mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
file=$dir/rr
"$bin" run --target "$file" --size 256M --rw randread --bs 4k --runtime 1s --no-store --no-progress --output json >/dev/null

one() { # ARGS... -> "elapsed cpu iops"
    python3 - "$bin" "$@" <<'EOF'
import json, resource, subprocess, sys, time
t = time.monotonic()
out = subprocess.run(sys.argv[1:] + ["--no-store", "--no-progress", "--output", "json"], capture_output=True, check=True).stdout
el = time.monotonic() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
p = json.loads(out)["phases"][0]
iops = p["total"]["read"]["ops"] / p["elapsed_s"]
print(f"{el:.3f} {ru.ru_utime + ru.ru_stime:.3f} {iops:.0f}")
EOF
}
median() { python3 -c "import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }

job=(run --target "$file" --size 256M --rw randread --bs 4k --engine psync)
declare -A cases=(
    [plain]="--runtime ${SECS}s"
    [snia]="--steady-state snia --round 1s --ss-max-rounds $SECS --ss-window 2 --ss-range 0.001"
    [fio]="--runtime ${SECS}s --steady-state iops_slope:0.0000001% --ss-dur ${SECS}s"
    [auto]="--runtime ${SECS}s --ramp auto"
)
declare -A el cpu iops
for c in plain snia fio auto; do el[$c]=""; cpu[$c]=""; iops[$c]=""; done
for ((r = 1; r <= ROUNDS; r++)); do
    for c in plain snia fio auto; do
        # shellcheck disable=SC2086
        read -r e u i <<<"$(one "${job[@]}" ${cases[$c]})"
        el[$c]+=" $e"; cpu[$c]+=" $u"; iops[$c]+=" $i"
    done
done
printf "%-6s %10s %10s %12s %10s\n" case elapsed_s cpu_s iops iops/plain
base=$(median ${iops[plain]})
for c in plain snia fio auto; do
    # shellcheck disable=SC2086
    mi=$(median ${iops[$c]})
    # shellcheck disable=SC2086
    printf "%-6s %10.3f %10.3f %12.0f %10.3f\n" "$c" "$(median ${el[$c]})" "$(median ${cpu[$c]})" "$mi" "$(python3 -c "print($mi/$base)")"
done

# pts-iops: the rounds' cost beyond their cells.
pdir=$(mktemp -d -p /var/tmp iolab-pts-bench.XXXXXX)
trap 'rm -rf "$dir" "$pdir"' EXIT
pts=()
for ((r = 1; r <= ROUNDS; r++)); do
    t0=$(date +%s.%N)
    "$bin" scenario pts-iops --target "$pdir/pts.dat" --size 64M --no-precondition --pts-bs 4k,64k --pts-mixes 100,0 \
        --runtime 1s --ss-max-rounds 5 --ss-range 0.001 --threads 1 --iodepth 4 --no-store --no-progress --output json >/dev/null
    pts+=("$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$t0" "$(date +%s.%N)")")
done
# shellcheck disable=SC2086
pe=$(median ${pts[*]})
printf "pts-iops 5 rounds x 4 cells of 1 s: %.3f s, %.3f s a cell beyond its second\n" "$pe" "$(python3 -c "print(($pe - 20) / 20)")"
