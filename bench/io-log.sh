#!/usr/bin/env bash
# What fio's per-I/O logs cost (--log-avg-msec 0): the same job without logs, with the latency
# log (offset and priority columns), and with all three logs, interleaved, medians of ROUNDS runs
# of SECS seconds, on the overhead cases that measure iolab's own per-operation cost:
#   a. psync 4 KiB random reads from a file in page cache (/dev/shm)
#   c. io_uring QD32 4 KiB random reads, same file
# The logs are written to /dev/shm too (a disk would measure the disk). Each logged run's lines
# are counted against its I/Os; "lost" is what the writer fell behind on (iolab says it).
# Besides IOPS, the CPU time the whole process spent per I/O (user + system, the writer thread's
# included; /usr/bin/time), which other work on a loaded machine moves less than IOPS.
# The loop without logs is the one compiled with worker::Unobserved: compare it with an older
# build with bench/ab.sh.
#
#   bash bench/io-log.sh
#   ROUNDS=3 SECS=3 bash bench/io-log.sh
set -euo pipefail
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-5}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
[[ -n ${IOLAB:-} ]] || cargo build --release -q -p iolab
iolab=${IOLAB:-$root/target/release/iolab}
dir=/dev/shm/iolab-io-log
rm -rf "$dir"; mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
file=$dir/rr
"$iolab" run --target "$file" --size 1G --rw randread --bs 4k --runtime 1s --no-store --no-progress --output json >/dev/null

median() { python3 -c "import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
# run MODE ARGS... -> "IOPS LINES LOST OPS CPU_NS_PER_IO" (LINES, LOST: of the latency log)
run() {
    local mode=$1; shift
    local logs=() out
    rm -f "$dir"/l_* 
    case $mode in
        off) ;;
        lat) logs=(--write-lat-log "$dir/l" --log-avg-msec 0 --log-offset --log-prio) ;;
        all) logs=(--write-lat-log "$dir/l" --write-bw-log "$dir/l" --write-iops-log "$dir/l" --log-avg-msec 0 --log-offset) ;;
    esac
    out=$(/usr/bin/time -f "%U %S" -o "$dir/cpu" "$iolab" run "$@" "${logs[@]}" --runtime "${SECS}s" --no-store --no-progress --output json 2>"$dir/err")
    local iops ops lines lost cpu
    iops=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['phases'][0]['total']['read']['iops'])" "$out")
    ops=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['phases'][0]['total']['read']['ops'])" "$out")
    if [[ $mode == off ]]; then lines=$ops; lost=0
    else
        lines=$(wc -l <"$dir/l_lat.1.log")
        lost=$(grep -o '[0-9]* I/Os not logged' "$dir/err" | cut -d' ' -f1 || true)
        lost=${lost:-0}
    fi
    cpu=$(python3 -c "import sys; u,s=open(sys.argv[1]).read().split()[:2]; print(round((float(u)+float(s))*1e9/int(sys.argv[2])))" "$dir/cpu" "$ops")
    echo "$iops $lines $lost $ops $cpu"
}

declare -A cases=(
    [a]="--target $file --size 1G --rw randread --bs 4k --engine psync"
    [c]="--target $file --size 1G --rw randread --bs 4k --engine io_uring --iodepth 32"
)
uptime
printf "%-4s %10s %10s %10s %8s %8s | %-22s %8s %8s\n" case off lat all lat/off all/off "CPU ns/IO off lat all" lat/off all/off
checks=""
for c in a c; do
    off=(); lat=(); all=(); coff=(); clat=(); call=()
    for ((r = 1; r <= ROUNDS; r++)); do
        for m in off lat all; do
            # shellcheck disable=SC2086
            read -r iops lines lost ops cpu <<<"$(run $m ${cases[$c]})"
            case $m in
                off) off+=("$iops"); coff+=("$cpu") ;;
                lat) lat+=("$iops"); clat+=("$cpu"); checks+=" $c:lat $lines/$ops lost $lost;" ;;
                all) all+=("$iops"); call+=("$cpu"); checks+=" $c:all $lines/$ops lost $lost;" ;;
            esac
        done
    done
    mo=$(median "${off[@]}"); ml=$(median "${lat[@]}"); ma=$(median "${all[@]}")
    co=$(median "${coff[@]}"); cl=$(median "${clat[@]}"); ca=$(median "${call[@]}")
    printf "%-4s %10.0f %10.0f %10.0f %8.3f %8.3f | %6.0f %6.0f %6.0f %9s %8.3f %8.3f\n" "$c" "$mo" "$ml" "$ma" \
        "$(python3 -c "print($ml/$mo)")" "$(python3 -c "print($ma/$mo)")" "$co" "$cl" "$ca" "" \
        "$(python3 -c "print($cl/$co)")" "$(python3 -c "print($ca/$co)")"
done
echo "latency-log lines against I/Os, and I/Os not logged:$checks"
uptime
