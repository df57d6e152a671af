#!/usr/bin/env bash
# What live metrics cost (issue 30): 4 KiB psync random reads from a file in page cache, with
# --metrics-listen and a scraper GETting /metrics every second, against the same run without
# the endpoint; rounds interleaved (with, without, without, with, ...), medians compared.
# Target: within 1%. Also compares iolab's own CPU time per operation (all its threads: the
# workers, the coordinating thread that feeds the board, the endpoint's thread), which competing
# load on a shared machine disturbs less than IOPS, and prints how long a scrape takes.
# Usage: bash bench/metrics.sh [ROUNDS] [SECONDS]   (default 7 rounds of 5 s)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
secs=${2:-5}
cargo build --release -q -p iolab
bin=$PWD/target/release/iolab
dir=$(mktemp -d /dev/shm/iolab-metrics-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$bin" run --target "$dir/rr" --size 1G --rw randread --bs 4k --runtime 1s --no-store --no-progress -o json >/dev/null
python3 - "$bin" "$dir/rr" "$rounds" "$secs" <<'PY'
import json, socket, statistics, subprocess, sys, threading, time, urllib.request
binary, target, rounds, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
base = [binary, "run", "--target", target, "--size", "1G", "--rw", "randread", "--bs", "4k",
        "--engine", "psync", "--runtime", f"{secs}s", "--no-store", "--no-progress", "-o", "json"]

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

endpoint_cpu = []  # (CPU seconds of the endpoint's thread, seconds it ran) per run

def thread_cpu(pid, name):
    """CPU time of the process's thread called `name`, in seconds, from schedstat's ns (None if gone)."""
    import glob
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            if open(f"{task}/comm").read().strip() == name:
                return int(open(f"{task}/schedstat").read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            pass
    return None

def run(metrics):
    scrapes = []
    cmd = list(base)
    stop = threading.Event()
    if metrics:
        port = free_port()
        cmd += ["--metrics-listen", f"127.0.0.1:{port}", "--metrics-linger", "0s"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if metrics:
        def scrape():
            t0, last = time.monotonic(), None
            while not stop.wait(1.0):
                t = time.perf_counter()
                try:
                    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read()
                    scrapes.append((time.perf_counter() - t, len(body)))
                except OSError:
                    pass
                c = thread_cpu(proc.pid, "iolab-metrics")
                if c is not None:
                    last = (c, time.monotonic() - t0)
            if last:
                endpoint_cpu.append(last)
        scraper = threading.Thread(target=scrape, daemon=True)
        scraper.start()
    out, _ = proc.communicate()
    stop.set()
    if metrics:
        scraper.join()
    if proc.returncode != 0:
        sys.exit(f"iolab failed: {proc.returncode}")
    p = json.loads(out)["phases"][0]
    ops = p["total"]["read"]["ops"]
    return p["total"]["read"]["iops"], (p["cpu"]["user_s"] + p["cpu"]["system_s"]) / ops * 1e9, scrapes

with_m, without, cpu_with, cpu_without, all_scrapes = [], [], [], [], []
for r in range(rounds):
    order = (True, False) if r % 2 == 0 else (False, True)
    for m in order:
        iops, cpu, scrapes = run(m)
        (with_m if m else without).append(iops)
        (cpu_with if m else cpu_without).append(cpu)
        all_scrapes += scrapes
mw, mo = statistics.median(with_m), statistics.median(without)
ratio = mw / mo
print(f"4 KiB psync random reads from page cache, {rounds} interleaved rounds of {secs} s each way")
print(f"  without the endpoint: median {mo:,.0f} IOPS  {sorted(round(x) for x in without)}")
print(f"  with a scrape a second: median {mw:,.0f} IOPS  {sorted(round(x) for x in with_m)}")
print(f"  with/without: {ratio:.4f} ({(ratio - 1) * 100:+.2f}%), target within 1%: {'PASS' if abs(ratio - 1) <= 0.01 else 'FAIL'}")
cw, co = statistics.median(cpu_with), statistics.median(cpu_without)
print(f"  iolab's CPU per operation: {co:.1f} ns without, {cw:.1f} ns with ({(cw / co - 1) * 100:+.2f}%)")
if endpoint_cpu:
    cpu, secs = sum(c for c, _ in endpoint_cpu), sum(s for _, s in endpoint_cpu)
    print(f"  the endpoint's thread: {cpu * 1e3:.1f} ms of CPU over {secs:.0f} s of runs ({cpu / secs * 100:.3f}% of one CPU)")
if all_scrapes:
    t = sorted(s[0] for s in all_scrapes)
    print(f"  {len(t)} scrapes: median {statistics.median(t) * 1e3:.2f} ms, max {t[-1] * 1e3:.2f} ms, "
          f"{statistics.median(s[1] for s in all_scrapes):,.0f} bytes each")
PY
