#!/bin/bash
# Ten thousand repositories: N small bare repositories (one commit each, copies of a template)
# in 100 folders under one scan-path (section-from-path=1), served by cgitd and by Debian's cgit
# (same run, same machine). Measures cgitd's start-up to its first answer (the index) and to the
# first summary, the index, an index search and a later index page through a keep-alive client
# (wrk -t1 -c1, p50) with the response cache on and off, a SIGHUP reload (and whether it opened
# any repository again), cgitd's RssAnon, and cgit's index and summary.
#
# usage: bench/many.sh [N]          N: repositories (default 10000)
# env:   DUR=3 (seconds per wrk run), STATE=/tmp/cgitd-many (repositories, configs, logs)
# Only 127.0.0.1 is ever contacted; every load run is bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DUR=${DUR:-3}
N=${1:-10000}
CGIT_PORT=${CGIT_PORT:-8085}; CGITD_PORT=${CGITD_PORT:-8086}
STATE=${STATE:-/tmp/cgitd-many}
FOLDERS=100
mkdir -p "$STATE"

command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -q wrk >/dev/null; }
cargo build --release --locked -q

# The repositories: a template with one commit, copied per folder, the folders copied whole.
TREE=$STATE/repos
if [ "$(cat "$STATE/made" 2>/dev/null)" != "$N" ]; then
    echo "making $N repositories in $TREE..." >&2
    rm -rf "$TREE" "$STATE/template.git" "$STATE/folder"; mkdir -p "$TREE" "$STATE/folder"
    git init -q --bare --template= -b main "$STATE/template.git"
    printf 'blob\nmark :1\ndata 6\nhello\ncommit refs/heads/main\nmark :2\ncommitter bench <b@example.com> 1700000000 +0000\ndata 6\nfirst\nM 100644 :1 README\n' \
        | git --git-dir="$STATE/template.git" fast-import --quiet
    per=$(( (N + FOLDERS - 1) / FOLDERS ))
    for j in $(seq -w 0 $((per - 1))); do cp -a "$STATE/template.git" "$STATE/folder/repo$j.git"; done
    made=0
    for i in $(seq -w 0 $((FOLDERS - 1))); do
        [ $made -ge "$N" ] && break
        cp -a "$STATE/folder" "$TREE/f$i"
        made=$((made + per))
    done
    echo "$N" > "$STATE/made"
fi
COUNT=$(find "$TREE" -mindepth 2 -maxdepth 2 -name '*.git' | wc -l)

cat > "$STATE/rc-extra" <<RC
section-from-path=1
remove-suffix=1
scan-path=$TREE
RC
PORT=$CGIT_PORT CGIT_REPO=$STATE/template.git CGIT_STATE=$STATE/cgit CGIT_RC_EXTRA=$STATE/rc-extra "$BASELINE" restart

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# Starts cgitd with the response cache of size $1; sets CGITD_PID, STARTED and FIRST (ms to
# the first index).
start_cgitd() {
    cat > "$STATE/cgitrc" <<RC
virtual-root=/
metrics-path=/metrics
response-cache-size=$1
$(cat "$STATE/rc-extra")
RC
    STARTED=$(now_ms)
    ./target/release/cgitd serve --config "$STATE/cgitrc" --listen 127.0.0.1:$CGITD_PORT > "$STATE/cgitd.out" 2>&1 &
    CGITD_PID=$!
    for _ in $(seq 2000); do curl -sf -o /dev/null "http://127.0.0.1:$CGITD_PORT/" && break; sleep 0.005; done
    FIRST=$(( $(now_ms) - STARTED ))
}
stop_cgitd() { kill "$CGITD_PID" 2>/dev/null || true; wait "$CGITD_PID" 2>/dev/null || true; }
cleanup() { stop_cgitd; PORT=$CGIT_PORT CGIT_STATE=$STATE/cgit "$BASELINE" stop >/dev/null 2>&1 || true; }
trap cleanup EXIT

one_ms() { curl -s -o /dev/null -w '%{time_total}\n' "$1" | awk '{printf "%.1f", $1 * 1000}'; }
metric() { curl -s "http://127.0.0.1:$CGITD_PORT/metrics" | awk -v m="$1" '$1==m {print $2}'; }
rss() { grep -E "^RssAnon:" /proc/$CGITD_PID/status | tr -s ' \t' ' '; }

echo
echo "$COUNT repositories (one commit each) in $FOLDERS folders under one scan-path"
echo "cgit: Debian $(dpkg-query -W -f='${Version}' cgit 2>/dev/null) as CGI under lighttpd; cgitd: release build"
echo
start_cgitd $((64 << 20))
echo "cgitd: first index answered $FIRST ms after start"
t0=$(now_ms); curl -sf -o /dev/null "http://127.0.0.1:$CGITD_PORT/f42/repo05/"; echo "cgitd: first summary of a repository $(( $(now_ms) - t0 )) ms"
for _ in $(seq 500); do [ "$(metric cgitd_ref_watches)" = "$COUNT" ] && break; sleep 0.02; done
echo "cgitd: $(( $(now_ms) - STARTED )) ms after start $(metric cgitd_ref_watches) repositories watched"
echo "$(rss) (cgitd)"
echo
printf '| %-36s | %-12s | %-12s |\n' "work (ms, wrk -t1 -c1 p50)" cgit cgitd
printf '|%s|\n' "--------------------------------------|--------------|--------------"
row() { printf '| %-36s | %-12s | %-12s |\n' "$1" "$2" "$3"; }
c_index=$(one_ms "http://127.0.0.1:$CGIT_PORT/")
row "index (cgit: one request)" "$c_index" "$(median_ms "http://127.0.0.1:$CGITD_PORT/")"
row "index search ?q=repo07 (cgit: one)" "$(one_ms "http://127.0.0.1:$CGIT_PORT/?q=repo07")" "$(median_ms "http://127.0.0.1:$CGITD_PORT/?q=repo07")"
row "index page 100 ?ofs=4950 (cgit: one)" "$(one_ms "http://127.0.0.1:$CGIT_PORT/?ofs=4950")" "$(median_ms "http://127.0.0.1:$CGITD_PORT/?ofs=4950")"
row "summary f42/repo05 (cgit: one)" "$(one_ms "http://127.0.0.1:$CGIT_PORT/f42/repo05/")" "$(median_ms "http://127.0.0.1:$CGITD_PORT/f42/repo05/")"
opened=$(metric cgitd_repositories_opened_total)
kill -HUP "$CGITD_PID"
t0=$(now_ms)
for _ in $(seq 500); do [ "$(metric cgitd_config_reloads_total)" = "1" ] && break; sleep 0.01; done
echo
echo "cgitd: SIGHUP reload done within $(( $(now_ms) - t0 )) ms; repositories opened before $opened, after $(metric cgitd_repositories_opened_total)"
stop_cgitd

start_cgitd 0
echo "cgitd without the response cache: first index $FIRST ms after start"
for _ in $(seq 500); do [ "$(metric cgitd_ref_watches)" = "$COUNT" ] && break; sleep 0.02; done
for p in "index /" "index search /?q=repo07" "index page 100 /?ofs=4950" "index sorted by idle /?s=idle"; do
    name=${p% *}; path=${p##* }
    echo "  $name: $(median_ms "http://127.0.0.1:$CGITD_PORT$path") ms"
done
echo "$(rss) (cgitd)"
