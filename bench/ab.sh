#!/bin/bash
# Two cgitd binaries on the crawler's mix, alternated, to tell a change from the machine's noise.
#
# Makes bench/crawler.sh's URL list for REPO (commit, diff, tree, plain at random commits, deep
# log pages), then for each round serves REPO with each binary in turn, a fresh process each
# time, and crawls the same window of distinct URLs (a new window each round) with CONNS
# connections for DUR seconds; prints pages/s and peak RssAnon per binary and round.
#
# usage: bench/ab.sh REPO BINARY_A BINARY_B [BINARY...]
# env:   ROUNDS=3, DUR=12, CONNS=32, AE (an Accept-Encoding for every request, e.g.
#        AE='gzip, deflate, br'), PORT=8491, STATE=/tmp/cgitd-ab
# Only 127.0.0.1 is contacted; every run is bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
ROUNDS=${ROUNDS:-3}; DUR=${DUR:-12}; CONNS=${CONNS:-32}; PORT=${PORT:-8491}
STATE=${STATE:-/tmp/cgitd-ab}
REPO=$(cd "$1" && pwd); shift
[ $# -ge 2 ] || { echo "usage: bench/ab.sh REPO BINARY_A BINARY_B [BINARY...]" >&2; exit 2; }
mkdir -p "$STATE"
WINDOW=60000
DUR=1 URLS=$(( (ROUNDS + 1) * WINDOW )) ONLY=cgitd CGITD=$1 STATE=$STATE/crawl \
    bench/crawler.sh "$REPO" > /dev/null
walk_script "$STATE/walk.lua"
printf 'virtual-root=/\nrepo.url=git\nrepo.path=%s\n' "$REPO" > "$STATE/cgitrc"
HEADER=()
[ -z "${AE:-}" ] || HEADER=(-H "Accept-Encoding: $AE")

echo "repository: $REPO; $ROUNDS rounds of ${DUR}s, $CONNS connections; Accept-Encoding: ${AE:-none}"
for round in $(seq "$ROUNDS"); do
    sed -n "$((1 + round * WINDOW)),$(((round + 1) * WINDOW))p" "$STATE/crawl/urls.txt" > "$STATE/urls.txt"
    for binary in "$@"; do
        "$binary" serve --config "$STATE/cgitrc" --listen 127.0.0.1:$PORT > "$STATE/cgitd.out" 2>&1 &
        pid=$!
        for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/git/" && break; sleep 0.1; done
        sleep 2 # the commit index builds after the first page
        python3 bench/peak-rss.py "$pid" "$DUR" > "$STATE/rss" &
        rss=$!
        rate=$(wrk -t1 -c"$CONNS" -d"${DUR}s" "${HEADER[@]}" -s "$STATE/walk.lua" \
            "http://127.0.0.1:$PORT" -- "$STATE/urls.txt" | awk '/Requests\/sec/ {printf "%.0f", $2}')
        wait $rss || true
        kill $pid; wait $pid 2> /dev/null || true
        echo "round $round $binary: $rate pages/s, $(cat "$STATE/rss")"
    done
done
