#!/usr/bin/env bash
# What live metrics cost (issue 30): 4 KiB psync random reads from a file in page cache, with
# --metrics-listen and a scraper GETting /metrics every second, against the same run without
# the endpoint; rounds interleaved (with, without, without, with, ...), medians compared.
# Target: within 1%. Also prints how long a scrape takes (the endpoint renders at each GET).
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

def run(metrics):
    scrapes = []
    cmd = list(base)
    stop = threading.Event()
    if metrics:
        port = free_port()
        cmd += ["--metrics-listen", f"127.0.0.1:{port}", "--metrics-linger", "0s"]
        def scrape():
            while not stop.wait(1.0):
                t = time.perf_counter()
                try:
                    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read()
                    scrapes.append((time.perf_counter() - t, len(body)))
                except OSError:
                    pass
        threading.Thread(target=scrape, daemon=True).start()
    out = subprocess.run(cmd, capture_output=True, check=True).stdout
    stop.set()
    return json.loads(out)["phases"][0]["total"]["read"]["iops"], scrapes

with_m, without, all_scrapes = [], [], []
for r in range(rounds):
    order = (True, False) if r % 2 == 0 else (False, True)
    for m in order:
        iops, scrapes = run(m)
        (with_m if m else without).append(iops)
        all_scrapes += scrapes
mw, mo = statistics.median(with_m), statistics.median(without)
ratio = mw / mo
print(f"4 KiB psync random reads from page cache, {rounds} interleaved rounds of {secs} s each way")
print(f"  without the endpoint: median {mo:,.0f} IOPS  {sorted(round(x) for x in without)}")
print(f"  with a scrape a second: median {mw:,.0f} IOPS  {sorted(round(x) for x in with_m)}")
print(f"  with/without: {ratio:.4f} ({(ratio - 1) * 100:+.2f}%), target within 1%: {'PASS' if abs(ratio - 1) <= 0.01 else 'FAIL'}")
if all_scrapes:
    t = sorted(s[0] for s in all_scrapes)
    print(f"  {len(t)} scrapes: median {statistics.median(t) * 1e3:.2f} ms, max {t[-1] * 1e3:.2f} ms, "
          f"{statistics.median(s[1] for s in all_scrapes):,.0f} bytes each")
PY
