#!/usr/bin/env bash
# fio's own examples (Debian's fio-examples, /usr/share/doc/fio/examples) run by fio and by iolab
# side by side: every example `iolab convert` takes with nothing left out, rewritten to run a
# short time on scratch files (each job's filename, size, runtime and time_based replaced; the
# rest of the file as fio ships it), fio with --output-format=json and iolab with --output
# fio-json, both read the same way: IOPS and bandwidth summed over the file's jobs and
# directions, and iolab's as a ratio of fio's (a file of several phases, each phase's row under
# it, named by its first job).
# One round each, fio first.
#
#   bash bench/fio-corpus.sh                              # every converting example, 3 s each
#   SECS=10 SIZE=256m bash bench/fio-corpus.sh fio-rand-read.fio zipf.fio
#   IOLAB=target/release/iolab bash bench/fio-corpus.sh   # skip the build
#
# Files go under DIR (default /tmp/iolab-fio-corpus, removed at the end). docs/fidelity.md
# ("fio's examples, side by side") has the table and why each difference is there.
set -euo pipefail

SECS=${SECS:-3}
SIZE=${SIZE:-128m}
EXAMPLES=${EXAMPLES:-/usr/share/doc/fio/examples}
DIR=${DIR:-/tmp/iolab-fio-corpus}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
command -v fio >/dev/null || { echo "fio-corpus.sh: fio is not installed" >&2; exit 1; }
command -v python3 >/dev/null || { echo "fio-corpus.sh: python3 reads the JSON" >&2; exit 1; }
[ -d "$EXAMPLES" ] || { echo "fio-corpus.sh: $EXAMPLES is missing: apt-get install fio-examples" >&2; exit 1; }
if [ -n "${IOLAB:-}" ]; then
    iolab=$(cd "$(dirname "$IOLAB")" && pwd)/$(basename "$IOLAB")
else
    cargo build --release -q -p iolab --manifest-path "$root/Cargo.toml"
    iolab=$root/target/release/iolab
fi

if [ $# -gt 0 ]; then names=("$@"); else mapfile -t names < <(cd "$EXAMPLES" && ls -- *.fio); fi
mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT
echo "fio-corpus: $(fio --version), iolab $("$iolab" --version | cut -d' ' -f2); $SECS s per example, files of $SIZE in $DIR"

# The example with each job's file, size and time replaced: rewrite SRC OUT FILE.
rewrite() {
    python3 - "$@" "$SIZE" "$SECS" <<'PY'
import re, sys
src, out, target, size, secs = sys.argv[1:6]
# offset_increment is scaled: cross-stripe-verify's 124g for 30 clones has fio 3.33 lay out
# a 3.6 TB file (it wrote a 1 GiB scratch filesystem full and failed with ENOSPC; iolab
# refuses it, "laying out needs 3861309939712 bytes"): on the scratch file the clones start
# the scratch size over their number apart (its largest numjobs), as the example's stripes do.
drop = {"filename", "directory", "size", "filesize", "io_size", "runtime", "time_based", "nrfiles",
        "write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log", "log_avg_msec",
        "offset_increment"}
text = open(src).read()
def mib(v):
    n, u = re.match(r"(\d+)([kmgt]?)", v.lower()).groups()
    return int(n) << {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}[u]
clones = max([int(n) for n in re.findall(r"^numjobs=(\d+)", text, re.M)] or [1])
stripe = max(1 << 20, (mib(size) // clones) >> 20 << 20)
# fio's metadata engines make one call per file: each job gets 2000 names in a directory of
# its own (TARGET-meta) instead of a file, size and time.
meta = re.search(r"^ioengine=(file|dir)(create|stat|delete)\s*$", open(src).read(), re.M)
lines = []
for raw in open(src):
    line = raw.strip()
    key = re.split(r"[=\s;#]", line, maxsplit=1)[0] if line else ""
    if key == "offset_increment":
        lines.append(f"offset_increment={stripe >> 20}m")
        continue
    if key in drop and not (meta and key in ("filesize", "size")):  # fio lays out what stat/delete need
        continue
    lines.append(raw.rstrip("\n"))
    m = re.match(r"^\[(.+)\]$", line)
    if m and m.group(1) != "global":
        if meta:
            lines += [f"directory={target}-meta", "nrfiles=2000"]
        else:
            lines += [f"filename={target}", f"size={size}", f"runtime={secs}", "time_based"]
open(out, "w").write("\n".join(lines) + "\n")
PY
}

# IOPS and MB/s summed over the jobs and directions of fio's JSON on stdin.
figures() {
    python3 -c '
import json, sys
t = sys.stdin.read()
try:
    d = json.loads(t[t.find("{"):])  # fio may print a warning before its JSON
except ValueError:
    d = {"jobs": []}  # a tool stopped at its time limit may leave no JSON
dirs = ("read", "write", "trim")
iops = sum(j[dd]["iops"] for j in d["jobs"] for dd in dirs if dd in j)
bw = sum(j[dd]["bw_bytes"] for j in d["jobs"] for dd in dirs if dd in j)
print(f"{iops:.0f} {bw / 1e6:.1f}")
'
}

# Each of fio's reporting groups, when there are several: its first job's name, then fio's and
# iolab's IOPS and MB/s (FIO_JSON IOLAB_JSON). fio lists a job's clones apart without
# group_reporting and merges a group's jobs into one entry with it; iolab lists each job (its
# threads merged) with its phase as groupid. So a group's figures are fio's entries of that
# groupid against iolab's entries named in it, and those of the same iolab phase that fio
# names nowhere (the jobs fio's group_reporting merged into the group's first).
groups() {
    python3 - "$@" <<'PY2'
import json, sys
def load(p):
    t = open(p).read()
    try:
        return json.loads(t[t.find("{"):])["jobs"]
    except ValueError:
        return []
fio, mine = load(sys.argv[1]), load(sys.argv[2])
dirs = ("read", "write", "trim")
fig = lambda js: (sum(j[d]["iops"] for j in js for d in dirs if d in j), sum(j[d]["bw_bytes"] for j in js for d in dirs if d in j) / 1e6)
order = []
for j in fio:
    if j["groupid"] not in order:
        order.append(j["groupid"])
if len(order) > 1:
    named = {j["jobname"] for j in fio}
    for g in order:
        js = [j for j in fio if j["groupid"] == g]
        names = {j["jobname"] for j in js}
        phases = {j["groupid"] for j in mine if j["jobname"] in names}
        ms = [j for j in mine if j["jobname"] in names or (j["groupid"] in phases and j["jobname"] not in named)]
        (a, b), (c, e) = fig(js), fig(ms)
        print(js[0]["jobname"].replace(" ", "_"), f"{a:.0f}", f"{c:.0f}", f"{b:.1f}", f"{e:.1f}")
PY2
}

# One row: NAME FIO_IOPS IOLAB_IOPS FIO_MBS IOLAB_MBS NOTE.
row() {
    python3 -c "
import sys
fi, io, fb, ib = map(float, sys.argv[2:6])
r = lambda a, b: f'{b / a:.2f}' if a else '-'
print(f'{sys.argv[1]:32} {fi:12,.0f} {io:12,.0f} {r(fi, io):>9} {fb:10.1f} {ib:10.1f} {r(fb, ib):>9}  {sys.argv[6]}')
" "$@"
}

printf '\n%-32s %12s %12s %9s %10s %10s %9s  %s\n' example "fio IOPS" "iolab IOPS" ratio "fio MB/s" "iolab MB/s" ratio note
for name in "${names[@]}"; do
    src=$EXAMPLES/$name
    rewrite "$src" "$DIR/fio-$name" "$DIR/fio.dat"
    rewrite "$src" "$DIR/iolab-$name" "$DIR/iolab.dat"
    why=
    if [ "$name" != xnvme-compare.fio ] && ! why=$("$iolab" convert "$DIR/iolab-$name" 2>&1 >/dev/null); then
        continue    # not converting clean (the corpus test lists why; xnvme-compare converts as run below)
    fi
    # fio 3.33 never ends fixed-rate-submission.fio made time-based (io_submit_mode=offload):
    # each tool gets ten times the runtime and a minute.
    # A job that starts late (1mbs_clients' 32 clients, 4 s apart) adds its start delay.
    delay=$(grep -oE '^startdelay=[0-9]+' "$src" | cut -d= -f2 | sort -n | tail -1 || true)
    limit=$((SECS * 10 + 60 + ${delay:-0}))
    rm -rf "$DIR"/fio.dat-meta "$DIR"/iolab.dat-meta
    mkdir -p "$DIR"/fio.dat-meta "$DIR"/iolab.dat-meta
    # A metadata job makes and removes its own names: --overwrite is not its option.
    ow=--overwrite
    if grep -qE '^ioengine=(file|dir)(create|stat|delete)\s*$' "$src"; then ow=; fi
    # An example whose header says how to run it gets those arguments, in both tools (iolab
    # through `iolab fio`, fio's command line), as the corpus test reads it (its INVOCATIONS).
    case $name in
        xnvme-compare.fio) args=(--section=default --ioengine=io_uring --sqthread_poll=1) ;;
        *) args=() ;;
    esac
    # A job that may not create its file (allow_file_create=0) gets one written first.
    if grep -qE '^allow_file_create=0' "$src"; then
        for f in fio iolab; do
            dd if=/dev/urandom of="$DIR/$f.dat" bs=1M count=$(($(numfmt --from=iec "${SIZE^^}") >> 20)) status=none
        done
    fi
    (cd "$DIR" && timeout -k 10 "$limit" fio --output-format=json "${args[@]}" "fio-$name" >"$DIR/fio.json" 2>/dev/null) \
        || echo '{"jobs": []}' >"$DIR/fio.json"
    if [ ${#args[@]} -gt 0 ]; then
        (cd "$DIR" && timeout -k 10 "$limit" "$iolab" fio "${args[@]}" "iolab-$name" --output-format=json \
            >"$DIR/iolab.json" 2>/dev/null) || echo '{"jobs": []}' >"$DIR/iolab.json"
    else
        (cd "$DIR" && timeout -k 10 "$limit" "$iolab" run "iolab-$name" --output fio-json --no-store --no-progress \
            --sample-interval 0 $ow >"$DIR/iolab.json" 2>/dev/null) || echo '{"jobs": []}' >"$DIR/iolab.json"
    fi
    read -r fi_iops fi_bw < <(figures <"$DIR/fio.json")
    read -r io_iops io_bw < <(figures <"$DIR/iolab.json")
    note=$(grep -o 'note: .*' <<<"$why" | sed -E 's/^note: [^:]+:[0-9]+: //' | head -1 | cut -c1-70 || true)
    row "$name" "$fi_iops" "$io_iops" "$fi_bw" "$io_bw" "$note"
    # A file of several reporting groups (phases, or fio's new_group): each one's row too,
    # named by its first job.
    while read -r j a c b e; do
        row "  $j" "$a" "$c" "$b" "$e" ""
    done < <(groups "$DIR/fio.json" "$DIR/iolab.json")
    rm -f "$DIR"/fio.dat "$DIR"/iolab.dat "$DIR"/iolab.dat.* "$DIR"/fio.dat.* "$DIR"/fio.json "$DIR"/iolab.json
    rm -rf "$DIR"/fio.dat-meta "$DIR"/iolab.dat-meta
done
