#!/usr/bin/env bash
# Data validation's cost on the application workloads (issue 12: "the application workloads and
# replays can validate"): each personality with and without --verify, interleaved round by round,
# in the page cache (/dev/shm, where validation's CPU cost shows most), release build. Printed:
# each case's median figure and verify/plain.
#
#   postmark   PostMark, 2,000 files, 20,000 transactions: transactions_per_s
#   varmail    filebench's varmail, 1,000 files, 16 threads, SECS s: flowops per s
#   maildir    delivery, 4 threads, SECS s: messages_per_min
#
#   bash bench/verify-apps.sh
#   ROUNDS=3 SECS=3 bash bench/verify-apps.sh
set -euo pipefail

ROUNDS=${ROUNDS:-5}
SECS=${SECS:-3}
CASES=${CASES:-"postmark varmail maildir"}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
command -v python3 >/dev/null || { echo "verify-apps.sh: python3 is needed to read JSON output" >&2; exit 1; }
cargo build --release -q -p iolab
iolab=$root/target/release/iolab
dir=/dev/shm/iolab-bench-verify-apps
out=$(mktemp -d)
trap 'rm -rf "$dir" "$out"' EXIT

args_of() {
    case $1 in
        postmark) echo "--number 2000 --transactions 20000" ;;
        varmail) echo "--nfiles 1000 --threads 16 --runtime ${SECS}s" ;;
        maildir) echo "--threads 4 --runtime ${SECS}s --discard 0s" ;;
    esac
}
figure_of() {
    case $1 in
        postmark) echo transactions_per_s ;;
        varmail) echo flowops ;;
        maildir) echo messages_per_min ;;
    esac
}

for r in $(seq 1 "$ROUNDS"); do
    for c in $CASES; do
        for v in plain verify; do
            rm -rf "$dir"; mkdir -p "$dir"
            flag=""; [ "$v" = verify ] && flag="--verify"
            # shellcheck disable=SC2046
            "$iolab" run --workload "$c" --target "$dir" $(args_of "$c") $flag \
                --output json --no-store --no-progress > "$out/$c.$v.$r.json"
        done
    done
done

python3 - "$out" "$ROUNDS" "$CASES" <<'PY'
import json, statistics, sys
out, rounds, cases = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
fig = {"postmark": "transactions_per_s", "varmail": "flowops", "maildir": "messages_per_min"}
for c in cases:
    med = {}
    for v in ("plain", "verify"):
        xs = []
        for r in range(1, rounds + 1):
            d = json.load(open(f"{out}/{c}.{v}.{r}.json"))
            w = d["phases"][0]["workload"]
            x = w[fig[c]]
            if c == "varmail":
                x = x / w["elapsed_s"]
            xs.append(x)
        med[v] = statistics.median(xs)
        print(f"{c:9} {v:7} {fig[c] if c != 'varmail' else 'flowops_per_s':20} median {med[v]:12.1f}  rounds {' '.join(f'{x:.0f}' for x in xs)}")
    print(f"{c:9} verify/plain {med['verify'] / med['plain']:.3f}")
PY
