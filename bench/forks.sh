#!/bin/bash
# A thousand forks: N `git clone --bare --shared` forks of REPO in 6 sections (every 10th with a
# branch and a commit of its own), served by cgitd and by Debian's cgit (same run, same machine)
# with scan-path + section-from-path. Through a keep-alive client it measures the index, an index
# search, the summary of 20 untouched forks and then the same 20 warm, one commit page through
# 50 untouched forks, and cgitd's RssAnon; it prints cgitd's count of opened object stores; then
# it measures the index again with cgitd's response cache off (every request rendered).
#
# usage: bench/forks.sh [REPO] [N]    REPO: a git directory (default: the corpus of
#                                     bench/make-corpus.py); N: forks (default 900)
# env:   DUR=3 (seconds per wrk run), STATE=/tmp/cgitd-forks (forks, configs, logs)
# Only 127.0.0.1 is ever contacted; every load run is bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DUR=${DUR:-3}
CGIT_PORT=${CGIT_PORT:-8083}; CGITD_PORT=${CGITD_PORT:-8084}
STATE=${STATE:-/tmp/cgitd-forks}
N=${2:-900}
SECTIONS=6
mkdir -p "$STATE"

REPO=${1:-}
if [ -z "$REPO" ]; then
    REPO=/tmp/cgitd-bench/corpus.git
    [ -d "$REPO" ] || { echo "building corpus in $REPO (a few minutes)..." >&2; mkdir -p /tmp/cgitd-bench; python3 bench/make-corpus.py "$REPO"; }
fi
REPO=$(cd "$REPO" && pwd)
g() { git --git-dir="$REPO" "$@"; }

command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -q wrk >/dev/null; }
cargo build --release --locked -q

# The forks (rebuilt when N or REPO changed).
FORKS=$STATE/forks
if [ "$(cat "$STATE/made" 2>/dev/null)" != "$REPO $N" ]; then
    echo "making $N forks of $REPO in $FORKS..." >&2
    rm -rf "$FORKS"; mkdir -p "$FORKS"
    for i in $(seq 0 $((N - 1))); do
        name=$(printf 'fork%04d' "$i")
        dir=$FORKS/section$((i % SECTIONS))/$name.git
        mkdir -p "$(dirname "$dir")"
        git clone -q --bare --shared "$REPO" "$dir"
        if [ $((i % 10)) -eq 0 ]; then
            # a branch with a commit of its own: a loose object in the fork itself
            own=$(GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=b@example.com GIT_COMMITTER_NAME=bench \
                  GIT_COMMITTER_EMAIL=b@example.com git --git-dir="$dir" commit-tree \
                  -p HEAD -m "$name's own commit" "HEAD^{tree}")
            git --git-dir="$dir" update-ref "refs/heads/$name" "$own"
        fi
        echo "$name" > "$dir/description"
    done
    echo "$REPO $N" > "$STATE/made"
fi

cat > "$STATE/rc-extra" <<RC
section-from-path=1
remove-suffix=1
scan-path=$FORKS
RC
PORT=$CGIT_PORT CGIT_REPO=$REPO CGIT_STATE=$STATE/cgit CGIT_RC_EXTRA=$STATE/rc-extra "$BASELINE" restart

cat > "$STATE/cgitrc" <<RC
virtual-root=/
snapshots=tar.gz
metrics-path=/metrics
$(cat "$STATE/rc-extra")
RC
start_cgitd() {
    ./target/release/cgitd serve --config "$1" --listen 127.0.0.1:$CGITD_PORT > "$STATE/cgitd.out" 2>&1 &
    CGITD_PID=$!
    for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$CGITD_PORT/" && break; sleep 0.1; done
}
start_cgitd "$STATE/cgitrc"
cleanup() { kill $CGITD_PID 2>/dev/null || true; PORT=$CGIT_PORT CGIT_STATE=$STATE/cgit "$BASELINE" stop >/dev/null 2>&1 || true; }
trap cleanup EXIT

# A fork's URL name: section/forkNNNN (section-from-path keeps the path in the URL).
url_of() { printf 'section%d/fork%04d' $(( $1 % SECTIONS )) "$1"; }
# Untouched forks, never requested before: for summaries 1..., for commits further on; none
# of them has objects of its own (i % 10 != 0).
pick() { local from=$1 count=$2 i=$1 out=0; while [ $out -lt $count ] && [ $i -lt $N ]; do
    [ $((i % 10)) -ne 0 ] && { url_of $i; echo; out=$((out + 1)); }; i=$((i + 1)); done; }
SUMMARY_FORKS=$(pick 1 20)
COMMIT_FORKS=$(pick $((N / 2)) 50)
COMMIT=$(g rev-parse HEAD~3)

# Per-request times (ms) of URLs fetched in order over one keep-alive connection.
times_ms() {
    local args=() u
    for u in "$@"; do args+=(-o /dev/null "$u"); done
    curl -s -w '%{time_total}\n' "${args[@]}" | awk '{printf "%.3f\n", $1 * 1000}'
}
stats() { sort -n | awk '{v[NR]=$1; s+=$1} END { if (NR==0) {print "n/a"; exit}
    printf "p50 %.2f  mean %.2f  max %.2f", v[int((NR+1)/2)], s/NR, v[NR] }'; }
urls() { local port=$1 suffix=$2; shift 2; for f in "$@"; do echo "http://127.0.0.1:$port/$f/$suffix"; done; }
rss() { grep -E "^$1:" /proc/$CGITD_PID/status | tr -s ' \t' ' '; }

echo
echo "repository: $REPO ($(g rev-list --count HEAD) commits, $(g for-each-ref refs/tags | wc -l) tags); $N forks in $SECTIONS sections, every 10th with a commit of its own"
echo "cgit: Debian $(dpkg-query -W -f='${Version}' cgit 2>/dev/null) as CGI under lighttpd; cgitd: release build"
echo "$(rss RssAnon) (cgitd at start)"
echo
printf '| %-40s | %-26s | %-26s |\n' "work (ms)" cgit cgitd
printf '|%s|\n' "------------------------------------------|----------------------------|----------------------------"
for port in $CGIT_PORT $CGITD_PORT; do
    # shellcheck disable=SC2046
    times_ms $(urls $port "" $SUMMARY_FORKS) | stats > "$STATE/summary-first.$port"
    # shellcheck disable=SC2046
    times_ms $(urls $port "" $SUMMARY_FORKS) | stats > "$STATE/summary-warm.$port"
    # shellcheck disable=SC2046
    times_ms $(urls $port "commit/?id=$COMMIT" $COMMIT_FORKS) | stats > "$STATE/commit-first.$port"
done
row() { printf '| %-40s | %-26s | %-26s |\n' "$1" "$(cat "$STATE/$2.$CGIT_PORT")" "$(cat "$STATE/$2.$CGITD_PORT")"; }
row "summary, 20 untouched forks" summary-first
row "summary, the same 20 again (warm)" summary-warm
row "commit page, 50 untouched forks" commit-first
for p in "index /" "index search /?q=fork01" "index page 2 /?ofs=50"; do
    name=${p% *}; path=${p##* }
    c=$(median_ms "http://127.0.0.1:$CGIT_PORT$path"); d=$(median_ms "http://127.0.0.1:$CGITD_PORT$path")
    printf '| %-40s | %-26s | %-26s |\n' "$name (wrk p50)" "$c" "$d"
done
echo
stores=$(curl -s "http://127.0.0.1:$CGITD_PORT/metrics" | awk '/^cgitd_object_stores_opened_total/ {print $2}')
echo "cgitd object stores opened: $stores (for $((20 + 50)) untouched forks touched)"
echo "$(rss RssAnon) (cgitd after the run)"
# Every fork once (summary), then memory again: per-fork state without object stores of its own.
# shellcheck disable=SC2046
times_ms $(for i in $(seq 0 $((N - 1))); do echo "http://127.0.0.1:$CGITD_PORT/$(url_of $i)/"; done) | stats > "$STATE/all.$CGITD_PORT"
stores=$(curl -s "http://127.0.0.1:$CGITD_PORT/metrics" | awk '/^cgitd_object_stores_opened_total/ {print $2}')
echo "cgitd summary of all $N forks: $(cat "$STATE/all.$CGITD_PORT"); object stores opened: $stores"
echo "$(rss RssAnon) (cgitd after every fork's summary)"

# The index rendered on every request: the response cache off.
kill $CGITD_PID; wait $CGITD_PID 2>/dev/null || true
{ echo "response-cache-size=0"; cat "$STATE/cgitrc"; } > "$STATE/cgitrc-nocache"
start_cgitd "$STATE/cgitrc-nocache"
echo
for p in "index /" "index search /?q=fork01" "index page 2 /?ofs=50" "index by idle /?s=idle"; do
    name=${p% *}; path=${p##* }
    echo "cgitd, response cache off: $name (wrk p50) $(median_ms "http://127.0.0.1:$CGITD_PORT$path") ms"
done
