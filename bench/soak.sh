#!/bin/bash
# A long run of mixed load against one release cgitd: does memory or the fd count creep?
#
# Serves a `--shared` bare clone of REPO (so pushes never touch REPO) and, for DUR seconds,
# keeps up at once: a crawler (wrk, CRAWL connections, distinct commit/diff/tree/plain/log URLs),
# a flood of expensive URLs (wrk, FLOOD connections: blame, path logs, searches, snapshots,
# stats), a push of one new commit every PUSH seconds (git push from a work clone) and a
# SIGHUP reload every RELOAD seconds. Every 10 s it samples the server's RssAnon, open fds and
# threads, and jemalloc's allocated and resident bytes, the response cache's and commit
# indexes' bytes and the sum of the bounded caches' bytes (cgitd_cache_bytes) from /metrics
# into $STATE/samples.csv, and each cache's bytes into $STATE/caches.csv. At the end it prints
# the RssAnon slope after WARMUP seconds (least squares, MiB per 10 minutes; target ≤ 1) and
# beside it the slope of the heap outside the bounded caches (jemalloc's allocated minus the
# caches' sum), 10-minute medians, each cache's growth, the fd and thread range after
# warm-up, the answers by status from cgitd's metrics (target: no 5xx but shed 503s), the
# reloads that took effect, and draws the RssAnon and fd curves into PLOT (an SVG).
#
# With MEMORY_MAX (bytes, e.g. 400M) the server runs in a memory cgroup of that limit (v2 or
# v1; needs root), and the end also reports the cgroup's OOM kills and the pressure episodes.
#
# usage: bench/soak.sh [REPO]     REPO: any git directory; default: the git.git-shaped corpus
# env:   DUR=3600, WARMUP=600, CRAWL=4, FLOOD=8, PUSH=30, RELOAD=60, PORT=8482,
#        STATE=/tmp/cgitd-soak, PLOT=docs/soak.svg, CGITD=path (a release build unless given),
#        MEMORY_MAX=none
# Only 127.0.0.1 is ever contacted; the run is bounded by DUR.
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DUR:-3600}; WARMUP=${WARMUP:-600}; CRAWL=${CRAWL:-4}; FLOOD=${FLOOD:-8}
PUSH=${PUSH:-30}; RELOAD=${RELOAD:-60}; PORT=${PORT:-8482}
STATE=${STATE:-/tmp/cgitd-soak}; PLOT=${PLOT:-docs/soak.svg}; ONLY=cgitd
[ "$WARMUP" -lt "$DUR" ] || { echo "WARMUP must be shorter than DUR" >&2; exit 2; }
. bench/lib.sh
SOURCE=$(bench_repo "${1:-}")
prepare_tools
rm -rf "$STATE" && mkdir -p "$STATE"
REPO=$STATE/repo.git
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
git clone -q --bare --shared "$SOURCE" "$REPO"
git clone -q --shared "$REPO" "$STATE/work"
git -C "$STATE/work" config user.name soak && git -C "$STATE/work" config user.email soak@example.com

printf 'virtual-root=/\nmetrics-path=/metrics\nsnapshots=tar.gz\nenable-blame=1\nmax-stats=year\nrepo.url=git\nrepo.path=%s\n' \
    "$REPO" > "$STATE/cgitrc"
CGITD_PORT=$PORT start_systems "$REPO" /dev/null "$STATE/cgitrc"
CGROUP=""
if [ -n "${MEMORY_MAX:-}" ]; then
    if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
        CGROUP=/sys/fs/cgroup/cgitd-soak-$$ && mkdir "$CGROUP" && echo "$MEMORY_MAX" > "$CGROUP/memory.max"
    else
        CGROUP=/sys/fs/cgroup/memory/cgitd-soak-$$ && mkdir "$CGROUP"
        numfmt --from=iec "$MEMORY_MAX" > "$CGROUP/memory.limit_in_bytes"
    fi
    echo "$CGITD_PID" > "$CGROUP/cgroup.procs"
    trap 'stop_systems; sleep 0.5; rmdir "$CGROUP" 2>/dev/null || true' EXIT
fi
curl -sf -o /dev/null "http://127.0.0.1:$PORT/git/" || { echo "cgitd did not start" >&2; exit 1; }

# The URLs: the crawler's at random commits, the flood's at HEAD's files, dirs and tags.
g() { git --git-dir="$REPO" "$@"; }
g rev-list HEAD > "$STATE/commits.txt"
g ls-tree -r --name-only HEAD > "$STATE/files.txt"
g for-each-ref --format='%(refname:short)' refs/tags > "$STATE/tags.txt"
python3 - "$STATE" <<'PY'
import random, sys, urllib.parse
state = sys.argv[1]
rnd = random.Random(5)
commits = [l.strip() for l in open(f"{state}/commits.txt") if l.strip()]
files = [l.rstrip("\n") for l in open(f"{state}/files.txt") if l.strip()]
dirs = sorted({f.rsplit("/", 1)[0] for f in files if "/" in f}) or [""]
tags = [l.strip() for l in open(f"{state}/tags.txt") if l.strip()] or ["HEAD"]
q = lambda s: urllib.parse.quote(s, safe="/")
crawl = [lambda: f"/git/commit/?id={rnd.choice(commits)}", lambda: f"/git/diff/?id={rnd.choice(commits)}",
         lambda: f"/git/tree/?id={rnd.choice(commits)}", lambda: f"/git/log/?ofs={rnd.randrange(1, 20001)}",
         lambda: f"/git/plain/{q(rnd.choice(files))}?id={rnd.choice(commits[:2000])}"]
flood = [lambda: f"/git/blame/{q(rnd.choice(files))}", lambda: f"/git/log/{q(rnd.choice(files + dirs))}?ofs={rnd.randrange(21) * 50}",
         lambda: f"/git/log/?qt=grep&q=fix{rnd.randrange(1000)}", lambda: f"/git/snapshot/{q(rnd.choice(tags))}.tar.gz",
         lambda: f"/git/stats/{q(rnd.choice(dirs + ['']))}?period={rnd.choice('mqy')}"]
for name, kinds, n in (("crawl", crawl, 400_000), ("flood", flood, 40_000)):
    with open(f"{state}/{name}.txt", "w") as out:
        for _ in range(n):
            print(rnd.choice(kinds)(), file=out)
PY
# Each wrk piece starts at a random place in its list, so the crawler keeps asking new URLs.
cat > "$STATE/walk.lua" <<'LUA'
local urls = {}
function init(args)
  for line in io.lines(args[1]) do urls[#urls + 1] = line end
  math.randomseed(os.time()); n = math.random(#urls)
end
function request() n = n + 1; return wrk.format("GET", urls[(n % #urls) + 1]) end
LUA

# Load, pushes and reloads, each a loop until the end; wrk runs in 60 s pieces so a piece that
# fails does not end the run.
END=$((SECONDS + DUR))
load() {
    local conns=$1 urls=$2 log=$3
    while [ $SECONDS -lt $END ]; do
        local left=$((END - SECONDS)); [ $left -gt 60 ] && left=60
        wrk -t1 -c"$conns" -d"${left}s" --timeout 30s -s "$STATE/walk.lua" "http://127.0.0.1:$PORT" -- "$urls" >> "$log" 2>&1 || true
    done
}
pushes() {
    local n=0
    while [ $((SECONDS + PUSH)) -lt $END ]; do
        sleep "$PUSH"; n=$((n + 1))
        echo "soak $n" >> "$STATE/work/soak.txt"
        git -C "$STATE/work" add soak.txt && git -C "$STATE/work" commit -qm "soak push $n"
        git -C "$STATE/work" push -q origin HEAD >> "$STATE/push.log" 2>&1 && echo ok >> "$STATE/pushes" || echo failed >> "$STATE/pushes"
    done
}
reloads() {
    while [ $((SECONDS + RELOAD)) -lt $END ]; do sleep "$RELOAD"; kill -HUP "$CGITD_PID"; echo >> "$STATE/hups"; done
}
sample() {
    local t0=$SECONDS
    echo "seconds,rss_kib,fds,threads,allocated_kib,resident_kib,responses_kib,indexes_kib,caches_kib" > "$STATE/samples.csv"
    echo "seconds,cache,kib" > "$STATE/caches.csv"
    while [ $SECONDS -lt $END ]; do
        local rss fds threads memory
        rss=$(awk '/^RssAnon:/ {print $2}' /proc/"$CGITD_PID"/status)
        threads=$(awk '/^Threads:/ {print $2}' /proc/"$CGITD_PID"/status)
        fds=$(ls /proc/"$CGITD_PID"/fd | wc -l)
        memory=$(curl -s --max-time 5 "http://127.0.0.1:$PORT/metrics" | awk '
            /^cgitd_allocator_bytes\{kind="allocated"\}/ {a = $2} /^cgitd_allocator_bytes\{kind="resident"\}/ {r = $2}
            /^cgitd_response_cache_bytes / {c = $2} /^cgitd_commit_index_bytes / {i = $2}
            /^cgitd_cache_bytes\{/ {k += $2}
            END {printf "%d,%d,%d,%d,%d", a / 1024, r / 1024, c / 1024, i / 1024, k / 1024}')
        echo "$((SECONDS - t0)),$rss,$fds,$threads,$memory" >> "$STATE/samples.csv"
        curl -s --max-time 5 "http://127.0.0.1:$PORT/metrics" | awk -v t=$((SECONDS - t0)) -F'[" ]' '
            /^cgitd_cache_bytes\{/ {printf "%d,%s,%d\n", t, $2, $4 / 1024}' >> "$STATE/caches.csv"
        sleep 10
    done
}
: > "$STATE/pushes"; : > "$STATE/hups"
echo "soak: $SOURCE for ${DUR}s: crawler $CRAWL connections, flood $FLOOD, a push every ${PUSH}s, SIGHUP every ${RELOAD}s"
load "$CRAWL" "$STATE/crawl.txt" "$STATE/crawl.wrk" & a=$!
load "$FLOOD" "$STATE/flood.txt" "$STATE/flood.wrk" & b=$!
pushes & c=$!
reloads & d=$!
sample & e=$!
wait $a $b $c $d $e
if [ -n "$CGROUP" ]; then
    kills=$(cat "$CGROUP/memory.events" "$CGROUP/memory.oom_control" 2>/dev/null | awk '$1 == "oom_kill" {print $2; exit}' || true)
    echo "cgroup limit $MEMORY_MAX: OOM kills ${kills:-0}"
fi
kill -0 "$CGITD_PID" 2>/dev/null || { echo "cgitd died during the soak; its log: $STATE/cgitd.out" >&2; exit 1; }
curl -sf "http://127.0.0.1:$PORT/metrics" > "$STATE/metrics.txt"
grep -E '^cgitd_memory_(pressure_episodes_total|limit_bytes) ' "$STATE/metrics.txt" || true
curl -sf -o /dev/null "http://127.0.0.1:$PORT/git/commit/?h=master" || curl -sf -o /dev/null "http://127.0.0.1:$PORT/git/" ||
    echo "warning: cgitd did not answer after the soak"

python3 - "$STATE" "$WARMUP" "$PLOT" <<'PY'
import re, sys
state, warmup, plot = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = [list(map(int, l.split(","))) for l in open(f"{state}/samples.csv").read().split("\n")[1:] if l]
after = [r for r in rows if r[0] >= warmup]
def slope(points):
    n = len(points); mx = sum(x for x, _ in points) / n; my = sum(y for _, y in points) / n
    den = sum((x - mx) ** 2 for x, _ in points) or 1
    return sum((x - mx) * (y - my) for x, y in points) / den
rss_slope = slope([(r[0], r[1] / 1024) for r in after]) * 600
print(f"samples: {len(rows)} ({len(after)} after the {warmup} s warm-up)")
print(f"RssAnon: {rows[0][1] / 1024:.0f} MiB at start, {max(r[1] for r in rows) / 1024:.0f} MiB peak, "
      f"{rows[-1][1] / 1024:.0f} MiB at the end; slope after warm-up {rss_slope:+.2f} MiB per 10 min (target ≤ 1)")
outside = slope([(r[0], (r[4] - r[8]) / 1024) for r in after]) * 600
caches = slope([(r[0], r[8] / 1024) for r in after]) * 600
print(f"heap outside the bounded caches (jemalloc allocated − cgitd_cache_bytes): slope after warm-up "
      f"{outside:+.2f} MiB per 10 min (the caches themselves: {caches:+.2f})")
def median(values):
    values = sorted(values); return values[len(values) // 2] if values else 0
windows = [[r for r in rows if w <= r[0] < w + 600] for w in range(0, rows[-1][0] + 1, 600)]
windows = [w for w in windows if w]
print("10-minute medians, MiB, RssAnon / allocated / caches:",
      ", ".join(f"{median(r[1] for r in w) / 1024:.0f}/{median(r[4] for r in w) / 1024:.0f}/"
                f"{median(r[8] for r in w) / 1024:.0f}" for w in windows))
per_cache = {}
for line in open(f"{state}/caches.csv").read().split("\n")[1:]:
    if line:
        t, name, kib = line.split(","); per_cache.setdefault(name, []).append((int(t), int(kib)))
print("each cache, median MiB of the first and last 10 minutes after warm-up:", ", ".join(
    f"{name} {median(k for t, k in v if warmup <= t < warmup + 600) / 1024:.1f}→"
    f"{median(k for t, k in v if t >= rows[-1][0] - 600) / 1024:.1f}" for name, v in sorted(per_cache.items())))
print(f"fds after warm-up: {min(r[2] for r in after)}–{max(r[2] for r in after)}; "
      f"threads {min(r[3] for r in after)}–{max(r[3] for r in after)}")
status = {}
reloads = 0
for line in open(f"{state}/metrics.txt"):
    m = re.match(r'cgitd_requests_total\{.*status="(\d+)".*\} (\d+)', line)
    if m: status[m[1]] = status.get(m[1], 0) + int(m[2])
    m = re.match(r"cgitd_config_reloads(?:_total)? (\d+)", line)
    if m: reloads = int(m[1])
bad = sum(n for s, n in status.items() if s.startswith("5") and s != "503")
print("answers by status:", ", ".join(f"{s}: {n}" for s, n in sorted(status.items())), f"(5xx other than 503: {bad})")
pushes = open(f"{state}/pushes").read().split()
print(f"pushes: {pushes.count('ok')} ok, {pushes.count('failed')} failed; SIGHUPs sent: "
      f"{len(open(f'{state}/hups').read().splitlines())}, reloads that took effect: {reloads}")

# The plot: RssAnon (MiB) and open fds against minutes, one panel each.
W, H, L, T = 640, 180, 56, 24
def panel(y0, series, label, colour):
    top = max(series) * 1.1 or 1
    xs = [L + (W - L - 16) * r[0] / max(rows[-1][0], 1) for r in rows]
    ys = [y0 + T + (H - T - 24) * (1 - v / top) for v in series]
    pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys))
    base = y0 + H - 24
    out = [f'<text x="{L}" y="{y0 + 16}" font-size="13">{label} (peak {max(series):.0f})</text>',
           f'<line x1="{L}" y1="{base}" x2="{W - 16}" y2="{base}" stroke="#888"/>',
           f'<line x1="{L}" y1="{y0 + T}" x2="{L}" y2="{base}" stroke="#888"/>',
           f'<text x="{L - 6}" y="{y0 + T + 4}" font-size="11" text-anchor="end">{top:.0f}</text>',
           f'<text x="{L - 6}" y="{base}" font-size="11" text-anchor="end">0</text>',
           f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{pts}"/>']
    wx = L + (W - L - 16) * warmup / max(rows[-1][0], 1)
    out.append(f'<line x1="{wx:.1f}" y1="{y0 + T}" x2="{wx:.1f}" y2="{base}" stroke="#bbb" stroke-dasharray="4 3"/>')
    return out
body = panel(0, [r[1] / 1024 for r in rows], "RssAnon, MiB", "#c33") + panel(H, [r[2] for r in rows], "open file descriptors", "#36c")
minutes = rows[-1][0] / 60
body.append(f'<text x="{L}" y="{2 * H + 8}" font-size="11">0</text>')
body.append(f'<text x="{W - 16}" y="{2 * H + 8}" font-size="11" text-anchor="end">{minutes:.0f} min (dashed: end of warm-up)</text>')
with open(plot, "w") as f:
    f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{2 * H + 16}" font-family="sans-serif">\n')
    f.write('<rect width="100%" height="100%" fill="white"/>\n' + "\n".join(body) + "\n</svg>\n")
print(f"plot: {plot}")
PY
