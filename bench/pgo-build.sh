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
cat > "$STATE/walk.lua" <<'LUA'
local urls = {}
function init(args) for line in io.lines(args[1]) do urls[#urls + 1] = line end; n = 0 end
function request() n = n + 1; return wrk.format("GET", urls[((n - 1) % #urls) + 1]) end
LUA

printf 'virtual-root=/\nrepo.url=git\nrepo.path=%s\n' "$REPO" > "$STATE/cgitrc"
"$instrumented" serve --config "$STATE/cgitrc" --listen 127.0.0.1:$PORT > "$STATE/cgitd.out" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.1; done
echo "training for ${TRAIN}s..." >&2
wrk -t1 -c8 -d"${TRAIN}s" --timeout 10s -s "$STATE/walk.lua" "http://127.0.0.1:$PORT" -- "$STATE/train.txt" >&2 || true
# ctrl-c is a graceful stop: the process exits normally and writes its counts.
kill -INT "$pid"
wait "$pid" || true
"$profdata" merge -o "$STATE/merged.profdata" "$STATE/profiles"

echo "optimised build..." >&2
RUSTFLAGS="-Cprofile-use=$STATE/merged.profdata" \
    cargo build --release --locked -q --target-dir "$STATE/target-use"
echo "$STATE/target-use/release/cgitd"
