#!/usr/bin/env bash
# Data validation's cost (issue 12): 4 KiB random writes, psync, one thread, a 256 MiB file in
# the page cache (/dev/shm), release build. Cases, interleaved round by round:
#
#   plain    the job without validation
#   verify   --verify: every 4 KiB block stamped (8 sector headers, pattern, CRC-32C)
#            target: IOPS >= 85% of plain
#   jasync   --verify --journal on /dev/shm, --journal-sync async (a journal write per data write)
#   dasync   the journal on disk (/var/tmp), async
#   dsync    the journal on disk, --journal-sync sync: each record durable before its write
#            (seed 004: 17,000 IOPS fell to 1,000 with Vdbench's synchronous journal)
#
# Each case writes its own file; the medians of ROUNDS runs are compared. A missed target prints
# FAIL but does not fail the script: the numbers are the point.
#
#   bash bench/verify.sh
#   ROUNDS=3 SECS=2 bash bench/verify.sh
set -euo pipefail

ROUNDS=${ROUNDS:-5}
SECS=${SECS:-3}
CASES=${CASES:-"plain verify jasync dasync dsync"}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
command -v python3 >/dev/null || { echo "verify.sh: python3 is needed to read JSON output" >&2; exit 1; }
cargo build --release -q -p iolab
iolab=$root/target/release/iolab

shm=/dev/shm/iolab-bench-verify
disk=/var/tmp/iolab-bench-verify
cleanup() { rm -rf "$shm" "$disk"; }
trap cleanup EXIT
rm -rf "$shm" "$disk"
mkdir -p "$shm" "$disk"

flags() {
    case $1 in
        plain) ;;
        verify) echo --verify ;;
        jasync) echo --journal "$shm/j-$1" ;;
        dasync) echo --journal "$disk/j-$1" --journal-sync async ;;
        dsync) echo --journal "$disk/j-$1" --journal-sync sync ;;
    esac
}

# One run: write IOPS, write mean latency (us), journal mean latency (us).
one() {
    # shellcheck disable=SC2046
    "$iolab" run --target "$shm/f-$1" --size 256M --rw randwrite --runtime "${SECS}s" --no-store \
        --no-progress --sample-interval 0 --output json $(flags "$1") |
        python3 -c 'import json,sys
v=json.load(sys.stdin); t=v["phases"][0]["total"]; j=t["classes"].get("journal")
e=(v["phases"][0].get("verify") or {}).get("errors") or {}
assert sum(e.values())==0, "validation errors in a benchmark run: %s" % e
print(t["write"]["iops"], t["write"]["lat_ns"]["mean"]/1000, (j["lat_ns"]["mean"]/1000) if j else 0)'
}

declare -A iops lat jlat
for c in $CASES; do one "$c" >/dev/null; done # lay out every file first
for r in $(seq "$ROUNDS"); do
    for c in $CASES; do
        read -r i l j < <(one "$c")
        iops[$c]+="$i "
        lat[$c]+="$l "
        jlat[$c]+="$j "
    done
done

median() { python3 -c 'import sys,statistics; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
echo "4 KiB random writes, psync, 1 thread, 256 MiB in /dev/shm, $ROUNDS interleaved rounds of ${SECS} s (medians)"
printf '%-8s %12s %10s %14s %s\n' case IOPS "of plain" "write mean us" "journal mean us"
base=
for c in $CASES; do
    # shellcheck disable=SC2086
    m=$(median ${iops[$c]})
    [[ $c == plain ]] && base=$m
    # shellcheck disable=SC2086
    printf '%-8s %12.0f %9.3f %14.2f %14.2f\n' "$c" "$m" "$(python3 -c "print($m/$base if $base else 0)")" \
        "$(median ${lat[$c]})" "$(median ${jlat[$c]})"
done
if [[ -n $base && " $CASES " == *" verify "* ]]; then
    # shellcheck disable=SC2086
    ratio=$(python3 -c "print($(median ${iops[verify]})/$base)")
    if python3 -c "import sys; sys.exit(0 if $ratio >= 0.85 else 1)"; then
        echo "verify/plain = $ratio: PASS (target >= 0.85)"
    else
        echo "verify/plain = $ratio: FAIL (target >= 0.85)"
    fi
fi
