#!/usr/bin/env bash
# iolab's application workloads against the real tools, same directory, same parameters:
# PostMark (Debian's postmark) against `iolab run --workload postmark`. Counts and bytes must be
# identical; times are compared as ratios within this run, alternating the tools ROUNDS times
# with the page cache dropped before each (root) so neither profits from the other's cache.
# Then bonnie++ (Debian's bonnie++) against `iolab run --workload bonnie --csv`: the same
# directory, a BONNIE_MIB file (1024) with -r half of it so bonnie++ accepts a file smaller than
# twice the RAM, -n 16 (its default), the page cache dropped before each; block write, block
# read and create rates as ratios. fs_mark has no iolab equivalent yet (see docs/fidelity.md).
#
#   bash bench/apps-fidelity.sh [DIR]            # DIR defaults to /var/tmp/iolab-apps-fidelity
#   ROUNDS=3 IOLAB=target/release/iolab bash bench/apps-fidelity.sh /mnt/test
set -euo pipefail
dir=${1:-/var/tmp/iolab-apps-fidelity}
ROUNDS=${ROUNDS:-3}
IOLAB=${IOLAB:-$(dirname "$0")/../target/release/iolab}
command -v postmark >/dev/null || { echo "postmark is not installed: apt-get install postmark" >&2; exit 2; }
command -v bonnie++ >/dev/null || { echo "bonnie++ is not installed: apt-get install bonnie++" >&2; exit 2; }
BONNIE_MIB=${BONNIE_MIB:-1024}
[ -x "$IOLAB" ] || { echo "no iolab at $IOLAB: cargo build --release -p iolab, or set IOLAB" >&2; exit 2; }
rm -rf "$dir"; mkdir -p "$dir/real" "$dir/iolab"
trap 'rm -rf "$dir"' EXIT
# Seed 003's settings exactly (PostMark's default seed, 42).
cat >"$dir/pm.cfg" <<'EOF'
set size 1024 262144
set number 5000
set transactions 10000
set read 8192
set write 8192
set bias read 7
set bias create 3
run
quit
EOF
drop() { sync; if [ -w /proc/sys/vm/drop_caches ]; then echo 3 >/proc/sys/vm/drop_caches; fi; }
now() { date +%s.%N; }

echo "round tool elapsed_s created read appended deleted bytes_read bytes_written"
for r in $(seq "$ROUNDS"); do
    drop
    t0=$(now)
    out=$(cd "$dir/real" && postmark ../pm.cfg)
    t1=$(now)
    python3 - "$r" "$t0" "$t1" <<EOF
import re, sys
out = """$out"""
n = lambda pat: int(re.search(pat, out).group(1))
mb = lambda pat: float(re.search(pat, out).group(1))
print(sys.argv[1], "postmark", round(float(sys.argv[3]) - float(sys.argv[2]), 3),
      n(r"(\d+) created"), n(r"(\d+) read \("), n(r"(\d+) appended"), n(r"(\d+) deleted"),
      "%.2fMiB" % mb(r"([\d.]+) megabytes read"), "%.2fMiB" % mb(r"([\d.]+) megabytes written"))
EOF
    drop
    "$IOLAB" run --workload postmark --config "$dir/pm.cfg" --target "$dir/iolab" --no-store --no-progress \
        --sample-interval 0 --output json | python3 -c "
import json, sys
w = json.load(sys.stdin)['phases'][0]['workload']
print('$r', 'iolab', round(w['elapsed_s'], 3), *(int(w[k]) for k in ('created', 'read', 'appended', 'deleted')),
      '%.2fMiB' % (w['bytes_read'] / 2**20), '%.2fMiB' % (w['bytes_written'] / 2**20),
      '(exact: %d read, %d written; %.0f transactions/s)' % (w['bytes_read'], w['bytes_written'], w['transactions_per_s']))"
done

echo
echo "bonnie++ against iolab's bonnie: ${BONNIE_MIB} MiB, -r $((BONNIE_MIB / 2)), -n 16 (K/sec, files/sec; +++++: under bonnie++'s 0.5 s)"
echo "round tool put_block get_block seq_create ran_create putc rewrite getc seeks"
for r in $(seq "$ROUNDS"); do
    rm -rf "$dir/real" "$dir/iolab"; mkdir -p "$dir/real" "$dir/iolab"
    drop
    bonnie++ -d "$dir/real" -s "$BONNIE_MIB" -r $((BONNIE_MIB / 2)) -n 16 -u root -m real -q >"$dir/real.csv" 2>/dev/null
    drop
    "$IOLAB" run --workload bonnie --name iolab --target "$dir/iolab" --bonnie-size "${BONNIE_MIB}M" \
        --bonnie-ram "$((BONNIE_MIB / 2))M" --bonnie-files 16 --no-store --no-progress --sample-interval 0 \
        --csv >"$dir/iolab.csv"
    python3 - "$r" "$dir/real.csv" "$dir/iolab.csv" <<'EOF'
import sys
cols = {"put_block": 11, "get_block": 17, "seq_create": 26, "ran_create": 32,
        "putc": 9, "rewrite": 13, "getc": 15, "seeks": 19}
rows = [open(p).read().strip().split(",") for p in sys.argv[2:]]
for name, row in zip(("bonnie++", "iolab"), rows):
    print(sys.argv[1], name, *(row[i] for i in cols.values()))
ratio = []
for k, i in cols.items():
    a, b = rows[0][i], rows[1][i]
    ratio.append("%s %.2f" % (k, float(b) / float(a)) if a.isdigit() and b.isdigit() and int(a) else "%s n/a" % k)
print(sys.argv[1], "iolab/bonnie++", ", ".join(ratio))
EOF
done
