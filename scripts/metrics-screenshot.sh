#!/usr/bin/env bash
# The screenshot in docs/metrics.md: a real Prometheus (Debian's package) scraping a running iolab
# every second, its own UI's graph of iolab's IOPS taken with headless Chromium during the run.
# Usage: bash scripts/metrics-screenshot.sh [OUT.png]   (default docs/prometheus-iops.png)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/prometheus-iops.png}
cargo build --release -q -p iolab
bin=$PWD/target/release/iolab
work=$(mktemp -d /tmp/iolab-metrics-shot.XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
iolab_port=$(port)
prom_port=$(port)
cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: iolab
    honor_labels: true
    static_configs:
      - targets: ['127.0.0.1:$iolab_port']
EOF
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
    --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
pids+=($!)
until curl -sf "http://127.0.0.1:$prom_port/-/ready" >/dev/null; do sleep 0.2; done
# Its scrape manager takes up targets every 5 s: let it try ours before the run starts.
sleep 6
# Two phases, 2,000 reads a second then 1,000 writes a second, 20 s each.
cat >"$work/job.toml" <<EOF
[defaults]
target = "$work/f"
size = "64M"
bs = "4k"

[[phase]]
name = "read"
[[phase.job]]
rw = "randread"
runtime = "20s"
rate_iops = 2000

[[phase]]
name = "write"
[[phase.job]]
rw = "randwrite"
runtime = "20s"
rate_iops = 1000
EOF
"$bin" run "$work/job.toml" --no-store --no-progress -l config=screenshot \
    --metrics-listen "127.0.0.1:$iolab_port" --metrics-linger 30s >"$work/run.txt" 2>&1 &
pids+=($!)
sleep 40
expr='sum by (node, class) (rate(iolab_operations_total[4s]))'
url="http://127.0.0.1:$prom_port/graph?g0.expr=$(python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$expr")&g0.tab=0&g0.stacked=0&g0.show_exemplars=0&g0.range_input=1m"
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$work/chrome" --hide-scrollbars \
    --virtual-time-budget=8000 --window-size=1280,860 --screenshot="$PWD/$out" "$url" >"$work/chrome.log" 2>&1
echo "wrote $out from $url"
cat "$work/run.txt"
