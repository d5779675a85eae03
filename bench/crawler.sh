#!/bin/bash
# A crawler that never asks for the same URL twice, cgit and cgitd in the same run.
#
# Serves one repository with a release cgitd and with Debian's cgit (as CGI under lighttpd, via
# ../shared/tools/cgit-baseline.sh). For each system: wrk with CONNS connections for DUR
# seconds over URLS distinct URLs — 30 % commit/?id=, 20 % diff/?id=, 20 % tree/?id= at random
# commits, 20 % plain/<file>?id= of files at random commits, 10 % log/?ofs= between 1 and
# 20,000 — each URL at most once. Prints pages/s, p50/p99 latency (wrk's, which it corrects for
# coordinated omission, and each request's as timed), how many answers were 4xx or
# 5xx (and cgitd's own count of its answers by status), the server's peak RssAnon (cgit:
# lighttpd and its CGI children, summed at each sample), and the machine's own stalls meanwhile
# (bench/stalls.py), which lengthen the tail whatever the server does.
#
# usage: bench/crawler.sh [REPO]   REPO: any git directory; default: the git.git-shaped corpus
#                                  bench/compare.sh builds (bench/make-corpus.py)
# env:   DUR=20, CONNS=32, URLS=200000, ONLY=cgit|cgitd, CGITD=path (binary to use instead of
#        building target/release/cgitd), CGIT_PORT=8381, CGITD_PORT=8382, STATE=/tmp/cgitd-crawl,
#        EXTRA_RC (cgitrc lines for cgitd, e.g. 'access-log=1' to find the URLs of odd answers
#        in $STATE/cgitd.out), AE (an Accept-Encoding for every request, e.g. AE='gzip,
#        deflate, br' as Googlebot sends it; default none)
# Only 127.0.0.1 is ever contacted; every load run is bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DUR:-20}; CONNS=${CONNS:-32}; URLS=${URLS:-200000}; ONLY=${ONLY:-}
CGIT_PORT=${CGIT_PORT:-8381}; CGITD_PORT=${CGITD_PORT:-8382}
STATE=${STATE:-/tmp/cgitd-crawl}
mkdir -p "$STATE"
. bench/lib.sh
REPO=$(bench_repo "${1:-}")
prepare_tools
printf '%s\nmetrics-path=/metrics\nvirtual-root=/\nrepo.url=git\nrepo.path=%s\n' "${EXTRA_RC:-}" "$REPO" > "$STATE/cgitrc"
: > "$STATE/extra.rc"
start_systems "$REPO" "$STATE/extra.rc" "$STATE/cgitrc"
# the repository's first page starts its commit index, built while the URLs are made
[ -z "$CGITD_PID" ] || curl -sf -o /dev/null "http://127.0.0.1:$CGITD_PORT/git/" || true

# The URLs: commits at random, files of a few hundred random commits.
g() { git --git-dir="$REPO" "$@"; }
g rev-list HEAD > "$STATE/commits.txt"
for c in $(shuf -n 200 --random-source=<(yes) "$STATE/commits.txt"); do
    # (tab-separated and unquoted: paths may hold spaces and any byte)
    g -c core.quotePath=false ls-tree -r --format='%(objecttype)%x09%(path)' "$c" 2>/dev/null |
        awk -F'\t' -v c="$c" '$1=="blob"{print c, $2}' | shuf -n 50 --random-source=<(yes)
done > "$STATE/files.txt"
python3 - "$STATE" "$URLS" > "$STATE/urls.txt" <<'PY'
import random, sys, urllib.parse
state, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(11)
commits = [l.strip() for l in open(f"{state}/commits.txt") if l.strip()]
files = [l.rstrip("\n").split(" ", 1) for l in open(f"{state}/files.txt") if " " in l]
q = lambda s: urllib.parse.quote(s, safe="/")
kinds = [(30, lambda: f"/git/commit/?id={rnd.choice(commits)}"),
         (20, lambda: f"/git/diff/?id={rnd.choice(commits)}"),
         (20, lambda: f"/git/tree/?id={rnd.choice(commits)}"),
         (20, lambda: "/git/plain/{1}?id={0}".format(*(lambda f: (f[0], q(f[1])))(rnd.choice(files)))),
         (10, lambda: f"/git/log/?ofs={rnd.randrange(1, 20001)}")]
weights = [w for w, _ in kinds]
seen = set()
for _ in range(n * 3):
    if len(seen) >= n:
        break
    url = rnd.choices(kinds, weights)[0][1]()
    if url not in seen:
        seen.add(url)
        print(url)
PY

# No response() hook: with one, wrk copies every body into Lua, which took a third of a core
# from the two the servers share. wrk counts answers of 400 and above itself; cgitd's metrics
# tell its 503s from the rest.
cat > "$STATE/crawl.lua" <<LUA
local urls = {}
for line in io.lines("$STATE/urls.txt") do urls[#urls + 1] = line end
function init(args)
  n = 0
end
function request()
  -- one wrk thread walks the list in order, so no URL is asked twice (while the list lasts)
  n = n + 1
  return wrk.format("GET", urls[((n - 1) % #urls) + 1])
end
-- wrk corrects its latency histogram for coordinated omission before done(): a sample of n
-- adds samples at n - I, n - 2I, ... (down to just over I), where I = duration / (requests /
-- connections) is the interval a connection's requests were expected at. Above I that is
-- undone by raw(v) = corrected(v) - corrected(v + I); walking the histogram down from its
-- top gives the percentile of the requests as they were timed.
local function timed_percentile(latency, summary, p)
  local interval = math.floor(summary.duration / math.floor(summary.requests / $CONNS))
  local wanted = summary.requests * (100 - p) / 100
  local corrected, above = {}, 0
  for i = #latency, 1, -1 do
    local value, count = latency(i)
    corrected[value] = count
    if value > interval then count = count - (corrected[value + interval] or 0) end
    above = above + count
    if above >= wanted then return value end
  end
  return latency.min
end
function done(summary, latency, requests)
  if summary.requests > #urls then io.write("warning: more requests than distinct URLs\n") end
  local e = summary.errors
  io.write(string.format("%.0f pages/s; p50 %.1f ms, p99 %.1f ms; %d answers, %d of them 4xx/5xx; %d socket errors/timeouts\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, summary.requests, e.status,
    e.connect + e.read + e.write + e.timeout))
  if summary.requests >= $CONNS then
    io.write(string.format("each request as timed (without wrk's correction): p50 %.1f ms, p99 %.1f ms\n",
      timed_percentile(latency, summary, 50) / 1000, timed_percentile(latency, summary, 99) / 1000))
  end
end
LUA


crawl() {
    local name=$1 port=$2 pid=$3
    echo
    echo "== $name: $CONNS connections, ${DUR}s, distinct URLs"
    python3 bench/peak-rss.py "$pid" "$((DUR + 1))" > "$STATE/$name.rss" &
    local rss=$!
    python3 bench/stalls.py "$DUR" > "$STATE/$name.stalls" &
    local stalls=$!
    wrk -t1 -c"$CONNS" -d"${DUR}s" --timeout 10s ${AE:+-H "Accept-Encoding: $AE"} -s "$STATE/crawl.lua" \
        "http://127.0.0.1:$port" > "$STATE/$name.wrk" 2>&1 || true
    grep -E "pages/s|as timed" "$STATE/$name.wrk"
    wait "$rss" || true
    cat "$STATE/$name.rss"
    wait "$stalls" || true
    cat "$STATE/$name.stalls"
}

echo "repository: $REPO ($(wc -l < "$STATE/commits.txt") commits); $(wc -l < "$STATE/urls.txt") distinct URLs; Accept-Encoding: ${AE:-(none)}"
if [ -n "$CGIT_PID" ]; then
    crawl cgit "$CGIT_PORT" "$CGIT_PID"
    wait_for_cgi
fi
if [ -n "$CGITD_PID" ]; then
    crawl cgitd "$CGITD_PORT" "$CGITD_PID"
    curl -sf "http://127.0.0.1:$CGITD_PORT/metrics" | awk -F'"' '/^cgitd_requests_total/ {
        split($0, f, " "); n[$4] += f[length(f)] }
        END { printf "cgitd counted, by status (the first page included):"
              for (s in n) printf " %s: %d", s, n[s]; print "" }'
fi
