#!/bin/bash
# Start-up and first answers of one release cgitd on a big repository (issue 43's figures).
#
# Starts `cgitd serve` on REPO and reports: the time to its first answer (`/git/`) and the
# bytes it had read from disk by then (with COLD=1 the page cache is dropped first; needs
# root); the time until the commit index is ready (`cgitd_commit_index_builds_total` ≥ 1 in /metrics), with
# the peak RssAnon meanwhile (sampled every 50 ms; VmHWM also counts the mapped pack) and
# RssAnon after; then the first-request time (curl) of
# pages that grow with the repository: a deep log offset, a path-limited log, blame of a
# top-level file (BLAME_FILE), the biggest directory's tree, refs, and a
# snapshot of HEAD. Run it once on a repository without a commit-graph and once on a copy
# with one (bench/make-corpus.py --commit-graph-copy).
#
# usage: bench/scale.sh REPO
# env:   COLD=0, BLAME_FILE=path, PORT=8483, STATE=/tmp/cgitd-scale, CGITD=path (a release build unless given)
# Only 127.0.0.1 is contacted.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-8483}; STATE=${STATE:-/tmp/cgitd-scale}; ONLY=cgitd
. bench/lib.sh
REPO=$(bench_repo "${1:?usage: bench/scale.sh REPO}")
prepare_tools
rm -rf "$STATE" && mkdir -p "$STATE"
printf 'virtual-root=/\nmetrics-path=/metrics\nsnapshots=tar.gz\nenable-blame=1\nrepo.url=git\nrepo.path=%s\n' \
    "$REPO" > "$STATE/cgitrc"
base=http://127.0.0.1:$PORT
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f s", b - a }'; }
kib() { awk -v k="$(awk "/^$1:/ {print \$2}" /proc/"$CGITD_PID"/status)" 'BEGIN { printf "%.0f MiB", k / 1024 }'; }

if [ "${COLD:-0}" = 1 ]; then sync && echo 3 > /proc/sys/vm/drop_caches; fi
t0=$(now)
"$CGITD" serve --config "$STATE/cgitrc" --listen 127.0.0.1:$PORT > "$STATE/cgitd.out" 2>&1 &
CGITD_PID=$!
trap 'kill $CGITD_PID 2>/dev/null || true' EXIT
until curl -sf -o /dev/null "$base/git/"; do sleep 0.01; done
echo "first answer: $(since "$t0"), $(awk '/^read_bytes:/ { printf "%.0f MiB", $2 / 1048576 }' /proc/"$CGITD_PID"/io) read from disk"
peak=0
until curl -sf "$base/metrics" | grep -Eq '^cgitd_commit_index_builds_total [1-9]'; do
    anon=$(awk '/^RssAnon:/ {print $2}' /proc/"$CGITD_PID"/status)
    [ "$anon" -le "$peak" ] || peak=$anon
    sleep 0.05
    [ $(($(date +%s) - ${t0%.*})) -lt 600 ] || { echo "no commit index after 600 s" >&2; exit 1; }
done
echo "commit index ready: $(since "$t0") (RssAnon peak $((peak / 1024)) MiB meanwhile, $(kib RssAnon) after)"

# The pages: BLAME_FILE (MAINTAINERS if HEAD has one, else its first top-level file), the
# biggest directory at HEAD, the deepest.
g() { git --git-dir="$REPO" "$@"; }
commits=$(g rev-list --count HEAD)
top_file=${BLAME_FILE:-$(g ls-tree --name-only HEAD MAINTAINERS)}
top_file=${top_file:-$(g ls-tree HEAD | awk '$2 == "blob" && !f { sub(/^[^\t]*\t/, ""); f = $0 } END { print f }')}
# The directory with the most entries, and the deepest one (whole lists read: no early exit
# under pipefail).
big_dir=$(g ls-tree -r --name-only HEAD | awk -F/ 'NF > 1 { sub(/\/[^\/]*$/, ""); n[$0]++ }
    END { for (d in n) if (n[d] > most) { most = n[d]; big = d }; print big }')
deep_dir=$(g ls-tree -r -d --name-only HEAD | awk -F/ 'NF > most { most = NF; deep = $0 } END { print deep }')
first() { curl -s -o /dev/null -w "%{http_code} %{time_total} s %{size_download} bytes" "$base/git/$1"; }
echo "pages, first request (HEAD has $commits commits):"
for url in "log/?ofs=$((commits * 4 / 5))" "log/$deep_dir" "blame/$top_file" "tree/$big_dir" refs/ "snapshot/git-master.tar.gz"; do
    printf '  %-60s %s\n' "$url" "$(first "$url")"
done
echo "RssAnon at the end: $(kib RssAnon)"
