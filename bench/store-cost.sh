#!/usr/bin/env bash
# What saving a run as it goes costs the run: page-cache 4 KiB random reads, THREADS threads,
# SECS seconds, with --no-store, into an SQLite file, and into a PostgreSQL database on a local
# server this script starts (initdb in a scratch directory, as nobody when root), interleaved
# ROUNDS times; the medians of IOPS and each store's as % of --no-store. Target: each store
# >= 97% of --no-store. A missed target prints FAIL; the exit status is non-zero only when
# something could not be run.
#
#   bash bench/store-cost.sh
#   ROUNDS=3 SECS=5 bash bench/store-cost.sh      # a quicker look
set -euo pipefail

ROUNDS=${ROUNDS:-5}
SECS=${SECS:-10}
THREADS=${THREADS:-4}
TARGET_PCT=${TARGET_PCT:-97}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
die() { echo "store-cost.sh: $*" >&2; exit 1; }
command -v python3 >/dev/null || die "python3 is needed to read JSON output"
bin=${IOLAB_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[[ -x $bin/postgres ]] || die "no PostgreSQL binaries (install postgresql, or set IOLAB_PG_BIN)"

scratch=$(mktemp -d /tmp/iolab-store-cost.XXXXXX)
pg_pid=
cleanup() {
    if [[ -n $pg_pid ]]; then kill -INT "$pg_pid" 2>/dev/null || true; sleep 1; fi
    rm -rf "$scratch"
}
trap cleanup EXIT

as_pg=()
if [[ $(id -u) == 0 ]]; then
    chown nobody: "$scratch"
    as_pg=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
fi
echo bench > "$scratch/pw"
[[ $(id -u) == 0 ]] && chown nobody "$scratch/pw"
"${as_pg[@]}" "$bin/initdb" -N -U iolab --auth=scram-sha-256 --pwfile="$scratch/pw" -E UTF8 --locale=C \
    -D "$scratch/data" >/dev/null || die "initdb failed"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${as_pg[@]}" "$bin/postgres" -D "$scratch/data" -k "$scratch" -p "$port" -c listen_addresses=127.0.0.1 \
    >"$scratch/log" 2>&1 &
pg_pid=$!
for _ in $(seq 100); do
    PGPASSWORD=bench "$bin/psql" -h 127.0.0.1 -p "$port" -U iolab -d postgres -qc 'CREATE DATABASE results' \
        >/dev/null 2>&1 && break
    sleep 0.1
done
url="postgres://iolab:bench@127.0.0.1:$port/results?sslmode=disable"

cargo build --release -q -p iolab
iolab=$root/target/release/iolab
mkdir -p "$scratch/d"
"$iolab" run --target "$scratch/d/f" --size 256M --rw write --bs 1M --no-store --output json >/dev/null

iops() {
    "$iolab" run --target "$scratch/d/f" --size 256M --rw randread --bs 4k --threads "$THREADS" \
        --runtime "${SECS}s" --no-progress --output json "$@" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["phases"][0]["total"]["read"]["iops"])'
}

declare -A got
for r in $(seq "$ROUNDS"); do
    a=$(iops --no-store)
    b=$(iops --db "$scratch/results.db")
    c=$(iops --db "$url")
    got[none]+="$a " got[sqlite]+="$b " got[postgres]+="$c "
    printf 'round %s: --no-store %.0f, sqlite %.0f, postgres %.0f IOPS\n' "$r" "$a" "$b" "$c"
done

python3 - "$TARGET_PCT" "${got[none]}" "${got[sqlite]}" "${got[postgres]}" <<'EOF'
import statistics, sys
target = float(sys.argv[1])
none, sqlite, pg = ([float(x) for x in a.split()] for a in sys.argv[2:5])
base = statistics.median(none)
print(f"--no-store  median {base:,.0f} IOPS")
for name, xs in (("sqlite", sqlite), ("postgres", pg)):
    m = statistics.median(xs)
    pct = 100 * m / base
    verdict = "ok" if pct >= target else "FAIL"
    print(f"{name:<10}  median {m:,.0f} IOPS  {pct:.1f}% of --no-store  (target >= {target:.0f}%: {verdict})")
EOF
runs=$("$iolab" runs --db "$url" --output json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
echo "postgres holds $runs run(s), as many as were recorded into it ($ROUNDS)"
