#!/usr/bin/env bash
# Fuzz every cargo-fuzz target for SECONDS each (default 60), starting from its kept corpus in
# fuzz/corpus/<target>. Fails (exit 1) if any target crashes, panics, leaks past libFuzzer's
# memory limit or hangs; the input that did it is left in fuzz/artifacts/<target>/ and printed.
# The kept corpora never change: each target runs on a temporary copy, so what a run discovers
# is thrown away (merge it by hand with `cargo fuzz cmin` if it is worth keeping).
#
#   fuzz/run.sh            # 60 s per target
#   fuzz/run.sh 10 units   # 10 s, one target
#
# Needs cargo-fuzz (`cargo install cargo-fuzz --version 0.13.2 --locked`). The stable toolchain
# builds the sanitizer flags with RUSTC_BOOTSTRAP=1; no nightly is needed.
set -euo pipefail
cd "$(dirname "$0")"

secs=${1:-60}
shift || true
case "$secs" in
  '' | *[!0-9]*) echo "usage: fuzz/run.sh [SECONDS] [TARGET...]" >&2; exit 2 ;;
esac
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "cargo-fuzz is not installed: cargo install cargo-fuzz --version 0.13.2 --locked" >&2
  exit 2
fi
export RUSTC_BOOTSTRAP=1

# The largest input worth trying, per target: about the size of the real thing it parses.
max_len() {
  case "$1" in
    units) echo 64 ;;
    job_file) echo 2048 ;;
    fio_job) echo 2048 ;;
    scenario_file) echo 2048 ;;
    procfs) echo 4096 ;;
    histogram) echo 8192 ;;
    strace) echo 8192 ;;
    strace_ff) echo 8192 ;;
    cluster) echo 4096 ;;
    journal) echo 8192 ;;
    bpf_events) echo 16384 ;;
    trace_file) echo 8192 ;;
    cli_args) echo 512 ;;
    *) echo 4096 ;;
  esac
}

if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo fuzz list)
fi

start=$(date +%s)
cargo fuzz build -O --debug-assertions
echo "fuzz: built the targets in $(($(date +%s) - start)) s"
if ! git diff --quiet -- Cargo.lock 2>/dev/null; then
  echo "fuzz: fuzz/Cargo.lock was out of date and cargo updated it; commit the new one"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=()
for t in "${targets[@]}"; do
  mkdir -p "$work/$t" "artifacts/$t"
  if [ -d "corpus/$t" ]; then
    cp -r "corpus/$t/." "$work/$t/"
  fi
  t0=$(date +%s)
  # -timeout: one input taking 10 s is a hang. -rss_limit_mb (libFuzzer's default, 2048, also
  # its malloc limit) catches an allocation sized from a length the input claims.
  if cargo fuzz run -O --debug-assertions "$t" "$work/$t" -- \
    -max_total_time="$secs" -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 >"$work/$t.log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log" | tail -1)
    echo "fuzz: $t: ${runs:-?} inputs in $(($(date +%s) - t0)) s, no crash"
  else
    echo "fuzz: $t FAILED after $(($(date +%s) - t0)) s; the end of its log:"
    tail -n 60 "$work/$t.log" | cut -c1-300
    failed+=("$t")
  fi
done

echo "fuzz: ${#targets[@]} targets, $((${#targets[@]} - ${#failed[@]})) passed, ${#failed[@]} failed, in $(($(date +%s) - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]}; reproduce with: cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run -O --debug-assertions TARGET artifacts/TARGET/<file>" >&2
  exit 1
fi
