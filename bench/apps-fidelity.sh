#!/usr/bin/env bash
# iolab's application workloads against the real tools, same directory, same parameters, the
# tools alternated ROUNDS times (the page cache dropped before each run when root), ratios
# taken within this one run; docs/fidelity.md has the figures and what explains them.
#
# 1. PostMark (Debian's postmark) against `iolab run --workload postmark`, seed 003's settings:
#    counts and bytes must be identical; transactions per second compared directly. PostMark's
#    own figure has one-second resolution, so its transaction phase is timed here from its
#    output: it flushes "Performing transactions" just before it reads the clock and "Done /
#    Deleting files" just after (postmark.c's cli_run), and this script timestamps both as
#    they arrive on the pipe.
# 2. bonnie++ (Debian's 2.00a) against `iolab run --workload bonnie --csv`: a BONNIE_MIB file
#    (1024), -n FILES (64), both tools in a memory cgroup of CG_MIB (256) so the file cannot
#    stay in the page cache (block read from the disk, not from memory: bonnie++ printed
#    `+++++` otherwise) and -r CG_MIB (the RAM they have). Block write, block read and the
#    create tests compared; the rest shown.
# 3. fs_mark (Debian's fsmark 3.3) against `iolab run --workload maildir`: FSM_FILES (2000)
#    files of 4 KiB in one directory, one thread, fsync before close (-S 1), against as many
#    messages of 4 KiB into one mailbox without the directory fsync. iolab's delivery renames
#    each file from tmp/ to new/ too; its files per second without the rename (its create,
#    write, fsync and close latencies) are shown beside.
#
#   bash bench/apps-fidelity.sh [DIR]            # DIR defaults to /var/tmp/iolab-apps-fidelity
#   ROUNDS=5 IOLAB=target/release/iolab bash bench/apps-fidelity.sh /mnt/test
#   PARTS=pm,bonnie,fsmark bash bench/apps-fidelity.sh   # which comparisons (default all three)
#   RT=1 bash bench/apps-fidelity.sh             # every measured command at real-time priority
#   BONNIE_FAST=1 BONNIE_FILES=0 BONNIE_MIB=4096 PARTS=bonnie bash bench/apps-fidelity.sh
#                                                # block tests only: bonnie++ -f -n 0, iolab
#                                                # --bonnie-char-size 0 --bonnie-files 0
#
# RT=1 runs each tool under `chrt -f 50`, so that on a shared machine other processes (builds)
# do not take the CPU from the phases that are CPU-bound (PostMark's transactions in the page
# cache, bonnie++'s per-character tests); both tools get the same treatment.
set -euo pipefail
dir=${1:-/var/tmp/iolab-apps-fidelity}
ROUNDS=${ROUNDS:-3}
PARTS=${PARTS:-pm,bonnie,fsmark}
IOLAB=${IOLAB:-$(dirname "$0")/../target/release/iolab}
BONNIE_MIB=${BONNIE_MIB:-1024}
BONNIE_FILES=${BONNIE_FILES:-64}
CG_MIB=${CG_MIB:-256}
BONNIE_FAST=${BONNIE_FAST:-0}
FSM_FILES=${FSM_FILES:-2000}
want() { [[ ",$PARTS," == *",$1,"* ]]; }
rt=()
if [[ ${RT:-0} == 1 ]]; then
    if [[ $(id -u) == 0 ]] && command -v chrt >/dev/null; then rt=(chrt -f 50); else echo "RT=1 needs root and chrt" >&2; exit 2; fi
fi
need() { command -v "$1" >/dev/null || { echo "$1 is not installed: apt-get install $2" >&2; exit 2; }; }
need python3 python3
want pm && need postmark postmark
want bonnie && need bonnie++ bonnie++
want fsmark && need fs_mark fsmark
[ -x "$IOLAB" ] || { echo "no iolab at $IOLAB: cargo build --release -p iolab, or set IOLAB" >&2; exit 2; }
IOLAB=$(cd "$(dirname "$IOLAB")" && pwd)/$(basename "$IOLAB")
rm -rf "$dir"; mkdir -p "$dir"
out=$dir.results; rm -rf "$out"; mkdir -p "$out"
cg=
cleanup() {
    rm -rf "$dir"
    if [ -n "$cg" ]; then rmdir "$cg" 2>/dev/null || true; fi
}
trap cleanup EXIT
drop() { sync; if [ -w /proc/sys/vm/drop_caches ]; then echo 3 >/proc/sys/vm/drop_caches; fi; }
iolab() { "${rt[@]}" "$IOLAB" "$@" --no-store --no-progress --sample-interval 0; }

echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ {print int($2/1024) " MiB"}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)${rt:+, every tool under ${rt[*]}}"
echo "dir:     $dir on $(df --output=source,fstype "$dir" | tail -1)"
echo "tools:   $("$IOLAB" --version), $(dpkg-query -W -f '${Package} ${Version}, ' postmark bonnie++ fsmark 2>/dev/null)"
echo

if want pm; then
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
    echo "== PostMark: seed 003's configuration; transactions/s over each tool's transaction phase"
    echo "round tool tx_s tx_per_s own_print created read appended deleted bytes_read bytes_written"
    for r in $(seq "$ROUNDS"); do
        rm -rf "$dir/real" "$dir/iolab"; mkdir -p "$dir/real" "$dir/iolab"
        drop
        python3 - "$r" "$dir/real" "$dir/pm.cfg" "${rt[@]}" >>"$out/pm.txt" <<'EOF'
import os, re, subprocess, sys, time
r, cwd, cfg = sys.argv[1:4]
p = subprocess.Popen(sys.argv[4:] + ["postmark", cfg], cwd=cwd, stdout=subprocess.PIPE)
buf, t_start, t_end = b"", None, None
while True:
    chunk = os.read(p.stdout.fileno(), 65536)
    now = time.monotonic()
    if not chunk:
        break
    buf += chunk
    if t_start is None and b"Performing transactions" in buf:
        t_start = now
    if t_end is None and b"Deleting files" in buf:
        t_end = now
p.wait()
out = buf.decode()
n = lambda pat: int(re.search(pat, out).group(1))
tx = 10000
secs = t_end - t_start
own = n(r"seconds of transactions \((\d+) per second\)")
mib = lambda pat: float(re.search(pat, out).group(1))
print(r, "postmark", "%.3f" % secs, "%.0f" % (tx / secs), own,
      n(r"(\d+) created"), n(r"(\d+) read \("), n(r"(\d+) appended"), n(r"(\d+) deleted"),
      "%.2fMiB" % mib(r"([\d.]+) megabytes read"), "%.2fMiB" % mib(r"([\d.]+) megabytes written"))
EOF
        tail -1 "$out/pm.txt"
        drop
        iolab run --workload postmark --config "$dir/pm.cfg" --target "$dir/iolab" --output json | python3 -c "
import json, sys
w = json.load(sys.stdin)['phases'][0]['workload']
print('$r', 'iolab', '%.3f' % w['transactions_s'], '%.0f' % w['transactions_per_s'], '-',
      *(int(w[k]) for k in ('created', 'read', 'appended', 'deleted')),
      '%.2fMiB' % (w['bytes_read'] / 2**20), '%.2fMiB' % (w['bytes_written'] / 2**20))" >>"$out/pm.txt"
        tail -1 "$out/pm.txt"
    done
    python3 - "$out/pm.txt" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
by = lambda tool: [r for r in rows if r[1] == tool]
pm, io = by("postmark"), by("iolab")
same = all(a[5:] == b[5:] for a, b in zip(pm, io))
ratios = [float(b[3]) / float(a[3]) for a, b in zip(pm, io)]
print("counts and bytes identical every round:", "yes" if same else "NO")
print("transactions/s iolab/postmark: median %.2f (rounds %s)" % (statistics.median(ratios), ", ".join("%.2f" % x for x in ratios)))
EOF
    echo
fi

if want bonnie; then
    # A memory cgroup both tools run in, so a 1 GiB file cannot stay in the page cache.
    if [ -w /sys/fs/cgroup/memory ]; then
        cg=/sys/fs/cgroup/memory/iolab-apps-fidelity.$$
        mkdir -p "$cg"; echo $((CG_MIB << 20)) >"$cg/memory.limit_in_bytes"
    elif grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
        cg=/sys/fs/cgroup/iolab-apps-fidelity.$$
        mkdir -p "$cg"; echo $((CG_MIB << 20)) >"$cg/memory.max"
    else
        echo "no memory cgroup to run bonnie++ in (needs root and a memory controller): its block read would come from the page cache" >&2
        exit 2
    fi
    incg() { sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "${rt[@]}" "$@"; }
    echo "== bonnie++ against iolab's bonnie: ${BONNIE_MIB} MiB, -n $BONNIE_FILES, both in a ${CG_MIB} MiB memory cgroup (-r $CG_MIB)"
    echo "   K/sec, seeks/sec, files/sec; +++++: bonnie++'s 'under 0.5 s'"
    echo "round tool put_block get_block seq_create ran_create putc rewrite getc seeks seq_stat seq_del ran_stat ran_del"
    for r in $(seq "$ROUNDS"); do
        rm -rf "$dir/real" "$dir/iolab"; mkdir -p "$dir/real" "$dir/iolab"
        drop
        fast_real=(); fast_iolab=()
        if [[ $BONNIE_FAST == 1 ]]; then fast_real=(-f); fast_iolab=(--bonnie-char-size 0); fi
        incg bonnie++ -d "$dir/real" -s "$BONNIE_MIB" -r "$CG_MIB" -n "$BONNIE_FILES" "${fast_real[@]}" -u root -m real -q >"$out/real.$r.csv" 2>/dev/null
        drop
        incg "$IOLAB" run --workload bonnie --name iolab --target "$dir/iolab" --bonnie-size "${BONNIE_MIB}M" \
            --bonnie-ram "${CG_MIB}M" --bonnie-files "$BONNIE_FILES" "${fast_iolab[@]}" --no-store --no-progress --sample-interval 0 \
            --csv >"$out/iolab.$r.csv"
        python3 - "$r" "$out/real.$r.csv" "$out/iolab.$r.csv" <<'EOF'
import sys
# CSV 1.98 (0-based): 9 putc, 11 put_block, 13 rewrite, 15 getc, 17 get_block, 19 seeks,
# 26 seq_create, 28 seq_stat, 30 seq_del, 32 ran_create, 34 ran_stat, 36 ran_del
cols = {"put_block": 11, "get_block": 17, "seq_create": 26, "ran_create": 32, "putc": 9, "rewrite": 13,
        "getc": 15, "seeks": 19, "seq_stat": 28, "seq_del": 30, "ran_stat": 34, "ran_del": 36}
rows = [open(p).read().strip().split(",") for p in sys.argv[2:]]
for name, row in zip(("bonnie++", "iolab"), rows):
    print(sys.argv[1], name, *((row[i] if i < len(row) and row[i] else "-") for i in cols.values()))
EOF
    done | tee "$out/bonnie.txt"
    python3 - "$out/bonnie.txt" <<'EOF'
import statistics, sys
names = "put_block get_block seq_create ran_create putc rewrite getc seeks seq_stat seq_del ran_stat ran_del".split()
rows = [l.split() for l in open(sys.argv[1]) if l.split()[1] in ("bonnie++", "iolab")]
real = [r for r in rows if r[1] == "bonnie++"]
ours = [r for r in rows if r[1] == "iolab"]
for i, n in enumerate(names):
    rs = []
    for a, b in zip(real, ours):
        x, y = a[2 + i], b[2 + i]
        try:
            rs.append(float(y) / float(x))
        except ValueError:
            pass
    if rs:
        print("%-10s iolab/bonnie++: median %.2f (rounds %s)" % (n, statistics.median(rs), ", ".join("%.2f" % r for r in rs)))
    else:
        print("%-10s iolab/bonnie++: n/a (bonnie++ printed +++++ every round)" % n)
EOF
    echo
fi

if want fsmark; then
    echo "== fs_mark -S 1 against iolab's maildir: $FSM_FILES files of 4 KiB, one thread, one directory"
    echo "round tool files_per_s files_per_s_without_rename"
    for r in $(seq "$ROUNDS"); do
        rm -rf "$dir/fsm" "$dir/iolab"; mkdir -p "$dir/fsm" "$dir/iolab"
        drop
        "${rt[@]}" fs_mark -d "$dir/fsm" -n "$FSM_FILES" -s 4096 -t 1 -S 1 >"$out/fsm.$r.txt" 2>&1
        awk -v r="$r" '$1 ~ /^[0-9]+$/ && NF >= 5 {print r, "fs_mark", $4, "-"}' "$out/fsm.$r.txt" | tail -1
        drop
        iolab run --workload maildir --target "$dir/iolab" --messages "$FSM_FILES" --min-size 4k --max-size 4k \
            --mailboxes 1 --dir-fsync=false --output json | python3 -c "
import json, sys
p = json.load(sys.stdin)['phases'][0]
c = p['total']['classes']
per = sum(c[k]['lat_ns']['mean'] for k in ('create', 'write', 'sync', 'close')) / 1e9
print('$r', 'iolab', '%.1f' % p['workload']['messages_per_s'], '%.1f' % (1 / per))"
    done | tee "$out/fsm.txt"
    python3 - "$out/fsm.txt" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
a = [float(r[2]) for r in rows if r[1] == "fs_mark"]
b = [float(r[2]) for r in rows if r[1] == "iolab"]
c = [float(r[3]) for r in rows if r[1] == "iolab"]
rs = [y / x for x, y in zip(a, b)]
rc = [y / x for x, y in zip(a, c)]
print("iolab/fs_mark files/s: median %.2f (rounds %s)" % (statistics.median(rs), ", ".join("%.2f" % x for x in rs)))
print("without iolab's rename: median %.2f (rounds %s)" % (statistics.median(rc), ", ".join("%.2f" % x for x in rc)))
EOF
fi
