#!/bin/bash
# clone.sh — clones and fetches from cgitd's smart HTTP beside `git http-backend` under
# lighttpd, on one repository, in the same run: wall time (the client's included) and the
# server's CPU (cgitd's own; lighttpd's and its reaped CGI children's) for a full bare clone
# and the same clone again (cgitd sends its kept pack), a --depth 1 clone once and again
# (median of RUNS-1), an incremental fetch of 10 commits (median of RUNS), and cgitd's peak
# RssAnon. Loopback only; nothing is written outside STATE.
#
# Usage: bench/clone.sh [REPO]   (default: the git.git mirror)
# Settings: RUNS=3, STATE=/tmp/cgitd-bench-clone, CGITD=binary (default: a release build),
#           CGITD_PORT=18301, BACKEND_PORT=18302, FULL=1 (0 skips the full clones),
#           CONCURRENT=8 (0 skips the concurrent clones), COLD=0 (1 drops the page cache
#           before each server's first full clone; needs root).
set -euo pipefail
REPO=$(cd "${1:-/work/.mirror/git+git/repo}" && pwd)
RUNS=${RUNS:-3}
STATE=${STATE:-/tmp/cgitd-bench-clone}
CGITD_PORT=${CGITD_PORT:-18301}
BACKEND_PORT=${BACKEND_PORT:-18302}
FULL=${FULL:-1}
CONCURRENT=${CONCURRENT:-8}
COLD=${COLD:-0}
TICK=$(getconf CLK_TCK)
rm -rf "$STATE" && mkdir -p "$STATE/root"
ln -s "$REPO" "$STATE/root/repo"
if [ -z "${CGITD:-}" ]; then cargo build --release --locked -q; CGITD=./target/release/cgitd; fi

printf 'enable-http-clone=1\nrepo.url=repo\nrepo.path=%s\n' "$REPO" > "$STATE/cgitrc"
"$CGITD" serve --config "$STATE/cgitrc" --listen "127.0.0.1:$CGITD_PORT" > "$STATE/cgitd.log" 2>&1 &
CGITD_PID=$!
cat > "$STATE/lighttpd.conf" <<EOF
server.port = $BACKEND_PORT
server.bind = "127.0.0.1"
server.document-root = "$STATE/root"
server.errorlog = "$STATE/lighttpd.err"
server.modules = ("mod_alias", "mod_cgi", "mod_setenv")
alias.url = ("/git" => "$(git --exec-path)/git-http-backend")
\$HTTP["url"] =~ "^/git" {
  cgi.assign = ("" => "")
  setenv.add-environment = ("GIT_PROJECT_ROOT" => "$STATE/root", "GIT_HTTP_EXPORT_ALL" => "1")
}
EOF
lighttpd -D -f "$STATE/lighttpd.conf" &
BACKEND_PID=$!
trap 'kill $CGITD_PID $BACKEND_PID 2>/dev/null || true' EXIT
sleep 1

# server_cpu PID: its CPU seconds so far, with its reaped children's.
server_cpu() { awk -v t="$TICK" '{ printf "%.2f", ($14 + $15 + $16 + $17) / t }' "/proc/$1/stat"; }
rss_anon() { awk '/RssAnon/ { print $2 }' "/proc/$1/status"; }

declare -A URL=([cgitd]="http://127.0.0.1:$CGITD_PORT/repo" [http-backend]="http://127.0.0.1:$BACKEND_PORT/git/repo")
declare -A PID=([cgitd]=$CGITD_PID [http-backend]=$BACKEND_PID)
# RssAnon of cgitd, sampled every 0.2 s for the whole run.
( while kill -0 "$CGITD_PID" 2>/dev/null; do rss_anon "$CGITD_PID" >> "$STATE/rss"; sleep 0.2; done ) &

# measure SYSTEM LABEL COMMAND...: runs the command, prints "LABEL SYSTEM wall cpu".
measure() {
    local system=$1 label=$2; shift 2
    local cpu0 t0 t1 cpu1
    cpu0=$(server_cpu "${PID[$system]}"); t0=$(date +%s.%N)
    "$@" > /dev/null 2>> "$STATE/git.err"
    t1=$(date +%s.%N); cpu1=$(server_cpu "${PID[$system]}")
    echo "$label $system $(echo "$t1 - $t0" | bc) $(echo "$cpu1 - $cpu0" | bc)"
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# A client 10 commits behind on master: fetched once over the local transport.
OLD=$(git -C "$REPO" rev-parse master~10)
git init -q --bare "$STATE/behind.git"
git -C "$STATE/behind.git" fetch -q "file://$REPO" "$OLD"
git -C "$STATE/behind.git" update-ref refs/heads/master "$OLD"

results=$STATE/results
: > "$results"
for system in http-backend cgitd; do
    url=${URL[$system]}
    if [ "$FULL" = 1 ]; then
        rm -rf "$STATE/full.git"
        for label in full full-again; do
            if [ "$label" = full ] && [ "$COLD" = 1 ]; then sync && echo 3 > /proc/sys/vm/drop_caches; fi
            measure "$system" $label git clone -q --bare "$url" "$STATE/full.git" >> "$results"
            git -C "$STATE/full.git" fsck --connectivity-only --no-dangling >/dev/null
            rm -rf "$STATE/full.git"
        done
    fi
    for run in $(seq "$RUNS"); do
        rm -rf "$STATE/shallow.git"
        label=depth1-again; [ "$run" = 1 ] && label=depth1
        measure "$system" $label git clone -q --bare --depth 1 "$url" "$STATE/shallow.git" >> "$results"
        rm -rf "$STATE/fetch.git"; cp -a "$STATE/behind.git" "$STATE/fetch.git"
        measure "$system" fetch10 git -C "$STATE/fetch.git" fetch -q "$url" master:refs/heads/master >> "$results"
        [ "$(git -C "$STATE/fetch.git" rev-parse master)" = "$(git -C "$REPO" rev-parse master)" ]
    done
done

echo "repository: $REPO ($(git -C "$REPO" rev-list --count HEAD) commits on HEAD)"
printf '%-8s %-13s %9s %9s\n' what server wall_s cpu_s
for label in full full-again depth1 depth1-again fetch10; do
    for system in http-backend cgitd; do
        rows=$(awk -v l=$label -v s=$system '$1 == l && $2 == s' "$results")
        [ -n "$rows" ] || continue
        printf '%-8s %-13s %9s %9s\n' $label $system \
            "$(awk '{ print $3 }' <<< "$rows" | median)" "$(awk '{ print $4 }' <<< "$rows" | median)"
    done
done
echo "cgitd peak RssAnon: $(( $(sort -n "$STATE/rss" | tail -1) / 1024 )) MiB"

if [ "$CONCURRENT" -gt 0 ]; then
    # Distinct shallow-since dates make every clone's pack a new one: none comes kept.
    from=$(wc -l < "$STATE/rss"); t0=$(date +%s.%N); cpu0=$(server_cpu "$CGITD_PID")
    clones=()
    for i in $(seq "$CONCURRENT"); do
        git clone -q --bare --shallow-since="$((2004 + i))-01-01" "${URL[cgitd]}" \
            "$STATE/concurrent-$i.git" > /dev/null 2>> "$STATE/git.err" &
        clones+=($!)
    done
    for pid in "${clones[@]}"; do wait "$pid"; done
    t1=$(date +%s.%N); cpu1=$(server_cpu "$CGITD_PID")
    for i in $(seq "$CONCURRENT"); do
        git -C "$STATE/concurrent-$i.git" fsck --connectivity-only --no-dangling > /dev/null
    done
    echo "$CONCURRENT concurrent clones (--shallow-since 2005..): wall $(echo "$t1 - $t0" | bc) s," \
        "cgitd CPU $(echo "$cpu1 - $cpu0" | bc) s, peak RssAnon" \
        "$(( $(tail -n +"$from" "$STATE/rss" | sort -n | tail -1) / 1024 )) MiB"
    rm -rf "$STATE"/concurrent-*.git
fi
