#!/usr/bin/env bash
# Start skew of one coordinator driving N agents (default 64) on this machine: `exec://` nodes,
# each its own `iolab agent --stdio` process, every phase started at one instant. Prints the
# distribution of each node's start skew (as the binary reports it: since issue 9's fix, the
# node's actual start, where its phase's clock began, minus the instant it was given, both on
# the node's own clock) over REPS runs of a 3-phase job: p50, p99 and max. The target is
# p99 <= 5 ms on loopback.
#
# With several binaries, their runs alternate (1st of each, 2nd of each, ...) so that a
# machine whose load changes treats them alike, and each gets its own line.
#
#   bench/skew.sh [N] [REPS] [IOLAB_BINARY...]
set -euo pipefail
n=${1:-64}
reps=${2:-3}
shift 2 || true
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=(target/release/iolab)
for i in "${!bins[@]}"; do
  [ -x "${bins[$i]}" ] || { echo "no iolab binary at ${bins[$i]} (cargo build --release -p iolab)" >&2; exit 2; }
  bins[$i]=$(realpath "${bins[$i]}")
done
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
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$reps"); do
  for b in "${!bins[@]}"; do
    args=()
    for i in $(seq 1 "$n"); do
      mkdir -p "$work/n$i"
      args+=(--node "n$i=exec://${bins[$b]},dir=$work/n$i")
    done
    "${bins[$b]}" run --no-store -o json --sample-interval 0 "${args[@]}" "$work/job.toml" 2>/dev/null > "$work/run$b-$r.json"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
for b in "${!bins[@]}"; do
  python3 - "$work" "$reps" "$n" "$b" "${bins[$b]}" <<'PY'
import json, sys
work, reps, n, b, name = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
skews = []
for r in range(1, reps + 1):
    d = json.load(open(f"{work}/run{b}-{r}.json"))
    assert d["status"] == "complete", d.get("error")
    for p in d["phases"]:
        assert len(p["nodes"]) == n
        skews += [abs(x["start_skew_ns"]) / 1e6 for x in p["nodes"]]
skews.sort()
q = lambda f: skews[min(len(skews) - 1, int(f * len(skews)))]
print(f"{name}: nodes {n}, starts {len(skews)}: |skew| p50 {q(0.5):.3f} ms, p99 {q(0.99):.3f} ms, max {skews[-1]:.3f} ms")
PY
done
