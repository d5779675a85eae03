#!/bin/bash
# A release build of cgitd optimised with a profile of its own work (PGO): an instrumented
# build serves REPO while wrk walks distinct URLs of the crawler's mix (bench/crawler.sh) and a
# few repeated pages; the counts it writes at exit steer a second build's inlining and layout.
#
# The training URLs are the last ones of the crawler's list, which a crawl of up to a minute
# never reaches, so the pages a benchmark asks for are not the ones trained on.
#
# usage: bench/pgo-build.sh [REPO]   (default: the corpus bench/compare.sh builds)
#        prints the optimised binary's path last
# env:   TRAIN=30 (seconds of training), STATE=/tmp/cgitd-pgo, PORT=8483
# Needs rustup's llvm-tools (installed if missing). Only 127.0.0.1 is contacted.
set -euo pipefail
cd "$(dirname "$0")/.."
TRAIN=${TRAIN:-30}; STATE=${STATE:-/tmp/cgitd-pgo}; PORT=${PORT:-8483}
. bench/lib.sh
REPO=$(bench_repo "${1:-}")
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -q wrk >/dev/null; }
sysroot=$(rustc --print sysroot)
profdata=$(find "$sysroot" -name llvm-profdata -type f | head -1)
if [ -z "$profdata" ]; then
    rustup component add llvm-tools >&2
    profdata=$(find "$sysroot" -name llvm-profdata -type f | head -1)
fi
rm -rf "$STATE/profiles"
mkdir -p "$STATE/profiles"

echo "instrumented build..." >&2
RUSTFLAGS="-Cprofile-generate=$STATE/profiles" \
    cargo build --release --locked -q --target-dir "$STATE/target-generate"
instrumented=$STATE/target-generate/release/cgitd

# The crawler's list, then its last 40,000 URLs and the repeated pages, as wrk will walk them.
# What was counted so far (the build scripts, instrumented too) is dropped.
DUR=1 ONLY=cgitd CGITD=$instrumented STATE=$STATE/crawl bench/crawler.sh "$REPO" > /dev/null
rm -rf "$STATE/profiles"/*
tail -n 40000 "$STATE/crawl/urls.txt" > "$STATE/train.txt"
for page in / /git/ /git/refs/ /git/log/ /git/tree/ /git/atom/ /git/patch/ /git/commit/ /git/diff/; do
    for _ in $(seq 200); do echo "$page"; done
done >> "$STATE/train.txt"
shuf --random-source=<(yes) "$STATE/train.txt" -o "$STATE/train.txt"
walk_script "$STATE/walk.lua"

printf 'virtual-root=/\nrepo.url=git\nrepo.path=%s\n' "$REPO" > "$STATE/cgitrc"
ONLY=cgitd; CGITD=$instrumented; CGITD_PORT=$PORT
start_systems "$REPO" /dev/null "$STATE/cgitrc"
echo "training for ${TRAIN}s..." >&2
wrk -t1 -c8 -d"${TRAIN}s" --timeout 10s -s "$STATE/walk.lua" "http://127.0.0.1:$PORT" -- "$STATE/train.txt" >&2 || true
# A graceful stop: the process exits normally and writes its counts.
kill -TERM "$CGITD_PID"
wait "$CGITD_PID" || true
"$profdata" merge -o "$STATE/merged.profdata" "$STATE/profiles"

echo "optimised build..." >&2
RUSTFLAGS="-Cprofile-use=$STATE/merged.profdata" \
    cargo build --release --locked -q --target-dir "$STATE/target-use"
echo "$STATE/target-use/release/cgitd"
