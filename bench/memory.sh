#!/usr/bin/env bash
# Memory of a long iolab run: VmRSS / VmHWM sampled while it runs.
#
#   bash bench/memory.sh              # 600 s, 4 threads randrw, --no-store: flat and < 64 MiB
#   bash bench/memory.sh 60           # a quick check of the same
#   bash bench/memory.sh stream       # issue 8's case: 70 s, --sample-interval 10ms (7,000
#                                     # samples), the store on; RSS may grow at most 1 MiB
#                                     # after the first 15 s
set -euo pipefail

mode=soak
secs=${1:-600}
if [[ $secs == stream ]]; then
    mode=stream
    secs=70
fi

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

if [[ $mode == stream ]]; then
    # Seconds and samples go to the database as they are taken; nothing of them stays in memory.
    interval=5 baseline_t=15 limit_growth_kib=1024
    cmd=("$iolab" run --target "$scratch/dir" --size 64M --rw randrw --threads 2
         --runtime "${secs}s" --sample-interval 10ms --db "$scratch/results.db"
         --no-progress --output json)
else
    interval=10 baseline_t=10 limit_growth_kib=
    cmd=("$iolab" run --target "$scratch/dir" --size 256M --rw randrw --threads 4
         --runtime "${secs}s" --no-progress --no-store --output json)
fi
limit_kib=$((64 * 1024))
echo "nproc:   $(nproc)"
echo "kernel:  $(uname -r)"
echo "command: ${cmd[*]}"
echo

"${cmd[@]}" >"$scratch/out.json" 2>"$scratch/err.txt" &
pid=$!

field() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status" 2>/dev/null || true; }

printf '%8s %12s %12s\n' t_s VmRSS_KiB VmHWM_KiB
max_rss=0 first_rss= last_rss= hwm=0 t=0
start=$(date +%s.%N)
while kill -0 "$pid" 2>/dev/null; do
    rss=$(field VmRSS); h=$(field VmHWM)
    if [[ -n $rss && -n $h ]]; then
        printf '%8d %12d %12d\n' "$t" "$rss" "$h"
        (( h > hwm )) && hwm=$h
        # The measured window: from the baseline (after start-up and layout) to the run's last
        # second; what the process does after (reading its results back to print them) is not
        # the run's growth, and shows in VmHWM.
        if (( t <= secs )); then
            (( rss > max_rss )) && max_rss=$rss
            if (( t >= baseline_t )) && [[ -z $first_rss ]]; then first_rss=$rss; fi
            last_rss=$rss
        fi
    fi
    # Sample on the interval's grid, however long reading /proc took.
    t=$((t + interval))
    sleep "$(awk -v s="$start" -v t="$t" -v now="$(date +%s.%N)" 'BEGIN { d = s + t - now; print (d > 0 ? d : 0) }')"
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
samples = len((p.get("system") or {}).get("samples") or [])
print(f"status: {d.get('status')}  elapsed_s: {p['elapsed_s']:.1f}  "
      f"read IOPS: {t['read']['iops']:.0f}  write IOPS: {t['write']['iops']:.0f}  "
      f"seconds: {len(p['timeline'])}  system samples: {samples}")
PY
fi
echo "max VmRSS during the run: $max_rss KiB ($((max_rss / 1024)) MiB)"
echo "max VmHWM: $hwm KiB ($((hwm / 1024)) MiB)"
status=0
if [[ -n $first_rss && -n $last_rss ]]; then
    growth=$((last_rss - first_rss))
    echo "VmRSS at ${baseline_t} s: $first_rss KiB; at the run's end: $last_rss KiB; growth: $growth KiB"
    if [[ -n $limit_growth_kib ]]; then
        if (( growth <= limit_growth_kib )); then
            echo "PASS: RSS grew $growth KiB after ${baseline_t} s (limit $limit_growth_kib KiB)"
        else
            echo "FAIL: RSS grew $growth KiB after ${baseline_t} s (limit $limit_growth_kib KiB)"; status=1
        fi
    fi
fi
if (( hwm < limit_kib )); then
    echo "PASS: peak RSS under 64 MiB"
else
    echo "FAIL: peak RSS $hwm KiB >= 64 MiB"; status=1
fi
exit $status
