#!/usr/bin/env bash
# What iolab's system sampler costs: `iolab watch` does exactly what the sampler does beside a
# run (read /proc/stat, diskstats, net/dev, meminfo, pressure/io, loadavg; compute rates), so
# its CPU time over wall time is the sampler's share of one CPU. Targets: under 0.5% of one
# CPU at 1 s, under 2% at 100 ms.
# Usage: bash bench/sampler-overhead.sh [SECONDS]   (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
cargo build --release -q -p iolab
bin=target/release/iolab
python3 - "$bin" "$secs" <<'PY'
import resource, subprocess, sys, time
binary, secs = sys.argv[1], float(sys.argv[2])
for interval in (1.0, 0.1):
    count = int(secs / interval)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    subprocess.run([binary, "watch", "/var/tmp", "--interval", f"{interval}s", "--count", str(count), "--output", "json"],
                   stdout=subprocess.DEVNULL, check=True)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    target = 0.5 if interval >= 1.0 else 2.0
    pct = 100.0 * cpu / wall
    print(f"interval {interval*1000:.0f} ms: {count} samples in {wall:.1f} s, CPU {cpu*1000:.1f} ms = {pct:.3f}% of one CPU "
          f"(target < {target}%): {'PASS' if pct < target else 'FAIL'}")
PY
