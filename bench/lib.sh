# Start-up shared by the load scripts (storm.sh, crawler.sh): the repository, wrk, a release
# cgitd and Debian's cgit beside it. Source it from the repository root after setting STATE,
# CGIT_PORT, CGITD_PORT and ONLY (cgit|cgitd|empty); CGITD may name a binary to use.

BASELINE=$(pwd)/../shared/tools/cgit-baseline.sh
CGIT_PID=""; CGITD_PID=""

# bench_repo [REPO]: the absolute path of REPO, or of the git.git-shaped corpus that
# bench/make-corpus.py builds (once) when none is given.
bench_repo() {
    local repo=${1:-}
    if [ -z "$repo" ]; then
        repo=/tmp/cgitd-bench/corpus.git
        [ -d "$repo" ] || { echo "building corpus in $repo (a few minutes)..." >&2; mkdir -p "$(dirname "$repo")"; python3 bench/make-corpus.py "$repo" >&2; }
    fi
    (cd "$repo" && pwd)
}

# prepare_tools: wrk installed, and CGITD a release build unless given (or only cgit runs).
prepare_tools() {
    command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -q wrk >/dev/null; }
    CGITD=${CGITD:-}
    if [ -z "$CGITD" ] && [ "$ONLY" != cgit ]; then cargo build --release --locked -q; CGITD=./target/release/cgitd; fi
}

stop_systems() {
    [ -z "$CGITD_PID" ] || kill "$CGITD_PID" 2>/dev/null || true
    [ -z "$CGIT_PID" ] || PORT=$CGIT_PORT CGIT_STATE=$STATE/cgit "$BASELINE" stop >/dev/null 2>&1 || true
}

# start_systems REPO RC_EXTRA CGITRC: cgit over REPO with the cgitrc lines in the file RC_EXTRA
# (unless ONLY=cgitd) and cgitd with the cgitrc CGITRC (unless ONLY=cgit), each waited for;
# sets CGIT_PID and CGITD_PID; both are stopped when the script exits.
start_systems() {
    local repo=$1 extra=$2 cgitrc=$3
    trap stop_systems EXIT
    if [ "$ONLY" != cgitd ]; then
        PORT=$CGIT_PORT CGIT_REPO=$repo CGIT_STATE=$STATE/cgit CGIT_RC_EXTRA=$extra "$BASELINE" start
        CGIT_PID=$(cat "$STATE/cgit/lighttpd.pid")
    fi
    if [ "$ONLY" != cgit ]; then
        "$CGITD" serve --config "$cgitrc" --listen 127.0.0.1:$CGITD_PORT > "$STATE/cgitd.out" 2>&1 &
        CGITD_PID=$!
        for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$CGITD_PORT/" && break; sleep 0.1; done
    fi
}
