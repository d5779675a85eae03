#!/bin/bash
# fuzz.sh — runs every cargo-fuzz target (fuzz/fuzz_targets) for SECONDS_EACH seconds, seeded from
# fuzz/seeds/TARGET, and prints per target the runs made, the corpus size and whether it
# found a crash (artifacts are kept in fuzz/artifacts/TARGET). Needs a nightly toolchain and
# cargo-fuzz (`cargo install cargo-fuzz`). Built without a sanitizer (`-s none`): ISA-L's C build
# cannot configure under AddressSanitizer, and what is fuzzed here is safe Rust, where a bug
# shows as a panic, which libFuzzer catches without one.
#
# Usage: bench/fuzz.sh [TARGET...]   (default: all)
# Settings: SECONDS_EACH=600, JOBS=1 (parallel fuzzing processes per target).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
SECONDS_EACH=${SECONDS_EACH:-600}
JOBS=${JOBS:-1}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo +nightly fuzz list)
for t in "${targets[@]}"; do cargo +nightly fuzz build -O -s none "$t"; done
printf '%-12s %10s %8s %s\n' target runs corpus result
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "seeds/$t"
    log=$(mktemp)
    status=0
    parallel=(); [ "$JOBS" = 1 ] || parallel=(-fork="$JOBS")
    cargo +nightly fuzz run -O -s none "$t" "corpus/$t" "seeds/$t" -- \
        -max_total_time="$SECONDS_EACH" "${parallel[@]}" -rss_limit_mb=4096 -timeout=10 \
        > "$log" 2>&1 || status=$?
    runs=$(grep -oE '#[0-9]+' "$log" | tail -1 | tr -d '#')
    result=clean; [ "$status" = 0 ] || result="FOUND (exit $status, see fuzz/artifacts/$t)"
    printf '%-12s %10s %8s %s\n' "$t" "${runs:-?}" "$(ls "corpus/$t" | wc -l)" "$result"
    [ "$status" = 0 ] || tail -30 "$log"
    rm -f "$log"
done
