#!/usr/bin/env bash
# iolab's libaio engine against fio's libaio: 4 KiB O_DIRECT random reads of a file on a disk
# filesystem at QD1, QD16 and QD32, one thread each, the runs interleaved (fio, iolab, fio, ...)
# and the medians compared: IOPS (iolab / fio) and CPU per I/O (user + system of the whole
# process, from GNU time, divided by the I/Os it did). fio runs with its defaults
# (iodepth_batch_submit=1, iodepth_batch_complete_min=max=1); iolab runs the same job with the
# same batching given as flags, so both make the same calls.
#
#   bash bench/libaio.sh
#   ROUNDS=3 SECS=5 bash bench/libaio.sh
#   DIR=/mnt/nvme bash bench/libaio.sh          # the file on another filesystem (O_DIRECT needed)
#   IOLAB=target/debug/iolab bash bench/libaio.sh
#
# The target (iolab within 10% of fio's IOPS, and no more CPU per I/O than 1.2 x fio's) prints
# PASS or FAIL; the numbers are the point, the exit status is non-zero only when
# something could not be run.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
SECS=${SECS:-5}
DEPTHS=${DEPTHS:-1 16 32}
SIZE=${SIZE:-1G}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
die() { echo "libaio.sh: $*" >&2; exit 1; }
command -v fio >/dev/null || die "fio is not installed"
command -v python3 >/dev/null || die "python3 is needed to read JSON output"
[[ -x /usr/bin/time ]] || die "GNU time (/usr/bin/time) is needed for CPU per I/O"
if [[ -z ${IOLAB:-} ]]; then cargo build --release -q -p iolab; fi
iolab=${IOLAB:-$root/target/release/iolab}

dir=${DIR:-/var/tmp}/iolab-libaio-bench.$$
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
file=$dir/f
out=$dir/out.json
tm=$dir/time.txt

echo "== machine"
echo "nproc:  $(nproc); kernel $(uname -r); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "file:   $file ($SIZE) on $(findmnt -n -o SOURCE,FSTYPE -T "$dir" 2>/dev/null || echo '?')"
echo "iolab:  $("$iolab" --version), built from $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "fio:    $(fio --version)"
echo "rounds: $ROUNDS x ${SECS}s per tool and depth"
echo

# The file, written once (iolab creates and fills it; fio reads what is there).
"$iolab" run --target "$file" --size "$SIZE" --rw write --bs 1M --engine libaio --iodepth 4 --direct \
    --no-progress --no-store --output json >/dev/null || die "could not lay out $file"

json() {
    python3 - "$1" "$2" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
d = json.loads(text[text.index('{'):])
print(eval(sys.argv[2]))
PY
}
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# cpu_per_io OPS: microseconds of CPU (user + system) per I/O of the last timed command
cpu_per_io() { awk -v ops="$1" '{ c = $1 + $2 } END { printf "%.2f", c * 1e6 / ops }' "$tm"; }

printf '%-5s %12s %12s %7s %12s %12s %7s  %s\n' depth "fio IOPS" "iolab IOPS" ratio "fio us/IO" "iolab us/IO" ratio verdict
for qd in $DEPTHS; do
    fio_iops=(); io_iops=(); fio_cpu=(); io_cpu=()
    fio_cmd=(fio --name=r --filename="$file" --rw=randread --bs=4k --ioengine=libaio --iodepth="$qd" --direct=1
        --time_based --runtime="$SECS" --output-format=json)
    io_cmd=("$iolab" run --target "$file" --rw randread --bs 4k --engine libaio --iodepth "$qd" --direct
        --iodepth-batch-submit 1 --iodepth-batch-complete-min 1 --iodepth-batch-complete-max 1
        --runtime "${SECS}s" --output json --no-progress --no-store)
    if [[ $qd == "${DEPTHS%% *}" ]]; then
        printf '  $ %s\n' "$(printf '%q ' "${fio_cmd[@]}")"
        printf '  $ %s\n' "$(printf '%q ' "${io_cmd[@]}")"
    fi
    for _ in $(seq "$ROUNDS"); do
        /usr/bin/time -f '%U %S' -o "$tm" "${fio_cmd[@]}" >"$out" 2>/dev/null || die "fio failed at QD$qd"
        ops=$(json "$out" 'd["jobs"][0]["read"]["total_ios"]')
        fio_iops+=("$(json "$out" 'd["jobs"][0]["read"]["iops"]')")
        fio_cpu+=("$(cpu_per_io "$ops")")
        /usr/bin/time -f '%U %S' -o "$tm" "${io_cmd[@]}" >"$out" 2>/dev/null || die "iolab failed at QD$qd"
        ops=$(json "$out" 'd["phases"][0]["total"]["read"]["ops"]')
        io_iops+=("$(json "$out" 'd["phases"][0]["total"]["read"]["ops"] / (d["phases"][0]["elapsed_s"])')")
        io_cpu+=("$(cpu_per_io "$ops")")
    done
    fi_=$(median "${fio_iops[@]}"); ii=$(median "${io_iops[@]}")
    fc=$(median "${fio_cpu[@]}"); ic=$(median "${io_cpu[@]}")
    r=$(awk -v a="$ii" -v b="$fi_" 'BEGIN { printf "%.3f", a / b }')
    rc=$(awk -v a="$ic" -v b="$fc" 'BEGIN { printf "%.3f", a / b }')
    verdict=$(awk -v r="$r" -v rc="$rc" 'BEGIN { print (r >= 0.9 && rc <= 1.2) ? "PASS" : "FAIL" }')
    printf '%-5s %12.0f %12.0f %7s %12s %12s %7s  %s\n' "QD$qd" "$fi_" "$ii" "$r" "$fc" "$ic" "$rc" "$verdict"
done
