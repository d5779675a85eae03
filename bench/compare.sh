#!/bin/bash
# Serves one repository with cgitd and with Debian's cgit side by side (same run, same machine)
# and prints, per page, cgit's and cgitd's median latency (each with the client on any CPU and
# with the client and server on one) and the ratio of their better ones, and that page's floor
# (cgitd's very bytes as a static file from lighttpd), and the static floor (a static file from
# lighttpd beside cgitd's own stylesheet); the pages over 128 KB again, read 1 MiB at a time
# instead of wrk's 8 KB (bench/keepalive.rs); then throughput for a
# few pages and for a crawler pattern (every request a different commit); then cgitd's memory.
#
# usage: bench/compare.sh [REPO]      REPO: any git directory (e.g. a clone of git.git);
#                                     default: a git.git-shaped corpus made by bench/make-corpus.py
# env:   DUR=3 (seconds per latency run), TDUR=5 (seconds per throughput run), CRAWL=20000 (ids;
#        more than a throughput run requests, so every crawler request is a new commit),
#        AE= (an Accept-Encoding for every request, e.g. AE=gzip; default none),
#        RESPONSE_CACHE_SIZE= (cgitd's response-cache-size; 0 measures rendering every time),
#        CGITD=path (binary to use instead of building target/release/cgitd),
#        PIN=0 (the CPU that wrk and the server share for the one-CPU medians)
# Only 127.0.0.1 is ever contacted; every load run is bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DUR=${DUR:-3}; TDUR=${TDUR:-5}; CRAWL=${CRAWL:-20000}; AE=${AE:-}; PIN=${PIN:-0}
WRK_H=(); [ -z "$AE" ] || WRK_H=(-H "Accept-Encoding: $AE")
CGIT_PORT=${CGIT_PORT:-8081}; CGITD_PORT=${CGITD_PORT:-8082}; FLOOR_PORT=${FLOOR_PORT:-8083}
STATE=${STATE:-/tmp/cgitd-bench}
mkdir -p "$STATE"

REPO=${1:-}
if [ -z "$REPO" ]; then
    REPO=$STATE/corpus.git
    [ -d "$REPO" ] || { echo "building corpus in $REPO (a few minutes)..." >&2; python3 bench/make-corpus.py "$REPO"; }
fi
REPO=$(cd "$REPO" && pwd)

ONLY= # (both systems run)
prepare_tools
cargo build --release --locked -q --example keepalive
KEEPALIVE=./target/release/examples/keepalive
PORT=$CGIT_PORT CGIT_REPO=$REPO CGIT_STATE=$STATE/cgit "$BASELINE" start

cat > "$STATE/cgitrc" <<RC
virtual-root=/
metrics-path=/metrics
${RESPONSE_CACHE_SIZE:+response-cache-size=$RESPONSE_CACHE_SIZE}
snapshots=tar.gz
repo.url=git
repo.path=$REPO
RC
"$CGITD" serve --config "$STATE/cgitrc" --listen 127.0.0.1:$CGITD_PORT > "$STATE/cgitd.out" 2>&1 &
CGITD_PID=$!
cleanup() {
    kill $CGITD_PID 2>/dev/null || true
    [ ! -f "$STATE/floor/lighttpd.pid" ] || kill "$(cat "$STATE/floor/lighttpd.pid")" 2>/dev/null || true
    PORT=$CGIT_PORT CGIT_STATE=$STATE/cgit "$BASELINE" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$CGITD_PORT/" && break; sleep 0.1; done

g() { git --git-dir="$REPO" "$@"; }
HEAD_ID=$(g rev-parse HEAD)
SMALL=$(g log -n 200 --no-merges --format='%H' --shortstat | awk 'length($1)==40 && /^[0-9a-f]+$/ {id=$1; next} /changed/{n=$4+$6; if (n>=10 && n<=60 && !done) {print id; done=1}}')
LARGE=$(g log -n 3000 --no-merges --format='%H' --shortstat | awk 'length($1)==40 && /^[0-9a-f]+$/ {id=$1; next} /changed/{n=$4+$6; if (n>best) {best=n; b=id}} END{print b}')
FILE=$(g log -n 3000 --format= --name-only | grep -v '^$' | sort | uniq -c | sort -rn | awk 'NR==1{print $2}')
# The most-changed directory (not dirname "$FILE": a top-level file gives ".", a 404).
DIR=$(g log -n 3000 --format= --name-only | grep / | sed 's|/[^/]*$||' | sort | uniq -c | sort -rn | awk 'NR==1{print $2}')
DIR=${DIR:-.}
TAG=$(g for-each-ref --sort=-creatordate --count=1 --format='%(refname:short)' refs/tags)
SMALL=${SMALL:-$HEAD_ID}

PAGES="index /
summary /git/
refs /git/refs/
log /git/log/
log-ofs-1000 /git/log/?ofs=1000
path-log /git/log/$FILE
tree-root /git/tree/
tree-subdir /git/tree/$DIR
blob-view /git/tree/$FILE
plain /git/plain/$FILE
commit-small /git/commit/?id=$SMALL
commit-large /git/commit/?id=$LARGE
diff /git/diff/?id=$SMALL
patch /git/patch/?id=$SMALL
tag /git/tag/?h=$TAG
atom /git/atom/
info-refs /git/info/refs"

# --path-as-is: the status of the URL wrk requests (curl would squash dot segments).
status() { curl -s --path-as-is -o /dev/null -w '%{http_code}' --max-time 60 "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a+0>0 && b+0>0) printf "%.1f", a/b; else printf "n/a" }'; }
smaller() { awk -v a="$1" -v b="$2" 'BEGIN { if (b+0>0 && (b+0<a+0 || !(a+0>0))) print b; else print a }'; }

echo
echo "repository: $REPO ($(g rev-list --count HEAD) commits on HEAD, $(g for-each-ref refs/tags | wc -l) tags)"
echo "cgit: Debian $(dpkg-query -W -f='${Version}' cgit 2>/dev/null) as CGI under lighttpd; cgitd: release build"
echo "Accept-Encoding: ${AE:-(none)}; cgitd response-cache-size: ${RESPONSE_CACHE_SIZE:-default}"
echo
# Each page's floor: the bytes cgitd answers with, as a static file from a lighttpd of its own.
# Asked four times, the last answer kept, as wrk gets it: a page is kept from its second ask,
# with its cheap compressed variant; its first repeat has the variant for repeats made in the
# background, which answers from the next ask on.
FLOOR=$STATE/floor
rm -rf "$FLOOR"; mkdir -p "$FLOOR/htdocs"
for _ in 1 2 3 4; do
    while read -r name path; do
        curl -s --path-as-is ${AE:+-H "Accept-Encoding: $AE"} -o "$FLOOR/htdocs/$name.html" "http://127.0.0.1:$CGITD_PORT$path"
    done <<< "$PAGES"
    sleep 0.5
done
cat > "$FLOOR/lighttpd.conf" <<CONF
server.document-root = "$FLOOR/htdocs"
server.bind = "127.0.0.1"
server.port = $FLOOR_PORT
server.pid-file = "$FLOOR/lighttpd.pid"
mimetype.assign = ( ".html" => "text/html" )
CONF
lighttpd -f "$FLOOR/lighttpd.conf"
# Each median twice: with the client and the server wherever the scheduler puts them, and with
# both on CPU $PIN. On this kind of virtual machine, a request's two wake-ups across CPUs (the
# server's, then the client's) cost about 35 µs a round trip, more than answering a repeated
# page does: a static file from lighttpd took 0.059 ms p50 across CPUs and 0.021 ms on one
# (2026-12-05). cgit, whose lighttpd relays each page from a CGI process it starts, is faster
# across CPUs (2.1 against 4.2 ms for a tag page). Each system's ratio is of its better median.
# (Children inherit the CPUs of their parent: cgit's CGI processes its lighttpd's, and wrk this
# (sub)shell's.)
ALL_CPUS=0-$(($(nproc) - 1))
on_cpus() { taskset -a -p -c "$1" "$2" > /dev/null && taskset -p -c "$1" "$BASHPID" > /dev/null; }
# both PID URL [MEDIAN]: the median of URL across CPUs, then with the server PID and the
# client on CPU $PIN (the server back on all CPUs after); by wrk, or by the function MEDIAN.
both() {
    local median=${3:-median_ms} spread
    spread=$($median "$2")
    on_cpus "$PIN" "$1"; echo "$spread $($median "$2")"
    on_cpus "$ALL_CPUS" "$1"
}
median_by_keepalive() { "$KEEPALIVE" "$1" "$DUR" ${AE:+"Accept-Encoding: $AE"}; }
CGIT_SERVER=$(cat "$STATE/cgit/lighttpd.pid"); FLOOR_SERVER=$(cat "$FLOOR/lighttpd.pid")
# medians NAME PATH [MEDIAN]: cgit's, cgitd's and the floor's medians of a page, each both ways.
medians() {
    echo "$(both "$CGIT_SERVER" "http://127.0.0.1:$CGIT_PORT$2" "${3:-}")" \
        "$(both "$CGITD_PID" "http://127.0.0.1:$CGITD_PORT$2" "${3:-}")" \
        "$(both "$FLOOR_SERVER" "http://127.0.0.1:$FLOOR_PORT/$1.html" "${3:-}")"
}
# best_ratio C1 C2 D1 D2: cgit's better median over cgitd's.
best_ratio() { ratio "$(smaller "$1" "$2")" "$(smaller "$3" "$4")"; }
echo "latency: wrk -t1 -c1, median of ${DUR}s; each as: client on any CPU / client and server on CPU $PIN"
printf '| %-13s | %-9s | %-17s | %-13s | %7s | %9s | %-13s |\n' page "status" "cgit ms" "cgitd ms" ratio "bytes" "same, static ms"
printf '|%s|\n' "---------------|-----------|-------------------|---------------|---------|-----------|---------------"
while read -r name path; do
    cs=$(status "http://127.0.0.1:$CGIT_PORT$path"); ds=$(status "http://127.0.0.1:$CGITD_PORT$path")
    read -r c1 c2 d1 d2 f1 f2 <<< "$(medians "$name" "$path")"
    r=$(best_ratio "$c1" "$c2" "$d1" "$d2"); [ "$cs$ds" = 200200 ] || r="n/a"
    printf '| %-13s | %-9s | %-17s | %-13s | %7s | %9s | %-13s |\n' "$name" "$cs/$ds" "$c1 / $c2" "$d1 / $d2" "$r" \
        "$(stat -c %s "$FLOOR/htdocs/$name.html")" "$f1 / $f2"
done <<< "$PAGES"
# The floor: a static file (cgit's stylesheet) from lighttpd, and cgitd's own embedded one.
read -r c1 c2 <<< "$(both "$CGIT_SERVER" "http://127.0.0.1:$CGIT_PORT/cgit-css/cgit.css")"
read -r d1 d2 <<< "$(both "$CGITD_PID" "http://127.0.0.1:$CGITD_PORT/cgit.css")"
printf '| %-13s | %-9s | %-17s | %-13s | %7s |\n' "static file" "lighttpd" "$c1 / $c2" "$d1 / $d2" \
    "$(best_ratio "$c1" "$c2" "$d1" "$d2")"
# For a page of a few hundred KB, wrk's own reading is most of a round trip (bench/keepalive.rs
# says how much): those pages again, read 1 MiB a call.
echo
echo "pages over 128 KB, read 1 MiB a call (bench/keepalive.rs), median of ${DUR}s; any CPU / one CPU"
printf '| %-13s | %-17s | %-13s | %7s | %9s | %-13s |\n' page "cgit ms" "cgitd ms" ratio "bytes" "same, static ms"
printf '|%s|\n' "---------------|-------------------|---------------|---------|-----------|---------------"
while read -r name path; do
    bytes=$(stat -c %s "$FLOOR/htdocs/$name.html")
    [ "$bytes" -gt 131072 ] || continue
    read -r c1 c2 d1 d2 f1 f2 <<< "$(medians "$name" "$path" median_by_keepalive)"
    printf '| %-13s | %-17s | %-13s | %7s | %9s | %-13s |\n' "$name" "$c1 / $c2" "$d1 / $d2" \
        "$(best_ratio "$c1" "$c2" "$d1" "$d2")" "$bytes" "$f1 / $f2"
done <<< "$PAGES"

rps() { wrk -t2 -c8 -d"${TDUR}s" --timeout 30s "${WRK_H[@]}" "$@" 2>/dev/null | awk '/Requests\/sec/ {printf "%.0f", $2}'; }
echo
printf '| %-22s | %10s | %10s | %7s |\n' "throughput (req/s)" cgit cgitd ratio
printf '|%s|\n' "------------------------|------------|------------|---------"
for p in "summary /git/" "commit /git/commit/?id=$SMALL" "log /git/log/" "plain /git/plain/$FILE"; do
    set -- $p
    c=$(rps "http://127.0.0.1:$CGIT_PORT$2"); d=$(rps "http://127.0.0.1:$CGITD_PORT$2")
    printf '| %-22s | %10s | %10s | %7s |\n' "$1" "$c" "$d" "$(ratio "$d" "$c")"
done
g rev-list -n "$CRAWL" HEAD > "$STATE/ids.txt"
# rps runs two wrk threads: one asks for the even places of the list, the other the odd ones,
# so that no id is asked for twice (before 2026-12-04 both walked the whole list, and each id
# came twice, the second often joined to the first's render or answered from the cache).
cat > "$STATE/crawl.lua" <<LUA
local threads = 0
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end
local ids = {}
for line in io.lines("$STATE/ids.txt") do ids[#ids + 1] = line end
local n = -1
request = function()
  n = n + 1
  return wrk.format("GET", "/git/commit/?id=" .. ids[(2 * n + tid) % #ids + 1])
end
LUA
c=$(rps -s "$STATE/crawl.lua" "http://127.0.0.1:$CGIT_PORT/"); d=$(rps -s "$STATE/crawl.lua" "http://127.0.0.1:$CGITD_PORT/")
printf '| %-22s | %10s | %10s | %7s |\n' "crawler (distinct ids)" "$c" "$d" "$(ratio "$d" "$c")"
echo
curl -s "http://127.0.0.1:$CGITD_PORT/metrics" | grep -E '^cgitd_response_cache_(hits|misses|evictions)_total|^cgitd_response_cache_bytes' | sed 's/^/cgitd: /'
grep -E 'VmRSS|RssAnon|RssFile' /proc/$CGITD_PID/status | tr -s ' \t' ' ' | sed 's/^/cgitd after the run: /'
sleep 10
grep -E 'RssAnon' /proc/$CGITD_PID/status | tr -s ' \t' ' ' | sed 's/^/cgitd 10 s later (idle): /'
