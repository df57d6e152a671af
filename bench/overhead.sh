#!/usr/bin/env bash
# iolab's overhead against the least a program can do (bench/floor in Rust and in C), fio and dd.
#
#   a. psync 4 KiB random reads, 1 thread, 1 GiB file in page cache (/dev/shm):
#      iolab IOPS >= 95% of the C loop (bench/floor/c/floor.c)
#   b. psync 4 KiB writes to /dev/null: iolab IOPS >= 90% of the C loop
#      (a and b also run the C loop with the least per-operation timing, for comparison)
#   c. io_uring QD32 4 KiB random reads, same file: iolab IOPS >= 1.2 x fio
#   d. sequential 1 MiB O_DIRECT writes of 2 GiB to ext4 (/tmp): iolab MB/s within 3%
#      of dd oflag=direct and of fio
#   e. the same on ext4 on a loop device backed by a tmpfs file (RAM speed, a device that holds
#      still; needs root, losetup and mkfs.ext4): iolab, iolab --refill-buffers, dd, fio and fio
#      without its per-write buffer scrambling, with each tool's own CPU time per write
#      (docs/fidelity.md, "Sequential O_DIRECT", explains the differences)
#
# The runs of each case are interleaved (floor, iolab, floor, iolab, ...) and the medians
# compared. A missed target prints FAIL but does not fail the script: the numbers are the
# point. The exit status is non-zero only when something could not be run.
#
#   bash bench/overhead.sh
#   ROUNDS=3 SECS=3 SEQ_ROUNDS=1 bash bench/overhead.sh     # a quicker look
#   CASES=e bash bench/overhead.sh                           # only some cases (letters a-e)
#   RT=1 bash bench/overhead.sh                              # cases a-c at real-time priority
#   IOLAB=/tmp/old/iolab bash bench/overhead.sh              # another build of iolab (before/after)
set -euo pipefail

ROUNDS=${ROUNDS:-5}          # rounds of cases a-c
SECS=${SECS:-5}              # seconds per run in cases a-c
SEQ_ROUNDS=${SEQ_ROUNDS:-7}  # rounds of cases d and e (the disk is the noisiest part)
CASES=${CASES:-abcde}        # which cases to run

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

shm=/dev/shm/iolab-bench
tmp=/tmp/iolab-bench
ram_mnt=
ram_dev=
cleanup() {
    if [[ -n $ram_mnt ]]; then umount "$ram_mnt" 2>/dev/null || true; rmdir "$ram_mnt" 2>/dev/null || true; fi
    if [[ -n $ram_dev ]]; then losetup -d "$ram_dev" 2>/dev/null || true; fi
    rm -rf "$shm" "$tmp"
}
trap cleanup EXIT

die() { echo "overhead.sh: $*" >&2; exit 1; }
command -v python3 >/dev/null || die "python3 is needed to read JSON output"

cargo build --release -q -p iolab -p iolab-floor
iolab=${IOLAB:-$root/target/release/iolab}
floor=$root/target/release/iolab-floor
floor_c=$root/target/release/iolab-floor-c
command -v cc >/dev/null || die "a C compiler (cc) is needed for the C floor loop"
cc -O2 -o "$floor_c" "$root/bench/floor/c/floor.c" || die "could not compile bench/floor/c/floor.c"
seqdirect=$root/target/release/iolab-seqdirect
cc -O2 -o "$seqdirect" "$root/bench/floor/c/seqdirect.c" || die "could not compile bench/floor/c/seqdirect.c"
want() { [[ $CASES == *$1* ]]; }

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
# RT=1: run every measured command of cases a-c at real-time priority (chrt -f 50), so other
# work on a shared machine (a compiler) does not take the CPU in the middle of a run. The kernel
# still keeps 5% of each second for everything else (sched_rt_runtime_us).
rt=()
if [[ ${RT:-0} == 1 ]]; then
    if [[ $(id -u) == 0 ]] && command -v chrt >/dev/null; then rt=(chrt -f 50); else die "RT=1 needs root and chrt"; fi
fi
timed=("${rt[@]}" "${timed[@]}")
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
echo "rounds: $ROUNDS x ${SECS}s (a-c), $SEQ_ROUNDS (d, e); cases $CASES$([[ ${#rt[@]} -gt 0 ]] && echo "; a-c under ${rt[*]}")"
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

floor_run_with() {
    local bin=$1 line; shift
    line=$("${timed[@]}" "$bin" "$@") || die "$bin $* failed"
    sed -n 's/.*ops=\([0-9]*\) .*ops_per_s=\([0-9.]*\).*/\2 \1/p' <<<"$line"
}

# per_cpu OPS: OPS divided by the CPU seconds of the last timed command
per_cpu() { awk -v ops="$1" '{ c = $1 + $2 } END { if (c > 0) printf "%.0f", ops / c; else print "nan" }' "$tmp/time.txt"; }

fio_run() {
    local expr=$1; shift
    "${rt[@]}" fio "$@" --output-format=json >"$out" 2>"$err" || { cat "$err" >&2; die "fio $* failed"; }
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

# three_way CASE MODE TARGET-PATH METRIC-EXPR TARGET IOLAB-ARGS...: interleave the C floor, the
# C floor that also times every operation (MODE-timed: one TSC read and one histogram increment
# per operation, the least a per-I/O latency costs), the Rust floor and iolab; compare iolab's
# median with the C loop's (the target) and, for information, with the others.
three_way() {
    local c=$1 mode=$2 path=$3 expr=$4 target=$5; shift 5
    show "$c-floor-c" "$floor_c" "$mode" "$path" "$SECS"
    show "$c-floor-c-timed" "$floor_c" "$mode-timed" "$path" "$SECS"
    show "$c-floor" "$floor" "$mode" "$path" "$SECS"
    show "$c-iolab" "$iolab" run "$@" --runtime "${SECS}s" --engine psync --output json --no-progress --no-store
    local fc=() ft=() fr=() io=() fc_cpu=() io_cpu=() res f h g i fops hops gops iops_n
    for ((r = 1; r <= ROUNDS; r++)); do
        res=$(floor_run_with "$floor_c" "$mode" "$path" "$SECS"); read -r f fops <<<"$res"
        [[ $have_time == yes ]] && fc_cpu+=("$(per_cpu "$fops")")
        res=$(floor_run_with "$floor_c" "$mode-timed" "$path" "$SECS"); read -r h hops <<<"$res"
        res=$(floor_run_with "$floor" "$mode" "$path" "$SECS"); read -r g gops <<<"$res"
        res=$(iolab_run "$expr" "$@" --runtime "${SECS}s" --engine psync); read -r i iops_n <<<"$res"
        [[ $have_time == yes ]] && io_cpu+=("$(per_cpu "$iops_n")")
        fc+=("$f") ft+=("$h") fr+=("$g") io+=("$i")
        echo "  round $r: C $(fmt "$f")  C timed $(fmt "$h")  Rust floor $(fmt "$g")  iolab $(fmt "$i")  (of C $(ratio "$i" "$f"), of C timed $(ratio "$i" "$h"))$([[ $have_time == yes ]] && echo "   per CPU-s: C ${fc_cpu[-1]}  iolab ${io_cpu[-1]}")"
    done
    row "$c" "IOPS" iolab "$(median "${io[@]}")" C "$(median "${fc[@]}")" min "$target"
    row "$c" "IOPS" iolab "$(median "${io[@]}")" C-timed "$(median "${ft[@]}")" info
    row "$c" "IOPS" C-timed "$(median "${ft[@]}")" C "$(median "${fc[@]}")" info
    row "$c" "IOPS" iolab "$(median "${io[@]}")" floor "$(median "${fr[@]}")" info
    [[ $have_time == yes ]] && row "$c" "ops/CPU-s" iolab "$(median "${io_cpu[@]}")" C "$(median "${fc_cpu[@]}")" info
}

if want a; then
    echo "== a. 4 KiB random reads, psync, 1 thread, $file (IOPS)"
    three_way a pread "$file" '"%r %d" % (d["phases"][0]["total"]["read"]["iops"], d["phases"][0]["total"]["read"]["ops"])' 0.95 \
        --target "$file" --size 1G --rw randread --bs 4k
    echo
fi

# --- b. writes to /dev/null ------------------------------------------------------------

if want b; then
    echo "== b. 4 KiB writes to /dev/null, psync (IOPS)"
    three_way b pwrite /dev/null '"%r %d" % (d["phases"][0]["total"]["write"]["iops"], d["phases"][0]["total"]["write"]["ops"])' 0.90 \
        --target /dev/null --device --size 1G --rw randwrite --bs 4k
    echo
fi

# --- c. io_uring QD32 against fio ------------------------------------------------------

if want c; then
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
    row c "IOPS" iolab "$(median "${c_iolab[@]}")" fio "$(median "${c_fio[@]}")" min 1.20
else
    echo "  skipped: $have_fio"
fi
echo
fi

# --- d, e. sequential direct writes against dd and fio ------------------------------------

# seq_case CASE DIR TOOLS...: rounds of 2 GiB of 1 MiB O_DIRECT writes to a new file in DIR by
# each tool, the order rotated every round. Every run writes a new file: each is removed (and the
# removal synced, as DIR may be mounted with discard) before the next run, so no tool overwrites
# allocated blocks. Besides MB/s (bytes / seconds / 1e6), each run's process CPU time (user +
# system, from GNU time) per write is kept: the work a tool does between two writes.
seq_case() {
    local c=$1 dir=$2; shift 2
    local tools=("$@") line r k t
    fresh() { rm -f "$dir"/seq.*; sync; }
    declare -gA seq_mb=() seq_cpu=() seq_prep=()
    local dd_c=(dd if=/dev/zero "of=$dir/seq.dd" bs=1M count=2048 oflag=direct)
    local fio_d=(fio --name=seq "--filename=$dir/seq.fio" --rw=write --bs=1M --direct=1 --size=2g --ioengine=psync --fallocate=none)
    local iolab_d=(run --target "$dir/seq.iolab" --size 2G --rw write --bs 1M --direct)
    for t in "${tools[@]}"; do
        case $t in
            iolab) show "$c-iolab" "$iolab" "${iolab_d[@]}" --output json --no-progress --no-store ;;
            iolab-refill) show "$c-iolab-refill" "$iolab" "${iolab_d[@]}" --refill-buffers --output json --no-progress --no-store ;;
            dd) show "$c-dd" "${dd_c[@]}" ;;
            fio) show "$c-fio" "${fio_d[@]}" --output-format=json ;;
            fio-noscramble) show "$c-fio-noscramble" "${fio_d[@]}" --scramble_buffers=0 --output-format=json ;;
            c-*) show "$c-$t" "$seqdirect" "$dir/seq.c" 2048 "${t#c-}" ;;
        esac
    done
    cpu_per_write() { awk '{ printf "%.1f", ($1 + $2) / 2048 * 1e6 }' "$tmp/time.txt"; }
    for ((r = 1; r <= SEQ_ROUNDS; r++)); do
        line="  round $r:"
        for ((k = 0; k < ${#tools[@]}; k++)); do
            t=${tools[(r - 1 + k) % ${#tools[@]}]}
            fresh
            local v
            case $t in
                iolab) v=$(iolab_run 'd["phases"][0]["total"]["write"]["bw_bytes"] / 1e6' "${iolab_d[@]:1}") ;;
                iolab-refill) v=$(iolab_run 'd["phases"][0]["total"]["write"]["bw_bytes"] / 1e6' "${iolab_d[@]:1}" --refill-buffers) ;;
                dd)
                    LC_ALL=C "${timed[@]}" "${dd_c[@]}" 2>"$err" || { cat "$err" >&2; die "dd failed"; }
                    # "2147483648 bytes (2.1 GB, 2.0 GiB) copied, 3.51 s, 612 MB/s": bytes / seconds
                    v=$(awk '/bytes .* copied/ { for (k = 1; k <= NF; k++) if ($k ~ /^s,?$/) s = $(k - 1); printf "%.3f", $1 / s / 1e6 }' "$err")
                    [[ -n $v ]] || { cat "$err" >&2; die "could not read dd's summary"; } ;;
                fio) v=$("${timed[@]}" fio "${fio_d[@]:1}" --output-format=json >"$out" 2>"$err" && json "$out" 'd["jobs"][0]["write"]["io_bytes"] / (d["jobs"][0]["write"]["runtime"] / 1000) / 1e6') || die "fio failed" ;;
                fio-noscramble) v=$("${timed[@]}" fio "${fio_d[@]:1}" --scramble_buffers=0 --output-format=json >"$out" 2>"$err" && json "$out" 'd["jobs"][0]["write"]["io_bytes"] / (d["jobs"][0]["write"]["runtime"] / 1000) / 1e6') || die "fio failed" ;;
                c-*)
                    local l
                    l=$("${timed[@]}" "$seqdirect" "$dir/seq.c" 2048 "${t#c-}") || die "$seqdirect ${t#c-} failed"
                    v=$(sed -n 's/.* mb_s=\([0-9.]*\) .*/\1/p' <<<"$l")
                    seq_prep[$t]+="$(sed -n 's/.* prep_us=\([0-9.]*\) .*/\1/p' <<<"$l") " ;;
            esac
            seq_mb[$t]+="$v "
            if [[ $have_time == yes ]]; then
                seq_cpu[$t]+="$(cpu_per_write) "
                line+="  $t $(fmt "$v") ($(cpu_per_write) us)"
            else
                line+="  $t $(fmt "$v")"
            fi
        done
        echo "$line"
    done
    fresh
    for t in "${tools[@]}"; do
        # shellcheck disable=SC2086
        printf '  %-15s median %6.0f MB/s%s\n' "$t" "$(median ${seq_mb[$t]})" \
            "$([[ $have_time == yes ]] && printf ', %7.1f us of its own CPU per write (process user + system, start-up included)' "$(median ${seq_cpu[$t]})")$([[ -n ${seq_prep[$t]:-} ]] && printf ', preparing the buffer %.1f us' "$(median ${seq_prep[$t]})")"
    done
}

if want d; then
    echo "== d. sequential 1 MiB O_DIRECT writes, 2 GiB, $tmp (MB/s = bytes / seconds / 1e6)"
    tools=(iolab dd)
    [[ $have_fio == yes ]] && tools+=(fio)
    seq_case d "$tmp" "${tools[@]}"
    # shellcheck disable=SC2086
    row d "MB/s" iolab "$(median ${seq_mb[iolab]})" dd "$(median ${seq_mb[dd]})" within 0.03
    if [[ $have_fio == yes ]]; then
        # shellcheck disable=SC2086
        row d "MB/s" iolab "$(median ${seq_mb[iolab]})" fio "$(median ${seq_mb[fio]})" within 0.03
    else
        echo "  fio skipped: $have_fio"
    fi
    echo
fi

if want e; then
    echo "== e. sequential 1 MiB O_DIRECT writes, 2 GiB, ext4 on a loop device backed by a tmpfs file"
    if [[ $(id -u) != 0 ]] || ! command -v losetup >/dev/null || ! command -v mkfs.ext4 >/dev/null; then
        echo "  skipped: needs root, losetup and mkfs.ext4"
    else
        # 3 GiB of RAM; the whole device is written once first, so no run pays for tmpfs
        # allocating its pages (the first pass over a fresh image is much slower).
        img=$shm/ramdisk.img
        truncate -s 3G "$img"
        ram_dev=$(losetup -f --show "$img") || die "losetup failed"
        dd if=/dev/zero of="$ram_dev" bs=1M count=3072 oflag=direct status=none
        mkfs.ext4 -q -F "$ram_dev" || die "mkfs.ext4 failed"
        ram_mnt=$(mktemp -d /tmp/iolab-bench-ram.XXXXXX)
        mount "$ram_dev" "$ram_mnt" || die "mount failed"
        echo "  device: $ram_dev on $img (tmpfs), ext4 at $ram_mnt, loop direct I/O: $(cat /sys/block/"${ram_dev#/dev/}"/loop/dio 2>/dev/null || echo '?')"
        # c-*: bench/floor/c/seqdirect.c, the same writes in C with one per-write step changed
        # (none, iolab's 8-byte stamp, dd's read from /dev/zero, a memset, fio-like scrambling,
        # an untouched buffer in a transparent huge page).
        tools=(iolab iolab-refill dd)
        [[ $have_fio == yes ]] && tools+=(fio fio-noscramble)
        tools+=(c-none c-stamp c-zero-read c-memset c-scramble c-huge)
        seq_case e "$ram_mnt" "${tools[@]}"
        # shellcheck disable=SC2086
        row e "MB/s" iolab "$(median ${seq_mb[iolab]})" dd "$(median ${seq_mb[dd]})" info
        if [[ $have_fio == yes ]]; then
            # shellcheck disable=SC2086
            row e "MB/s" iolab "$(median ${seq_mb[iolab]})" fio "$(median ${seq_mb[fio]})" info
            # shellcheck disable=SC2086
            row e "MB/s" iolab "$(median ${seq_mb[iolab]})" fio-ns "$(median ${seq_mb[fio-noscramble]})" within 0.03
        fi
        # shellcheck disable=SC2086
        row e "MB/s" refill "$(median ${seq_mb[iolab-refill]})" iolab "$(median ${seq_mb[iolab]})" info
        # shellcheck disable=SC2086
        row e "MB/s" iolab "$(median ${seq_mb[iolab]})" C-stamp "$(median ${seq_mb[c-stamp]})" within 0.03
    fi
    echo
fi

# --- summary ---------------------------------------------------------------------------

echo "== medians (load $(cut -d' ' -f1-3 /proc/loadavg) at the end; $((SECONDS - t_start)) s of runs)"
printf '%-3s %-9s %-7s %12s %-7s %12s %7s %-10s %s\n' case metric tool median peer median ratio target result
printf '%s\n' "${rows[@]}"
