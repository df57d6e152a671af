#!/usr/bin/env bash
# Start skew of one coordinator driving N agents (default 64) on this machine: `exec://` nodes,
# each its own `iolab agent --stdio` process, every phase started at one instant. Prints each
# node's start skew (its measured start minus the scheduled instant) over REPS runs of a
# 3-phase job and their p50, p99 and max; the target is p99 <= 5 ms on loopback.
#
#   bench/skew.sh [N] [REPS] [IOLAB_BINARY]
set -euo pipefail
n=${1:-64}
reps=${2:-3}
bin=${3:-target/release/iolab}
[ -x "$bin" ] || { echo "no iolab binary at $bin (cargo build --release -p iolab)" >&2; exit 2; }
bin=$(realpath "$bin")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/job.toml" <<TOML
[defaults]
target = "f"
size = "1M"
rw = "write"
runtime = "300ms"
rate_iops = 100
[[phase]]
name = "a"
[[phase.job]]
[[phase]]
name = "b"
[[phase.job]]
[[phase]]
name = "c"
[[phase.job]]
TOML
args=()
for i in $(seq 1 "$n"); do
  mkdir -p "$work/n$i"
  args+=(--node "n$i=exec://$bin,dir=$work/n$i")
done
for r in $(seq 1 "$reps"); do
  "$bin" run --no-store -o json --sample-interval 0 "${args[@]}" "$work/job.toml" 2>/dev/null > "$work/run$r.json"
done
python3 - "$work" "$reps" "$n" <<'PY'
import json, sys
work, reps, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
skews = []
for r in range(1, reps + 1):
    d = json.load(open(f"{work}/run{r}.json"))
    assert d["status"] == "complete", d.get("error")
    for p in d["phases"]:
        assert len(p["nodes"]) == n
        skews += [abs(x["start_skew_ns"]) / 1e6 for x in p["nodes"]]
skews.sort()
q = lambda f: skews[min(len(skews) - 1, int(f * len(skews)))]
print(f"nodes {n}, starts {len(skews)}: |skew| p50 {q(0.5):.3f} ms, p99 {q(0.99):.3f} ms, max {skews[-1]:.3f} ms")
PY
