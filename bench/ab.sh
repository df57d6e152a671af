#!/usr/bin/env bash
# Two iolab builds against each other, interleaved, on the overhead cases that measure iolab's
# own per-operation cost: a. 4 KiB psync random reads from a file in page cache, b. 4 KiB psync
# writes to /dev/null, c. io_uring QD32 random reads. Medians of ROUNDS runs of SECS seconds.
# For a refactor's "no worse than before": build the old commit elsewhere and pass both.
#
#   git worktree add /tmp/old <commit> && (cd /tmp/old && cargo build --release -p iolab)
#   bash bench/ab.sh /tmp/old/target/release/iolab target/release/iolab
set -euo pipefail
old=${1:?usage: ab.sh OLD_IOLAB NEW_IOLAB}
new=${2:?usage: ab.sh OLD_IOLAB NEW_IOLAB}
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-3}
dir=/dev/shm/iolab-ab
rm -rf "$dir"; mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
file=$dir/rr
"$new" run --target "$file" --size 1G --rw randread --bs 4k --runtime 1s --no-store --no-progress --output json >/dev/null

iops() { # BIN CLASS ARGS... -> IOPS of the first phase's CLASS
    local bin=$1 class=$2; shift 2
    "$bin" run "$@" --runtime "${SECS}s" --no-store --no-progress --output json \
        | python3 -c "import json,sys; print(json.load(sys.stdin)['phases'][0]['total']['$class']['iops'])"
}
median() { python3 -c "import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }

declare -A cases=(
    [a]="read --target $file --size 1G --rw randread --bs 4k --engine psync"
    [b]="write --target /dev/null --device --size 1G --rw randwrite --bs 4k --engine psync"
    [c]="read --target $file --size 1G --rw randread --bs 4k --engine io_uring --iodepth 32"
)
printf "%-4s %12s %12s %8s\n" case old new new/old
for c in a b c; do
    read -r class args <<<"${cases[$c]}"
    o=(); n=()
    for ((r = 1; r <= ROUNDS; r++)); do
        # shellcheck disable=SC2086
        if ((r % 2)); then o+=("$(iops "$old" "$class" $args)"); n+=("$(iops "$new" "$class" $args)")
        else n+=("$(iops "$new" "$class" $args)"); o+=("$(iops "$old" "$class" $args)"); fi
    done
    mo=$(median "${o[@]}"); mn=$(median "${n[@]}")
    printf "%-4s %12.0f %12.0f %8.3f   (old: %s; new: %s)\n" "$c" "$mo" "$mn" "$(python3 -c "print($mn/$mo)")" "${o[*]}" "${n[*]}"
done
