#!/bin/bash
# cgitd with enable-esi=1 and Debian's cgit, each behind its own varnishd on loopback, serving one
# repository under ten fork names. Prints pages/s (1) when everything is cached and (2) in the
# crawler pattern across forks: every request a different (fork, commit) page, so frames are
# uncached while cgitd's diff fragments, fetched once through fork0, are Varnish hits.
#
# usage: bench/esi.sh [REPO]     (default: the corpus bench/compare.sh builds)
# env:   TDUR=5 seconds per run, IDS=500 commits
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
TDUR=${TDUR:-5}; IDS=${IDS:-500}
STATE=${STATE:-/tmp/cgitd-bench-esi}
CGIT_PORT=8181; CGITD_PORT=8182; VCGIT=8191; VCGITD=8192
mkdir -p "$STATE"
REPO=${1:-/tmp/cgitd-bench/corpus.git}
[ -d "$REPO" ] || python3 bench/make-corpus.py "$REPO"
REPO=$(cd "$REPO" && pwd)
BASELINE=$ROOT/../shared/tools/cgit-baseline.sh
cargo build --release --locked -q

forks=""; for i in $(seq 1 9); do forks="${forks}repo.url=fork$i
repo.path=$REPO
"; done
printf '%s' "$forks" > "$STATE/forks.rc"
PORT=$CGIT_PORT CGIT_REPO=$REPO CGIT_REPO_URL=fork0 CGIT_STATE=$STATE/cgit CGIT_RC_EXTRA=$STATE/forks.rc "$BASELINE" start
{ echo "enable-esi=1"; echo "virtual-root=/"; echo "repo.url=fork0"; echo "repo.path=$REPO"; printf '%s' "$forks"; } > "$STATE/cgitrc"
./target/release/cgitd serve --config "$STATE/cgitrc" --listen 127.0.0.1:$CGITD_PORT > "$STATE/cgitd.out" 2>&1 &
CGITD_PID=$!

printf 'vcl 4.1;\nbackend default { .host = "127.0.0.1"; .port = "%s"; }\ninclude "%s/contrib/varnish/cgitd-esi.vcl";\n' $CGITD_PORT "$ROOT" > "$STATE/cgitd.vcl"
printf 'vcl 4.1;\nbackend default { .host = "127.0.0.1"; .port = "%s"; }\nsub vcl_deliver { if (obj.hits > 0) { set resp.http.X-Cache = "hit"; } else { set resp.http.X-Cache = "miss"; } }\n' $CGIT_PORT > "$STATE/cgit.vcl"
varnishd -F -a 127.0.0.1:$VCGITD -f "$STATE/cgitd.vcl" -n "$STATE/v-cgitd" -s malloc,512m > /dev/null 2>&1 & V1=$!
varnishd -F -a 127.0.0.1:$VCGIT -f "$STATE/cgit.vcl" -n "$STATE/v-cgit" -s malloc,512m > /dev/null 2>&1 & V2=$!
cleanup() { kill $CGITD_PID $V1 $V2 2>/dev/null || true; PORT=$CGIT_PORT CGIT_STATE=$STATE/cgit "$BASELINE" stop >/dev/null 2>&1 || true; }
trap cleanup EXIT
for p in $CGITD_PORT $VCGITD $VCGIT; do for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$p/" && break; sleep 0.1; done; done

git --git-dir="$REPO" rev-list --no-merges -n "$IDS" HEAD > "$STATE/ids.txt"
SMALL=$(head -1 "$STATE/ids.txt")
echo "warming fork0 pages (fragments) through both caches..." >&2
while read -r id; do
    curl -s -o /dev/null "http://127.0.0.1:$VCGITD/fork0/commit/?id=$id"
    curl -s -o /dev/null "http://127.0.0.1:$VCGIT/fork0/commit/?id=$id"
done < "$STATE/ids.txt"
cat > "$STATE/crawl.lua" <<LUA
local ids = {}
for line in io.lines("$STATE/ids.txt") do ids[#ids + 1] = line end
local n = 0
request = function()
  n = n + 1
  local fork = 1 + (n % 9)
  local id = ids[1 + (math.floor(n / 9) % #ids)]
  return wrk.format("GET", "/fork" .. fork .. "/commit/?id=" .. id)
end
LUA
rps() { wrk -t2 -c8 -d"${TDUR}s" --timeout 30s -H 'Accept-Encoding: gzip' "$@" 2>/dev/null | awk '/Requests\/sec/ {printf "%.0f", $2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a+0>0 && b+0>0) printf "%.1f", a/b; else printf "n/a" }'; }
echo
printf '| %-40s | %12s | %12s | %7s |\n' "through Varnish (pages/s)" "cgit" "cgitd+ESI" ratio
printf '|%s|\n' "------------------------------------------|--------------|--------------|---------"
c=$(rps "http://127.0.0.1:$VCGIT/fork0/commit/?id=$SMALL"); d=$(rps "http://127.0.0.1:$VCGITD/fork0/commit/?id=$SMALL")
printf '| %-40s | %12s | %12s | %7s |\n' "one commit page, fully cached" "$c" "$d" "$(ratio "$d" "$c")"
c=$(rps -s "$STATE/crawl.lua" "http://127.0.0.1:$VCGIT/"); d=$(rps -s "$STATE/crawl.lua" "http://127.0.0.1:$VCGITD/")
printf '| %-40s | %12s | %12s | %7s |\n' "crawler over 9 forks x $IDS commits" "$c" "$d" "$(ratio "$d" "$c")"
echo
echo "cgitd varnish: $(varnishstat -n "$STATE/v-cgitd" -1 -f MAIN.cache_hit -f MAIN.cache_miss | awk '{printf "%s=%s ", $1, $2}')"
echo "cgit varnish:  $(varnishstat -n "$STATE/v-cgit" -1 -f MAIN.cache_hit -f MAIN.cache_miss | awk '{printf "%s=%s ", $1, $2}')"
