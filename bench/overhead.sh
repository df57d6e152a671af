#!/usr/bin/env bash
# iolab's overhead against the least a program can do (bench/floor), fio and dd.
#
#   a. psync 4 KiB random reads, 1 thread, 1 GiB file in page cache (/dev/shm):
#      iolab IOPS >= 90% of iolab-floor
#   b. psync 4 KiB writes to /dev/null: iolab IOPS >= 85% of iolab-floor
#   c. io_uring QD32 4 KiB random reads, same file: iolab IOPS >= fio
#   d. sequential 1 MiB O_DIRECT writes of 2 GiB to ext4 (/tmp): iolab MB/s within 3%
#      of dd oflag=direct and of fio
#
# The runs of each case are interleaved (floor, iolab, floor, iolab, ...) and the medians
# compared. A missed target prints FAIL but does not fail the script: the numbers are the
# point. The exit status is non-zero only when something could not be run.
#
#   bash bench/overhead.sh
#   ROUNDS=3 SECS=3 SEQ_ROUNDS=1 bash bench/overhead.sh     # a quicker look
set -euo pipefail

ROUNDS=${ROUNDS:-5}          # rounds of cases a-c
SECS=${SECS:-5}              # seconds per run in cases a-c
SEQ_ROUNDS=${SEQ_ROUNDS:-7}  # rounds of case d (the disk is the noisiest part)

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

shm=/dev/shm/iolab-bench
tmp=/tmp/iolab-bench
cleanup() { rm -rf "$shm" "$tmp"; }
trap cleanup EXIT

die() { echo "overhead.sh: $*" >&2; exit 1; }
command -v python3 >/dev/null || die "python3 is needed to read JSON output"

cargo build --release -q -p iolab -p iolab-floor
iolab=$root/target/release/iolab
floor=$root/target/release/iolab-floor

have_fio=yes
if ! command -v fio >/dev/null; then
    have_fio="no: fio is not installed; the fio comparisons are skipped"
fi

rm -rf "$shm" "$tmp"
mkdir -p "$shm" "$tmp"
# Cases a and b also run each command under GNU time, for a second view that is less
# sensitive to other load on the machine: operations per CPU-second of the whole process
# (user + system, start-up included; iolab's start-up is a few ms of a 5 s run).
timed=()
have_time=yes
if [[ -x /usr/bin/time ]] && /usr/bin/time -f '%U' -o /dev/null true 2>/dev/null; then
    timed=(/usr/bin/time -f '%U %S' -o "$tmp/time.txt")
else
    have_time="no: GNU time (/usr/bin/time) is not installed; the per-CPU-second view is skipped"
fi
[[ $(stat -f -c %T "$shm") == tmpfs ]] || echo "note: $shm is not tmpfs"
echo "== machine"
echo "nproc:  $(nproc)"
echo "kernel: $(uname -r)"
echo "cpu:    $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "/tmp:   $(findmnt -n -o SOURCE,FSTYPE,OPTIONS -T /tmp 2>/dev/null || echo '?')"
echo "iolab:  $("$iolab" --version 2>/dev/null || echo '?'), built from $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- crates Cargo.toml Cargo.lock 2>/dev/null || echo ' + uncommitted changes in crates/')"
echo "fio:    $([[ $have_fio == yes ]] && fio --version || echo "$have_fio")"
echo "dd:     $(dd --version | head -1)"
[[ $have_time == yes ]] || echo "time:   $have_time"
echo "rounds: $ROUNDS x ${SECS}s (a-c), $SEQ_ROUNDS (d)"
echo "load:   $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) at start"
t_start=$SECONDS
echo

# --- helpers ---------------------------------------------------------------------------

# json FILE EXPR: evaluate a Python expression over the JSON document `d` in FILE (fio may
# print warnings before its JSON, so parsing starts at the first '{').
json() {
    python3 - "$1" "$2" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
d = json.loads(text[text.index('{'):])
print(eval(sys.argv[2]))
PY
}

median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
fmt() { awk -v v="$1" 'BEGIN { printf "%.0f", v }'; }

declare -A shown
# show NAME CMD...: print a command the first time a case runs it
show() {
    local name=$1; shift
    if [[ -z ${shown[$name]:-} ]]; then
        shown[$name]=1
        printf '  $ %s\n' "$(printf '%q ' "$@")"
    fi
}

out=$tmp/out.json
err=$tmp/err.txt

# iolab_run METRIC-EXPR ARGS...: run iolab with JSON output, print the metric. --no-store
# keeps benchmark runs out of the user's results database (no measurable effect on case b:
# 3 pairs of 3 s, 2.67-2.76 M IOPS stored against 2.48-2.75 M not stored).
iolab_run() {
    local expr=$1; shift
    if ! "${timed[@]}" "$iolab" run "$@" --output json --no-progress --no-store >"$out" 2>"$err"; then
        cat "$err" >&2; die "iolab run $* failed"
    fi
    local status
    status=$(json "$out" 'd["status"]')
    [[ $status == complete ]] || { cat "$err" >&2; die "iolab run $*: status $status"; }
    json "$out" "$expr"
}

floor_run() {
    local line
    line=$("${timed[@]}" "$floor" "$@") || die "iolab-floor $* failed"
    sed -n 's/.*ops=\([0-9]*\) .*ops_per_s=\([0-9.]*\).*/\2 \1/p' <<<"$line"
}

# per_cpu OPS: OPS divided by the CPU seconds of the last timed command
per_cpu() { awk -v ops="$1" '{ c = $1 + $2 } END { if (c > 0) printf "%.0f", ops / c; else print "nan" }' "$tmp/time.txt"; }

fio_run() {
    local expr=$1; shift
    fio "$@" --output-format=json >"$out" 2>"$err" || { cat "$err" >&2; die "fio $* failed"; }
    json "$out" "$expr"
}

declare -a rows=()
# row CASE METRIC A-NAME A B-NAME B TARGET-KIND TARGET
#   TARGET-KIND min: pass when A/B >= TARGET; within: pass when |A/B - 1| <= TARGET
row() {
    local r pass
    r=$(ratio "$4" "$6")
    case $7 in
        min) pass=$(awk -v r="$r" -v t="$8" 'BEGIN { print (r >= t) ? "PASS" : "FAIL" }')
             tgt=">= $(awk -v t="$8" 'BEGIN { printf "%.2f", t }')" ;;
        within) pass=$(awk -v r="$r" -v t="$8" 'BEGIN { d = r - 1; if (d < 0) d = -d; print (d <= t) ? "PASS" : "FAIL" }')
             tgt="1 ± $8" ;;
        info) pass="(no target)" tgt="-" ;;
    esac
    rows+=("$(printf '%-3s %-9s %-7s %12s %-7s %12s %7s %-10s %s' "$1" "$2" "$3" "$(fmt "$4")" "$5" "$(fmt "$6")" "$r" "$tgt" "$pass")")
}

# --- the page-cache file ---------------------------------------------------------------

file=$shm/rr
echo "== setup: lay out a 1 GiB file on tmpfs (iolab's own, reused by every tool)"
show setup "$iolab" run --target "$file" --size 1G --rw randread --bs 4k --runtime 1s --engine psync --output json --no-progress --no-store
iolab_run 'd["status"]' --target "$file" --size 1G --rw randread --bs 4k --runtime 1s --engine psync >/dev/null
echo

# --- a. psync random reads -------------------------------------------------------------

echo "== a. 4 KiB random reads, psync, 1 thread, $file (IOPS)"
show a-floor "$floor" pread "$file" "$SECS"
show a-iolab "$iolab" run --target "$file" --size 1G --rw randread --bs 4k --runtime "${SECS}s" --engine psync --output json --no-progress --no-store
a_floor=() a_iolab=() a_floor_cpu=() a_iolab_cpu=()
for ((r = 1; r <= ROUNDS; r++)); do
    res=$(floor_run pread "$file" "$SECS"); read -r f fops <<<"$res"
    [[ $have_time == yes ]] && a_floor_cpu+=("$(per_cpu "$fops")")
    res=$(iolab_run '"%r %d" % (d["phases"][0]["total"]["read"]["iops"], d["phases"][0]["total"]["read"]["ops"])' --target "$file" --size 1G --rw randread --bs 4k --runtime "${SECS}s" --engine psync); read -r i iops_n <<<"$res"
    [[ $have_time == yes ]] && a_iolab_cpu+=("$(per_cpu "$iops_n")")
    a_floor+=("$f") a_iolab+=("$i")
    echo "  round $r: floor $(fmt "$f")  iolab $(fmt "$i")  ($(ratio "$i" "$f"))$([[ $have_time == yes ]] && echo "   per CPU-s: floor ${a_floor_cpu[-1]}  iolab ${a_iolab_cpu[-1]}  ($(ratio "${a_iolab_cpu[-1]}" "${a_floor_cpu[-1]}"))")"
done
row a "IOPS" iolab "$(median "${a_iolab[@]}")" floor "$(median "${a_floor[@]}")" min 0.90
[[ $have_time == yes ]] && row a "ops/CPU-s" iolab "$(median "${a_iolab_cpu[@]}")" floor "$(median "${a_floor_cpu[@]}")" info
echo

# --- b. writes to /dev/null ------------------------------------------------------------

echo "== b. 4 KiB writes to /dev/null, psync (IOPS)"
show b-floor "$floor" pwrite /dev/null "$SECS"
show b-iolab "$iolab" run --target /dev/null --device --size 1G --rw randwrite --bs 4k --runtime "${SECS}s" --engine psync --output json --no-progress --no-store
b_floor=() b_iolab=() b_floor_cpu=() b_iolab_cpu=()
for ((r = 1; r <= ROUNDS; r++)); do
    res=$(floor_run pwrite /dev/null "$SECS"); read -r f fops <<<"$res"
    [[ $have_time == yes ]] && b_floor_cpu+=("$(per_cpu "$fops")")
    res=$(iolab_run '"%r %d" % (d["phases"][0]["total"]["write"]["iops"], d["phases"][0]["total"]["write"]["ops"])' --target /dev/null --device --size 1G --rw randwrite --bs 4k --runtime "${SECS}s" --engine psync); read -r i iops_n <<<"$res"
    [[ $have_time == yes ]] && b_iolab_cpu+=("$(per_cpu "$iops_n")")
    b_floor+=("$f") b_iolab+=("$i")
    echo "  round $r: floor $(fmt "$f")  iolab $(fmt "$i")  ($(ratio "$i" "$f"))$([[ $have_time == yes ]] && echo "   per CPU-s: floor ${b_floor_cpu[-1]}  iolab ${b_iolab_cpu[-1]}  ($(ratio "${b_iolab_cpu[-1]}" "${b_floor_cpu[-1]}"))")"
done
row b "IOPS" iolab "$(median "${b_iolab[@]}")" floor "$(median "${b_floor[@]}")" min 0.85
[[ $have_time == yes ]] && row b "ops/CPU-s" iolab "$(median "${b_iolab_cpu[@]}")" floor "$(median "${b_floor_cpu[@]}")" info
echo

# --- c. io_uring QD32 against fio ------------------------------------------------------

echo "== c. 4 KiB random reads, io_uring, iodepth 32, 1 thread, $file (IOPS)"
if [[ $have_fio == yes ]]; then
    fio_c=(fio --name=x "--filename=$file" --rw=randread --bs=4k --ioengine=io_uring --iodepth=32 --time_based "--runtime=$SECS")
    show c-fio "${fio_c[@]}" --output-format=json
    show c-iolab "$iolab" run --target "$file" --size 1G --rw randread --bs 4k --runtime "${SECS}s" --engine io_uring --iodepth 32 --output json --no-progress --no-store
    c_fio=() c_iolab=()
    for ((r = 1; r <= ROUNDS; r++)); do
        f=$(fio_run 'd["jobs"][0]["read"]["iops"]' "${fio_c[@]:1}")
        i=$(iolab_run 'd["phases"][0]["total"]["read"]["iops"]' --target "$file" --size 1G --rw randread --bs 4k --runtime "${SECS}s" --engine io_uring --iodepth 32)
        c_fio+=("$f") c_iolab+=("$i")
        echo "  round $r: fio $(fmt "$f")  iolab $(fmt "$i")  ($(ratio "$i" "$f"))"
    done
    row c "IOPS" iolab "$(median "${c_iolab[@]}")" fio "$(median "${c_fio[@]}")" min 1.00
else
    echo "  skipped: $have_fio"
fi
echo

# --- d. sequential direct writes against dd and fio ------------------------------------

echo "== d. sequential 1 MiB O_DIRECT writes, 2 GiB, $tmp (MB/s = bytes / seconds / 1e6)"
# Every run writes a new file: each is removed (and the removal synced, as /tmp may be
# mounted with discard) before the next run, so no tool overwrites allocated blocks.
fresh() { rm -f "$tmp"/seq.*; sync; }
dd_c=(dd if=/dev/zero "of=$tmp/seq.dd" bs=1M count=2048 oflag=direct)
fio_d=(fio --name=seq "--filename=$tmp/seq.fio" --rw=write --bs=1M --direct=1 --size=2g --ioengine=psync --fallocate=none)
show d-iolab "$iolab" run --target "$tmp/seq.iolab" --size 2G --rw write --bs 1M --direct --output json --no-progress --no-store
show d-dd "${dd_c[@]}"
[[ $have_fio == yes ]] && show d-fio "${fio_d[@]}" --output-format=json
d_iolab=() d_dd=() d_fio=()
run_iolab() {
    i=$(iolab_run 'd["phases"][0]["total"]["write"]["bw_bytes"] / 1e6' --target "$tmp/seq.iolab" --size 2G --rw write --bs 1M --direct)
    d_iolab+=("$i"); line+="  iolab $(fmt "$i")"
}
run_dd() {
    LC_ALL=C "${dd_c[@]}" 2>"$err" || { cat "$err" >&2; die "dd failed"; }
    # "2147483648 bytes (2.1 GB, 2.0 GiB) copied, 3.51 s, 612 MB/s": bytes / seconds
    local v
    v=$(awk '/bytes .* copied/ { for (k = 1; k <= NF; k++) if ($k ~ /^s,?$/) s = $(k - 1); printf "%.3f", $1 / s / 1e6 }' "$err")
    [[ -n $v ]] || { cat "$err" >&2; die "could not read dd's summary"; }
    d_dd+=("$v"); line+="  dd $(fmt "$v")"
}
run_fio() {
    local v
    v=$(fio_run 'd["jobs"][0]["write"]["io_bytes"] / (d["jobs"][0]["write"]["runtime"] / 1000) / 1e6' "${fio_d[@]:1}")
    d_fio+=("$v"); line+="  fio $(fmt "$v")"
}
tools=(iolab dd)
[[ $have_fio == yes ]] && tools+=(fio)
for ((r = 1; r <= SEQ_ROUNDS; r++)); do
    # rotate the order every round, so no tool always runs first or after the same one
    line="  round $r:"
    for ((k = 0; k < ${#tools[@]}; k++)); do
        fresh
        "run_${tools[(r - 1 + k) % ${#tools[@]}]}"
    done
    echo "$line"
done
fresh
row d "MB/s" iolab "$(median "${d_iolab[@]}")" dd "$(median "${d_dd[@]}")" within 0.03
if [[ $have_fio == yes ]]; then
    row d "MB/s" iolab "$(median "${d_iolab[@]}")" fio "$(median "${d_fio[@]}")" within 0.03
else
    echo "  fio skipped: $have_fio"
fi
echo

# --- summary ---------------------------------------------------------------------------

echo "== medians (load $(cut -d' ' -f1-3 /proc/loadavg) at the end; $((SECONDS - t_start)) s of runs)"
printf '%-3s %-9s %-7s %12s %-7s %12s %7s %-10s %s\n' case metric tool median peer median ratio target result
printf '%s\n' "${rows[@]}"
