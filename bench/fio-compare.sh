#!/usr/bin/env bash
# The same fio job files run by fio and by iolab, side by side: IOPS, MB/s and completion
# latency (p50, p99) per direction as each tool reports it in fio's JSON (fio's own
# --output-format=json; iolab's --output fio-json), and iolab's median as a ratio of fio's.
# Rounds are interleaved (fio, iolab, fio, iolab, ...) so a noisy machine hits both alike.
# Each job runs with the page cache (DIRECT=0) and with O_DIRECT (DIRECT=1).
#
#   bash bench/fio-compare.sh                        # bench/fio/*.fio, 3 rounds of 5 s each
#   ROUNDS=5 SECS=10 bash bench/fio-compare.sh bench/fio/randread-psync.fio
#   MODES=1 bash bench/fio-compare.sh                # O_DIRECT only
#   IOLAB=target/release/iolab bash bench/fio-compare.sh   # skip the build
#
# Job files read TESTFILE, SIZE, DIRECT and SECS from the environment (`${VAR}`); fio and iolab
# get a file each under DIR (default /var/tmp/iolab-fio-compare, removed at the end).
# docs/fidelity.md ("iolab against fio on fio's job files") has figures and what they mean.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
SECS=${SECS:-5}
SIZE=${SIZE:-512m}
MODES=${MODES:-"0 1"}
DIR=${DIR:-/var/tmp/iolab-fio-compare}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
command -v fio >/dev/null || { echo "fio-compare.sh: fio is not installed" >&2; exit 1; }
command -v python3 >/dev/null || { echo "fio-compare.sh: python3 reads the JSON" >&2; exit 1; }
if [ -n "${IOLAB:-}" ]; then
    iolab=$IOLAB     # an iolab built already (IOLAB=path/to/iolab)
else
    cargo build --release -q -p iolab --manifest-path "$root/Cargo.toml"
    iolab=$root/target/release/iolab
fi

if [ $# -gt 0 ]; then jobs=("$@"); else jobs=("$root"/bench/fio/*.fio); fi
mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT
export SIZE SECS
echo "fio-compare: $(fio --version), iolab $("$iolab" --version | cut -d' ' -f2); $ROUNDS rounds of $SECS s, files of $SIZE in $DIR"

# One run's figures from fio's JSON on stdin: per direction with I/O, "dir iops MB/s p50_ms p99_ms".
figures() {
    python3 -c '
import json, sys
d = json.load(sys.stdin)
for j in d["jobs"]:
    for dd in ("read", "write"):
        x = j[dd]
        if x["total_ios"] == 0:
            continue
        p = x["clat_ns"].get("percentile", {})
        print(dd, x["iops"], x["bw_bytes"] / 1e6, p.get("50.000000", 0) / 1e6, p.get("99.000000", 0) / 1e6)
    if j["sync"]["total_ios"]:
        p = j["sync"]["lat_ns"].get("percentile", {})
        print("sync", j["sync"]["total_ios"] / (j["job_runtime"] / 1000), 0, p.get("50.000000", 0) / 1e6, p.get("99.000000", 0) / 1e6)
'
}

for job in "${jobs[@]}"; do
    for direct in $MODES; do
        export DIRECT=$direct
        out=$(mktemp)
        for ((r = 1; r <= ROUNDS; r++)); do
            TESTFILE=$DIR/fio.dat fio --output-format=json "$job" 2>/dev/null | figures | sed "s/^/fio $r /" >>"$out"
            TESTFILE=$DIR/iolab.dat "$iolab" run "$job" --output fio-json --no-store --no-progress --sample-interval 0 \
                | figures | sed "s/^/iolab $r /" >>"$out"
        done
        echo
        echo "== $(basename "$job") $( ((direct)) && echo O_DIRECT || echo 'page cache')"
        python3 - "$out" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for tool, r, dd, iops, mbs, p50, p99 in rows:
    by.setdefault((dd, tool), []).append((float(iops), float(mbs), float(p50), float(p99)))
print(f"{'':6} {'tool':6} {'IOPS':>12} {'MB/s':>10} {'p50 ms':>10} {'p99 ms':>10}   (median of {len(next(iter(by.values())))} rounds)")
for dd in ("read", "write", "sync"):
    med = {}
    for tool in ("fio", "iolab"):
        v = by.get((dd, tool))
        if not v:
            continue
        med[tool] = [statistics.median(x[i] for x in v) for i in range(4)]
        m = med[tool]
        mbs = f"{m[1]:10.1f}" if dd != "sync" else f"{'':>10}"
        print(f"{dd:6} {tool:6} {m[0]:12,.0f} {mbs} {m[2]:10.4f} {m[3]:10.4f}")
    if len(med) == 2 and med["fio"][0] > 0:
        r = [med["iolab"][i] / med["fio"][i] if med["fio"][i] else float("nan") for i in range(4)]
        print(f"{dd:6} {'ratio':6} {r[0]:12.3f} {r[1] if dd != 'sync' else float('nan'):10.3f} {r[2]:10.3f} {r[3]:10.3f}   iolab / fio")
PY
        rm -f "$out" "$DIR"/fio.dat "$DIR"/iolab.dat
    done
done
