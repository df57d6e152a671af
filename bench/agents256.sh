#!/usr/bin/env bash
# One coordinator driving N agents (default 256), each its own process on this machine, over
# MODE `join` (agents connect out: `iolab agent --join`, the coordinator `--listen --expect N`)
# or `tls` (N daemons `iolab agent --listen`, the coordinator dials each: `--node HOST:PORT`).
# One phase (a 1 MiB file, 4 KiB writes at 100 IOPS, 1 s) on every node. Prints:
#   - the start skew over every node and phase: p50, p99, max (as iolab reports it: each
#     node's first worker's run after the instant, on its own clock);
#   - the coordinator's CPU time (user + system) and peak memory (RSS, /usr/bin/time);
#   - the time from the last node's end (the phase's start + its last_done_s, on the
#     coordinator's clock) to
#     the stored run's end (runs.ended_unix_s: the aggregate saved and the run closed);
# then, with KILL=1 (default), a second run of 30 s in which one agent is killed (kill -9)
# after 3 s: how long until the coordinator ended, and how many other agents still ran 5 s
# after the kill.
#
#   bench/agents256.sh [N] [MODE] [IOLAB_BINARY]      # e.g. bench/agents256.sh 256 join target/release/iolab
set -euo pipefail
n=${1:-256}
mode=${2:-join}
bin=$(realpath "${3:-target/release/iolab}")
[ -x "$bin" ] || { echo "no iolab binary at $bin (cargo build --release -p iolab)" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (the time package)" >&2; exit 2; }
work=${KEEP:-$(mktemp -d)}
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
echo "token-$$-$RANDOM" > "$work/token"
export IOLAB_DB=$work/results.db
ulimit -n 65536 2>/dev/null || true
job=(--target f --size 1M --bs 4k --rw write --rate-iops 100 --sample-interval 0)

# Start the N agents of MODE for a coordinator; sets nodes=(--node ...) for tls.
start_agents() { # RUN_TAG JOIN_ADDR
  local tag=$1 addr=$2
  pids=(); nodes=()
  for ((i = 0; i < n; i++)); do
    local d=$work/$tag/n$i
    mkdir -p "$d"
    if [ "$mode" = join ]; then
      SLURM_PROCID=$i "$bin" agent --join "$addr" --token-file "$work/token" --allow "$d" 2>"$d.log" &
      pids+=($!)
    else
      "$bin" agent --listen 127.0.0.1:0 --token-file "$work/token" --state-dir "$work/state" \
        --allow "$d" 2>"$d.log" &
      pids+=($!)
    fi
  done
  if [ "$mode" = tls ]; then
    for ((i = 0; i < n; i++)); do
      local d=$work/$tag/n$i
      for _ in $(seq 200); do grep -q "(TLS)" "$d.log" 2>/dev/null && break; sleep 0.05; done
      local at
      at=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$d.log" | head -1)
      nodes+=(--node "n$i=$at,dir=$d")
    done
  fi
}

# One run: the coordinator under /usr/bin/time; its JSON in $work/TAG.json.
coordinate() { # TAG RUNTIME [KILL_AFTER]
  local tag=$1 runtime=$2 kill_after=${3:-}
  args=(run -o json "${job[@]}" --runtime "$runtime" --token-file "$work/token")
  if [ "$mode" = join ]; then
    /usr/bin/time -f "%U %S %M" -o "$work/$tag.time" "$bin" "${args[@]}" --listen 127.0.0.1:0 \
      --expect "$n" --join-timeout 120s >"$work/$tag.json" 2>"$work/$tag.err" &
    local c=$!
    local addr=""
    for _ in $(seq 400); do
      addr=$(sed -n 's/.*join on \([^ ]*\).*/\1/p' "$work/$tag.err" | head -1)
      [ -n "$addr" ] && break; sleep 0.05
    done
    start_agents "$tag" "$addr"
  else
    start_agents "$tag" ""
    /usr/bin/time -f "%U %S %M" -o "$work/$tag.time" "$bin" "${args[@]}" "${nodes[@]}" \
      >"$work/$tag.json" 2>"$work/$tag.err" &
    local c=$!
  fi
  if [ -n "$kill_after" ]; then
    # Once every node runs (each has its file), one agent dies.
    for _ in $(seq 1200); do
      [ "$(find "$work/$tag" -name f | wc -l)" -ge "$n" ] && break; sleep 0.1
    done
    sleep "$kill_after"
    local victim=${pids[$((n / 2))]}
    local t0
    t0=$(date +%s.%N)
    kill -9 "$victim"
    wait "$c" || true
    local t1
    t1=$(date +%s.%N)
    sleep 5
    local alive=0
    for p in "${pids[@]}"; do
      [ "$p" = "$victim" ] && continue
      if [ "$mode" = join ]; then kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); fi
    done
    python3 - "$t0" "$t1" "$alive" "$work/$tag.json" "$mode" "$work/$tag" "$((n / 2))" <<'PY'
import glob, json, os, sys
t0, t1, alive, path, mode = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
logs, victim = sys.argv[6], int(sys.argv[7])
r = json.load(open(path))
print(f"kill -9 of one agent: the coordinator ended {t1 - t0:.2f} s after it, status {r['status']}: {r.get('error','')[:120]}")
# Each other agent's log ends with "stop asked by the coordinator" and "run ... done": its last
# write is when it heard the coordinator's Stop and ended its run.
told = []
for f in glob.glob(f"{logs}/n*.log"):
    if f.endswith(f"/n{victim}.log"):
        continue
    text = open(f).read()
    if "stop asked by the coordinator" in text:
        told.append(os.stat(f).st_mtime - t0)
told.sort()
if told:
    print(f"  other agents told to stop by the coordinator: {len(told)}, after p50 {told[len(told)//2]:.2f} s, max {told[-1]:.2f} s from the kill")
else:
    print("  no other agent logged the coordinator's Stop")
if mode == "join":
    print(f"  other agents still running 5 s after the kill: {alive}")
nodes = r["phases"][0]["nodes"] if r["phases"] else []
print(f"  nodes in the stored phase: {len(nodes)}, interrupted: {sum(1 for x in nodes if x.get('interrupted'))}")
PY
  else
    wait "$c"
  fi
  if [ "$mode" = tls ]; then
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  fi
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}

coordinate run1 1s
python3 - "$work/run1.json" "$work/run1.time" "$IOLAB_DB" "$n" "$mode" <<'PY'
import json, sqlite3, sys
r = json.load(open(sys.argv[1]))
user, sys_, rss_kb = open(sys.argv[2]).read().split()[-3:]
n, mode = int(sys.argv[4]), sys.argv[5]
assert r["status"] == "complete", r.get("error")
skews = sorted(abs(x["start_skew_ns"]) / 1e6 for p in r["phases"] for x in p["nodes"])
q = lambda f: skews[min(len(skews) - 1, int(f * len(skews)))]
last = r["phases"][-1]
last_end = last["started_unix_s"] + last["last_done_s"]
db = sqlite3.connect(sys.argv[3])
ended, = db.execute("SELECT ended_unix_s FROM runs ORDER BY id DESC LIMIT 1").fetchone()
print(f"{n} agents over {mode}: {len(r['nodes'])} nodes, {len(skews)} starts")
print(f"  start skew: p50 {q(0.5):.3f} ms, p99 {q(0.99):.3f} ms, max {skews[-1]:.3f} ms")
print(f"  coordinator: CPU {float(user) + float(sys_):.2f} s (user {user}, system {sys_}), peak RSS {int(rss_kb) / 1024:.1f} MiB")
print(f"  last node's end to the stored run's end: {(ended - last_end) * 1e3:.1f} ms")
PY
if [ "${KILL:-1}" = 1 ]; then
  coordinate run2 30s 3
fi
