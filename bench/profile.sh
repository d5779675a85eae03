#!/bin/bash
# Where the time of uncached pages goes, per page kind of the crawler mix (bench/crawler.sh).
#
# Serves REPO with a release cgitd; for each kind (commit, diff, tree, plain, log) a wrk run
# over distinct URLs of that kind only, while `perf record` samples cgitd; then the samples'
# self time is put into buckets by symbol: inflating (zlib, libdeflate), delta resolution,
# diffing, tree and commit decoding, object lookup, HTML/escaping and rendering, allocation,
# compression, hashing, the kernel (syscalls, page faults, network) and the rest.
#
# usage: bench/profile.sh [REPO]     (default: the corpus bench/compare.sh builds)
# env:   DUR=6 (seconds per kind), CONNS=8, CGITD=path, PORT=8482, STATE=/tmp/cgitd-profile
# Needs perf (Debian's linux-perf). Only 127.0.0.1 is contacted; every run is bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DUR=${DUR:-6}; CONNS=${CONNS:-8}; PORT=${PORT:-8482}; STATE=${STATE:-/tmp/cgitd-profile}
mkdir -p "$STATE"
REPO=${1:-/tmp/cgitd-bench/corpus.git}
REPO=$(cd "$REPO" && pwd)
command -v perf >/dev/null || { apt-get update -qq && apt-get install -y -q linux-perf >/dev/null; }
CGITD=${CGITD:-}
if [ -z "$CGITD" ]; then cargo build --release --locked -q; CGITD=./target/release/cgitd; fi

# The crawler's URL list, split by kind.
DUR=1 URLS=${URLS:-100000} ONLY=cgitd CGITD=$CGITD STATE=$STATE/crawl bench/crawler.sh "$REPO" > /dev/null
for kind in commit diff tree plain log; do grep "^/git/$kind/" "$STATE/crawl/urls.txt" > "$STATE/$kind.txt" || true; done

printf 'virtual-root=/\nrepo.url=git\nrepo.path=%s\n' "$REPO" > "$STATE/cgitrc"
"$CGITD" serve --config "$STATE/cgitrc" --listen 127.0.0.1:$PORT > "$STATE/cgitd.out" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.1; done

cat > "$STATE/buckets.py" <<'PY'
import re, sys
# (bucket, pattern over the symbol); the first match wins.
BUCKETS = [
    ("inflate", r"inflate|zlib|adler32|crc32(?!_gzip)|libdeflate|deflate_decompress|build_decode_table"),
    ("delta", r"delta|apply_delta|gix_pack::data::entry|decode_entry|resolve"),
    ("diff", r"imara|gix_diff|histogram|myers|diff::lines|diff::blobs|intern"),
    ("decode", r"gix_object|decode|from_bytes|parse|tree::|commit::"),
    ("lookup", r"gix_pack::index|lookup|find_object|gix_odb|bsearch|binary_search"),
    ("render", r"askama|escape|html|render|fmt::|write_str|format"),
    ("alloc", r"malloc|free|realloc|memcpy|memmove|alloc|mi_|__libc_calloc"),
    # (ISA-L's assembly: `..@` labels are NASM's, its only user here)
    ("compress", r"brotli|zstd|deflate|gzip|isal|_icf|\.\.@|heapify|crc32_gzip"),
    ("hash", r"sha1|sha256|hash|siphash"),
    ("kernel", r"\[k\]|entry_SYSCALL|do_syscall|page_fault|copy_user|tcp_|__x64"),
]
totals, total = {}, 0.0
for line in sys.stdin:
    m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[(.)\]\s+(.*)", line)
    if not m:
        continue
    pct, dso, kind, sym = float(m.group(1)), m.group(2), m.group(3), m.group(4)
    text = f"[{kind}] {dso} {sym}"
    bucket = next((b for b, p in BUCKETS if re.search(p, text, re.I)), "other")
    totals[bucket] = totals.get(bucket, 0.0) + pct
    total += pct
order = [b for b, _ in BUCKETS] + ["other"]
print(" ".join(f"{b} {totals.get(b, 0.0):.0f}%" for b in order if totals.get(b, 0.0) >= 0.5))
PY

walk_script "$STATE/walk.lua"

echo "repository: $REPO; ${DUR}s per kind, $CONNS connections, distinct URLs"
for kind in commit diff tree plain log; do
    [ -s "$STATE/$kind.txt" ] || continue
    perf record -q -F 499 -g -p "$PID" -o "$STATE/$kind.perf" -- sleep "$DUR" 2> /dev/null &
    rec=$!
    wrk -t1 -c"$CONNS" -d"${DUR}s" -s "$STATE/walk.lua" "http://127.0.0.1:$PORT" -- "$STATE/$kind.txt" > "$STATE/$kind.wrk" 2>&1 || true
    wait "$rec" || true
    rate=$(awk '/Requests\/sec/ {printf "%.0f", $2}' "$STATE/$kind.wrk")
    split=$(perf report -i "$STATE/$kind.perf" --stdio --no-children --sort dso,sym -g none 2>/dev/null | python3 "$STATE/buckets.py")
    printf '%-7s %6s pages/s  %s\n' "$kind" "$rate" "$split"
done
