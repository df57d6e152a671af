#!/usr/bin/env bash
# Memory of a long iolab run: VmRSS / VmHWM every 10 s.
#
# Requirement: RSS flat with run length, and under 64 MiB for 4 threads
# running for 10 minutes.
#
#   bash bench/memory.sh          # 600 s
#   bash bench/memory.sh 60       # a quick check
set -euo pipefail

secs=${1:-600}
interval=10
limit_kib=$((64 * 1024))

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

scratch=/tmp/iolab-bench-mem
pid=
cleanup() {
    if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then kill "$pid" 2>/dev/null || true; fi
    rm -rf "$scratch"
}
trap cleanup EXIT

cargo build --release -q -p iolab
iolab=$root/target/release/iolab
rm -rf "$scratch"
mkdir -p "$scratch/dir"

cmd=("$iolab" run --target "$scratch/dir" --size 256M --rw randrw --threads 4
     --runtime "${secs}s" --no-progress --no-store --output json)
echo "nproc:   $(nproc)"
echo "kernel:  $(uname -r)"
echo "command: ${cmd[*]}"
echo

"${cmd[@]}" >"$scratch/out.json" 2>"$scratch/err.txt" &
pid=$!

field() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status" 2>/dev/null || true; }

printf '%8s %12s %12s\n' t_s VmRSS_KiB VmHWM_KiB
max_rss=0 first_rss= last_rss= hwm=0 t=0
while kill -0 "$pid" 2>/dev/null; do
    rss=$(field VmRSS); h=$(field VmHWM)
    if [[ -n $rss && -n $h ]]; then
        printf '%8d %12d %12d\n' "$t" "$rss" "$h"
        (( rss > max_rss )) && max_rss=$rss
        (( h > hwm )) && hwm=$h
        # the first sample after start-up (t >= 10 s) is the baseline for "flat"
        if (( t >= interval )) && [[ -z $first_rss ]]; then first_rss=$rss; fi
        last_rss=$rss
    fi
    sleep "$interval"
    t=$((t + interval))
done
set +e
wait "$pid"; rc=$?
set -e
pid=

echo
echo "iolab exit status: $rc"
if (( rc != 0 )); then
    echo "stderr:"; cat "$scratch/err.txt"
fi
if command -v python3 >/dev/null && [[ -s $scratch/out.json ]]; then
    python3 - "$scratch/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = d["phases"][0]; t = p["total"]
print(f"status: {d.get('status')}  elapsed_s: {p['elapsed_s']:.1f}  "
      f"read IOPS: {t['read']['iops']:.0f}  write IOPS: {t['write']['iops']:.0f}")
PY
fi
echo "max VmRSS: $max_rss KiB ($((max_rss / 1024)) MiB)"
echo "max VmHWM: $hwm KiB ($((hwm / 1024)) MiB)"
if [[ -n $first_rss && -n $last_rss ]]; then
    echo "VmRSS at ${interval} s: $first_rss KiB; last sample: $last_rss KiB; growth: $((last_rss - first_rss)) KiB"
fi
if (( hwm < limit_kib )); then
    echo "PASS: peak RSS under 64 MiB"
else
    echo "FAIL: peak RSS $hwm KiB >= 64 MiB"
fi
