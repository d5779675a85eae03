#!/bin/bash
# A person's pages during a crawler storm of expensive URLs, cgit and cgitd in the same run.
#
# Serves one repository with a release cgitd and with Debian's cgit (as CGI under lighttpd, via
# ../shared/tools/cgit-baseline.sh). For each system separately: a flood of 64 connections
# (wrk) requests distinct expensive URLs for DUR seconds — blame of random files at HEAD,
# path-limited logs at random ofs (0 included), `log/?qt=grep&q=<word>` searches,
# `snapshot/<tag>.tar.gz` of random tags, `stats/?period=m|q|y` — while a person (one
# persistent keep-alive connection, python3 http.client) asks for the summary, a small commit
# and the tree root in turn, one request every 100 ms. Prints the person's p50/p99/max and
# slowest three requests (seconds from the flood's start), the flood's 2xx/503/other counts and
# throughput, the server's peak RssAnon (for cgit: lighttpd plus its CGI children, summed at
# each sample), and the machine's own stalls meanwhile (bench/stalls.py: a person's slow request
# at the time of a stall was slowed by the machine, e.g. a virtual machine's host, not by the
# server).
#
# usage: bench/storm.sh [REPO]     REPO: any git directory; default: the git.git-shaped corpus
#                                  bench/compare.sh builds (bench/make-corpus.py)
# env:   DUR=20 (seconds of flood per system), CONNS=64, URLS=20000 (distinct flood URLs),
#        ONLY=cgit|cgitd (run one system), CGITD=path (a cgitd binary to use instead of
#        building target/release/cgitd), CGIT_PORT=8281, CGITD_PORT=8282,
#        STATE=/tmp/cgitd-storm, EXTRA_RC (cgitrc lines for cgitd only, e.g. 'git-workers=2'),
#        CLONES=0 (smart HTTP clone loops against cgitd during its flood: each clones --depth
#        1, 2, 3, ... in turn, so every pack is written, none kept; cgit serves no smart HTTP),
#        SETTLE=90 (seconds between cgit's run and cgitd's: on this project's shared virtual
#        machine, for a minute or two after cgit's storm, whose CGI processes held over 4 GiB,
#        the machine stalled every CPU for 18-100 ms every few seconds under load; 0 runs
#        cgitd right away)
# Only 127.0.0.1 is ever contacted; every load run is bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DUR:-20}; CONNS=${CONNS:-64}; CLONES=${CLONES:-0}; URLS=${URLS:-20000}; ONLY=${ONLY:-}; SETTLE=${SETTLE:-90}
CGIT_PORT=${CGIT_PORT:-8281}; CGITD_PORT=${CGITD_PORT:-8282}
STATE=${STATE:-/tmp/cgitd-storm}
mkdir -p "$STATE"
: > "$STATE/clones.count"; : > "$STATE/clones.err"
[ "$DUR" -ge 4 ] || { echo "DUR must be at least 4 seconds" >&2; exit 2; }
. bench/lib.sh
REPO=$(bench_repo "${1:-}")
prepare_tools

# Both systems: blame and stats on, tar.gz snapshots.
printf 'enable-blame=1\nmax-stats=year\n' > "$STATE/extra.rc"
{ echo "${EXTRA_RC:-}"; echo "virtual-root=/"; echo "snapshots=tar.gz"; cat "$STATE/extra.rc"; echo "repo.url=git"; echo "repo.path=$REPO"; } > "$STATE/cgitrc"
start_systems "$REPO" "$STATE/extra.rc" "$STATE/cgitrc"

g() { git --git-dir="$REPO" "$@"; }
SMALL=$(g log -n 200 --no-merges --format='%H' --shortstat | awk 'length($1)==40 && /^[0-9a-f]+$/ {id=$1; next} /changed/{n=$4+$6; if (n>=10 && n<=60 && !done) {print id; done=1}}')
SMALL=${SMALL:-$(g rev-parse HEAD)}
PERSON="/git/ /git/commit/?id=$SMALL /git/tree/"

# The flood's URLs: distinct expensive requests, mixed evenly over five kinds.
g ls-tree -r --name-only HEAD > "$STATE/files.txt"
g for-each-ref --format='%(refname:short)' refs/tags > "$STATE/tags.txt"
g log -n 5000 --format=%s HEAD > "$STATE/subjects.txt"
python3 - "$STATE" "$URLS" > "$STATE/urls.txt" <<'PY'
import random, re, sys, urllib.parse
state, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(7)
files = [l.rstrip("\n") for l in open(f"{state}/files.txt") if l.strip()]
dirs = sorted({f.rsplit("/", 1)[0] for f in files if "/" in f}) or [""]
tags = [l.strip() for l in open(f"{state}/tags.txt") if l.strip()] or ["HEAD"]
words = sorted({w for l in open(f"{state}/subjects.txt") for w in re.findall(r"[A-Za-z0-9]{3,}", l)}) or ["fix"]
q = lambda s: urllib.parse.quote(s, safe="/")
kinds = [
    lambda: f"/git/blame/{q(rnd.choice(files))}",
    lambda: f"/git/log/{q(rnd.choice(files + dirs))}?ofs={rnd.randrange(0, 21) * 50}",
    lambda: f"/git/log/?qt=grep&q={q(rnd.choice(words))}" + (f"&ofs={rnd.randrange(1, 10) * 50}" if rnd.random() < 0.5 else ""),
    lambda: f"/git/snapshot/{q(rnd.choice(tags))}.tar.gz",
    lambda: f"/git/stats/{q(rnd.choice(dirs + ['']))}?period={rnd.choice('mqy')}",
]
seen = set()
for _ in range(n * 20):
    if len(seen) >= n:
        break
    url = rnd.choice(kinds)()
    if url not in seen:
        seen.add(url)
        print(url)
PY

cat > "$STATE/flood.lua" <<LUA
local urls = {}
for line in io.lines("$STATE/urls.txt") do urls[#urls + 1] = line end
local threads = {}
local next_id = 0
function setup(thread)
  next_id = next_id + 1
  thread:set("id", next_id)
  table.insert(threads, thread)
end
function init(args)
  ok, busy, other = 0, 0, 0
  math.randomseed(os.time() * 100 + id)
end
function request()
  return wrk.format("GET", urls[math.random(#urls)])
end
function response(status, headers, body)
  if status >= 200 and status < 300 then ok = ok + 1
  elseif status == 503 then busy = busy + 1
  else other = other + 1 end
end
function done(summary, latency, requests)
  local a, b, c = 0, 0, 0
  for _, t in ipairs(threads) do a = a + t:get("ok"); b = b + t:get("busy"); c = c + t:get("other") end
  local e = summary.errors
  io.write(string.format("flood: %d 2xx, %d 503, %d other status, %d socket errors/timeouts; %.1f responses/s\n",
    a, b, c, e.connect + e.read + e.write + e.timeout, summary.requests / (summary.duration / 1e6)))
end
LUA

cat > "$STATE/person.py" <<'PY'
import http.client, sys, time
port, dur, epoch, paths = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
def connect():
    return http.client.HTTPConnection("127.0.0.1", port, timeout=30)
conn, lat, when, bad, i = connect(), [], [], {}, 0
start = time.monotonic(); tick = start
while time.monotonic() - start < dur:
    path = paths[i % len(paths)]; i += 1
    t0 = time.monotonic()
    try:
        conn.request("GET", path, headers={"Accept-Encoding": "gzip"})
        r = conn.getresponse(); r.read(); status = r.status
        if r.getheader("connection", "").lower() == "close":
            conn.close(); conn = connect()
    except (OSError, http.client.HTTPException) as e:
        status = type(e).__name__; conn.close(); conn = connect()
    lat.append((time.monotonic() - t0) * 1000)
    when.append(t0 - epoch)
    if status != 200:
        bad[status] = bad.get(status, 0) + 1
    tick += 0.1
    time.sleep(max(0.0, tick - time.monotonic()))
    tick = max(tick, time.monotonic())
slowest = sorted(zip(lat, when), reverse=True)[:3]
lat.sort()
pct = lambda p: lat[min(len(lat) - 1, int(len(lat) * p / 100))]
print(f"person: {len(lat)} requests, p50 {pct(50):.1f} ms, p99 {pct(99):.1f} ms, max {lat[-1]:.1f} ms; "
      f"not 200: {sum(bad.values())} {bad if bad else ''}".rstrip())
print("  slowest: " + ", ".join(f"+{t:.1f}s {ms:.0f} ms" for ms, t in slowest))
PY

# clone_loop PORT N END: shallow clones of depth N, N + CLONES, ... until SECONDS reaches END;
# prints "ok", "failed", or "cut" for a clone still waiting or running 5 s after the flood.
clone_loop() {
    local port=$1 depth=$2 end=$3 dest="$STATE/clone-$2.git" status
    while [ "$SECONDS" -lt "$end" ]; do
        rm -rf "$dest"
        status=0
        timeout $((end - SECONDS + 5)) git clone -q --bare --depth "$depth" \
            "http://127.0.0.1:$port/git" "$dest" 2>> "$STATE/clones.err" || status=$?
        case $status in 0) echo ok ;; 124) echo cut ;; *) echo failed ;; esac
        depth=$((depth + CLONES))
    done
    rm -rf "$dest"
}

storm() {
    local name=$1 port=$2 pid=$3 p
    for p in $PERSON; do curl -s -o /dev/null --max-time 60 "http://127.0.0.1:$port$p"; done
    echo
    echo "== $name (pid $pid): $CONNS connections of expensive URLs for ${DUR}s; person every 100 ms"
    python3 bench/peak-rss.py "$pid" "$((DUR + 1))" > "$STATE/$name.rss" &
    local rss=$! epoch
    epoch=$(python3 -c 'import time; print(time.monotonic())')
    python3 bench/stalls.py "$DUR" "$epoch" > "$STATE/$name.stalls" &
    local stalls=$!
    wrk -t2 -c"$CONNS" -d"${DUR}s" --timeout 10s -s "$STATE/flood.lua" "http://127.0.0.1:$port" > "$STATE/$name.wrk" 2>&1 &
    local flood=$! clones=()
    [ "$name" != cgitd ] || for c in $(seq "$CLONES"); do
        clone_loop "$port" "$c" "$((SECONDS + DUR))" >> "$STATE/clones.count" &
        clones+=($!)
    done
    sleep 1
    python3 "$STATE/person.py" "$port" "$((DUR - 2))" "$epoch" $PERSON
    wait "$flood" || true
    grep '^flood:' "$STATE/$name.wrk" || { echo "flood: wrk failed:"; cat "$STATE/$name.wrk"; }
    for c in "${clones[@]}"; do wait "$c" || true; done
    [ "${#clones[@]}" = 0 ] || echo "clones: $CLONES loops, $(grep -c ok "$STATE/clones.count" || true) clones done," \
        "$(grep -c failed "$STATE/clones.count" || true) failed (git's messages in $STATE/clones.err)," \
        "$(grep -c cut "$STATE/clones.count" || true) cut off unfinished at the end"
    wait "$rss" || true
    cat "$STATE/$name.rss"
    wait "$stalls" || true
    cat "$STATE/$name.stalls"
    # One second after the flood: back to idle speed?
    sleep 1
    python3 "$STATE/person.py" "$port" 3 "$epoch" $PERSON | sed 's/^person:/after the flood (3 s):/'
}

echo "repository: $REPO ($(g rev-list --count HEAD) commits on HEAD, $(wc -l < "$STATE/tags.txt") tags, $(wc -l < "$STATE/files.txt") files)"
echo "flood: $(wc -l < "$STATE/urls.txt") distinct URLs (blame, path log, grep search, snapshot, stats); person: $PERSON"
if [ -n "$CGIT_PID" ]; then
    storm cgit "$CGIT_PORT" "$CGIT_PID"
    wait_for_cgi
    if [ -n "$CGITD_PID" ] && [ "$SETTLE" -gt 0 ]; then
        echo "(waiting ${SETTLE}s for the machine to settle after cgit's run)"
        sleep "$SETTLE"
    fi
fi
[ -z "$CGITD_PID" ] || storm cgitd "$CGITD_PORT" "$CGITD_PID"
