# Shared by the bench scripts: the repository, wrk, a release cgitd and Debian's cgit beside
# it (storm.sh, crawler.sh, pgo-build.sh), a keep-alive median (compare.sh, forks.sh, many.sh),
# a wrk script walking a list of URLs (profile.sh, pgo-build.sh). Source it
# from the repository root; the start-up functions read STATE, CGIT_PORT, CGITD_PORT and ONLY
# (cgit|cgitd|empty), and CGITD may name a binary to use.

BASELINE=$(pwd)/../shared/tools/cgit-baseline.sh
CGIT_PID=${CGIT_PID:-}; CGITD_PID=${CGITD_PID:-}

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

# wait_for_cgi: until the CGI processes cgit's web server started have all ended (at most 30 s;
# then the ones left are stopped, and how many is said), so that renders left over from cgit's
# run do not take the CPU from the next system's run.
wait_for_cgi() {
    local left
    for _ in $(seq 300); do
        left=$(cat /proc/"$CGIT_PID"/task/*/children 2>/dev/null || true)
        [ -z "$left" ] && return
        sleep 0.1
    done
    echo "($(wc -w <<< "$left") of cgit's CGI processes still ran 30 s after its run: stopped)"
    kill $left 2>/dev/null || true
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

# median_ms URL: the median latency in ms of URL over one keep-alive connection for DUR
# seconds (wrk; extra request headers in the array WRK_H, if set).
median_ms() {
    wrk -t1 -c1 -d"${DUR}s" --timeout 30s --latency ${WRK_H[@]+"${WRK_H[@]}"} "$1" 2>/dev/null | awk '
        $1=="50%" { v=$2; u=v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
                    if (u=="us") v/=1000; else if (u=="s") v*=1000; else if (u=="m") v*=60000;
                    printf "%.3f", v; found=1 }
        END { if (!found) printf "n/a" }'
}

# walk_script FILE: writes a wrk script that asks for the URLs of the file named after wrk's
# `--`, in order, starting again at the top when they run out.
walk_script() {
    cat > "$1" <<'LUA'
local urls = {}
function init(args) for line in io.lines(args[1]) do urls[#urls + 1] = line end; n = 0 end
function request() n = n + 1; return wrk.format("GET", urls[((n - 1) % #urls) + 1]) end
LUA
}
