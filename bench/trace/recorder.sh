#!/usr/bin/env bash
# The recorders' cost and the replay's timing (issue 28), eBPF against strace, in interleaved
# rounds (each round runs every variant once, in turn, so a machine that slows down slows them
# all):
#
#   1. cost: the redo-log program (bench/trace/redo.c, THREADS x ROUNDS) untraced, under
#      `trace record --via ebpf` and `--via strace`: its own elapsed (bench/trace/timed.c
#      inside the recorder); fio's io_uring QD32 and psync 4 KiB random-read jobs (SECS each):
#      IOPS as fio reports them, untraced and under each recorder;
#   2. replay: the redo-log program and fio's psync job (a fixed 64 MiB of 4 KiB reads)
#      recorded once by each recorder, then the untraced program against `iolab replay` of each
#      trace with the default timing (think) and with --timing afap and recorded.
#
#   bench/trace/recorder.sh [DIR] [ROUNDS]      # default /var/tmp/iolab-recorder, 5 rounds
#   THREADS=4 REDO_ROUNDS=2048 SECS=5 IOLAB=target/release/iolab bench/trace/recorder.sh /mnt/rf/rec 7
#
# Run as root (eBPF). DIR must accept O_DIRECT; a RAM-backed ext4 (a loop device on a /dev/shm
# file) keeps the disk's swings out of it. Prints markdown tables (medians, and each round).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-/var/tmp/iolab-recorder}
rounds=${2:-5}
threads=${THREADS:-4}
redo_rounds=${REDO_ROUNDS:-2048}
secs=${SECS:-5}
iolab=${IOLAB:-target/release/iolab}
[ -x "$iolab" ] || cargo build -q --release -p iolab
# The kernel's BPF statistics (run counts and times of the recorder's programs), restored after.
stats=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
sysctl -qw kernel.bpf_stats_enabled=1 || true
trap 'sysctl -qw kernel.bpf_stats_enabled="$stats" || true' EXIT
rm -rf "$dir"
mkdir -p "$dir/data" "$dir/fio"
cc -O2 -pthread -o "$dir/redo" bench/trace/redo.c
cc -O2 -o "$dir/timed" bench/trace/timed.c
# The fio file, laid out once.
fio --name=lay --filename="$dir/fio/f" --size=256M --rw=write --bs=1M --direct=1 --output=/dev/null
python3 - "$iolab" "$dir" "$rounds" "$threads" "$redo_rounds" "$secs" <<'PY'
import json, os, statistics, subprocess, sys
iolab, d, rounds, threads, redo_rounds, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
med = statistics.median
redo = [f"{d}/redo", f"{d}/data", threads, redo_rounds]

def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)

# The eBPF recorder's own figures per recording: its kernel programs' time (the kernel's BPF
# statistics, enabled by this script) and its reader's CPU time, per traced event.
kernel = {"redo": [], "uring": [], "psync": []}

def record(via, cmd, key):
    out = run([iolab, "trace", "record", "--via", via, "--output", "json", "-o", f"{d}/cost.trace", "--"] + cmd).stdout
    if via == "ebpf" and key:
        s = json.loads(out)
        kernel[key].append((s["kernel_ns"], s["kernel_runs"], s["reader_cpu_ns"], s["ops"] + s["async_ops"]))

def timed(cmd, via=None, key=None):
    """The program's own elapsed (s), run untraced or inside `trace record --via VIA`."""
    out = f"{d}/t.ns"
    inner = [f"{d}/timed", out] + cmd
    if via:
        record(via, inner, key)
    else:
        run(inner)
    return int(open(out).read()) / 1e9

def fio_job(engine, depth):
    return ["fio", "--name=r", f"--filename={d}/fio/f", "--size=256M", "--rw=randread", "--bs=4k",
            f"--ioengine={engine}", f"--iodepth={depth}", "--direct=1", f"--runtime={secs}", "--time_based",
            "--output-format=json", f"--output={d}/fio.json"]

def iops(cmd, via=None, key=None):
    if via:
        record(via, cmd, key)
    else:
        run(cmd)
    return json.load(open(f"{d}/fio.json"))["jobs"][0]["read"]["iops"]

vias = ["ebpf", "strace"]
cost = {k: {v: [] for v in [None] + vias} for k in ["redo", "uring", "psync"]}
for r in range(rounds):
    for v in [None] + vias:
        cost["redo"][v].append(timed(redo, v, "redo"))
        cost["uring"][v].append(iops(fio_job("io_uring", 32), v, "uring"))
        cost["psync"][v].append(iops(fio_job("psync", 1), v, "psync"))

print(f"\n### The recorders' cost ({rounds} interleaved rounds, medians)\n")
print("| workload | untraced | eBPF | eBPF's cost | strace | strace's cost |")
print("|---|---|---|---|---|---|")
for k, label, unit, hb in [("redo", f"redo-log program, {threads} threads x {redo_rounds} (elapsed)", "s", False),
                           ("uring", "fio io_uring QD32 4 KiB random read (IOPS)", "iops", True),
                           ("psync", "fio psync 4 KiB random read (IOPS)", "iops", True)]:
    fmtv = (lambda x: f"{x:.3f} s") if unit == "s" else (lambda x: f"{x:,.0f}")
    base = med(cost[k][None])
    cells = []
    for v in vias:
        m = med(cost[k][v])
        pct = ((base - m) / base if hb else (m - base) / base) * 100
        cells += [fmtv(m), f"{pct:+.1f}%"]
    print(f"| {label} | {fmtv(base)} | " + " | ".join(cells) + " |")
print("\nThe eBPF recorder's CPU time (medians over the rounds): its kernel programs (every system call on the")
print("machine passes its filter; the kernel's BPF statistics) and its reader (decoding and writing the trace):\n")
print("| workload | events recorded | kernel programs: runs, time | per run | reader CPU | per event |")
print("|---|---|---|---|---|---|")
for k, xs in kernel.items():
    if xs:
        kn, kr, rc, ev = (med([x[i] for x in xs]) for i in range(4))
        print(f"| {k} | {ev:,.0f} | {kr:,.0f}, {kn / 1e6:.1f} ms | {kn / max(kr, 1):.0f} ns | {rc / 1e6:.1f} ms | {rc / max(ev, 1):.0f} ns |")
print("\nEach round:")
for k in cost:
    for v in [None] + vias:
        print(f"- {k} {v or 'untraced'}: " + ", ".join(f"{x:.3f}" if k == "redo" else f"{x:,.0f}" for x in cost[k][v]))

# Replay: record once with each recorder, then alternate the untraced program and the replays.
fixed = ["fio", "--name=p", f"--filename={d}/fio/f", "--size=256M", "--io_size=64M", "--rw=randread", "--bs=4k",
         "--ioengine=psync", "--direct=1", "--output=/dev/null"]
progs = {"redo": redo, "fio psync 64 MiB": fixed}
for name, cmd in progs.items():
    for v in vias:
        tag = name.split()[0]
        run([iolab, "trace", "record", "--via", v, "-o", f"{d}/{tag}.{v}.trace", "--"] + cmd)
        os.makedirs(f"{d}/replay-{tag}-{v}", exist_ok=True)
        strip = f"{d}/data" if tag == "redo" else f"{d}/fio"
        run([iolab, "replay", f"{d}/{tag}.{v}.trace", "--target", f"{d}/replay-{tag}-{v}", "--strip", strip,
             "--prepare", "--timing", "afap", "--no-store", "--output", "json"])
timings = ["think", "afap", "recorded"]
res = {name: {"untraced": []} | {f"{v} {t}": [] for v in vias for t in timings} for name in progs}
for r in range(rounds):
    for name, cmd in progs.items():
        tag = name.split()[0]
        res[name]["untraced"].append(timed(cmd))
        for v in vias:
            strip = f"{d}/data" if tag == "redo" else f"{d}/fio"
            for t in timings:
                out = run([iolab, "replay", f"{d}/{tag}.{v}.trace", "--target", f"{d}/replay-{tag}-{v}", "--strip", strip,
                           "--timing", t, "--no-store", "--output", "json"]).stdout
                f = json.loads(out)["fidelity"]
                assert f["counts_equal"], f"{name} {v} {t}: counts differ"
                res[name][f"{v} {t}"].append(f["replayed_s"])
print(f"\n### Replay against the untraced program ({rounds} interleaved rounds, medians; counts equal in every replay)\n")
print("| program | untraced | " + " | ".join(f"{v} {t}" for v in vias for t in timings) + " |")
print("|---|---|" + "---|" * (len(vias) * len(timings)))
for name in progs:
    base = med(res[name]["untraced"])
    cells = [f"{med(res[name][f'{v} {t}']):.3f} s ({(med(res[name][f'{v} {t}']) / base - 1) * 100:+.1f}%)" for v in vias for t in timings]
    print(f"| {name} | {base:.3f} s | " + " | ".join(cells) + " |")
print("\nEach round:")
for name in progs:
    for k, xs in res[name].items():
        print(f"- {name} {k}: " + ", ".join(f"{x:.3f}" for x in xs))
PY
