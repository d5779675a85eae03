#!/usr/bin/env bash
# Screenshots of representative pages — summary, log with the commit graph, a highlighted
# blob, blame and a commit — each light, dark and 390 px wide, with headless Chromium, and
# the number of HTML5 parse errors of each of them and of a few more pages (index, tree,
# refs, diff, side-by-side diff, stats, log with messages, tag), by check/html5errors.py
# (html5lib). PNGs are optimised with optipng when it is installed.
#
#   check/screenshots.sh [REPO]     (default: /work/.mirror/git+git/repo if present, else the
#                                    repository this is run in)
#
# Environment: OUT (default docs/screenshots), CGITD (a built binary; default: `cargo build`
# and target/debug/cgitd), BLOB (the file shown; default: the first of strbuf.c, src/lib.rs,
# README.md at HEAD), BLAME (the file blamed; default: the C, Rust, shell or Python file added
# last), HEIGHT (window height, default 900).
set -euo pipefail
cd "$(dirname "$0")/.."

repo=${1:-/work/.mirror/git+git/repo}
[ -d "$repo" ] || repo=$(git rev-parse --absolute-git-dir)
out=${OUT:-docs/screenshots}
height=${HEIGHT:-900}
if [ -z "${CGITD:-}" ]; then
    cargo build --quiet
    CGITD=target/debug/cgitd
fi
mkdir -p "$out"

first_file() {
    for f in "$@"; do
        if git --git-dir="$repo" cat-file -e "HEAD:$f" 2>/dev/null; then
            echo "$f"
            return
        fi
    done
    git --git-dir="$repo" ls-tree --name-only HEAD | head -1
}
# Blame walks back to where each line came from: a file added not long ago is blamed quickly
# on a large repository without a commit-graph.
recent_file() {
    git --git-dir="$repo" log --diff-filter=A --format= --name-only -n 300 HEAD -- \
        '*.c' '*.h' '*.rs' '*.sh' '*.py' |
        while read -r f; do
            git --git-dir="$repo" cat-file -e "HEAD:$f" 2>/dev/null && echo "$f"
        done | head -1 || true
}
blob=${BLOB:-$(first_file strbuf.c src/lib.rs README.md)}
blame=${BLAME:-$(recent_file)}
blame=${blame:-$blob}
commit=$(git --git-dir="$repo" rev-list --no-merges -1 HEAD)

tmp=$(mktemp -d)
cleanup() {
    [ -n "${server:-}" ] && kill "$server" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

cat > "$tmp/cgitrc" <<RC
enable-commit-graph=1
enable-blame=1
enable-log-filecount=1
enable-log-linecount=1
enable-index-owner=1
max-stats=quarter
snapshots=tar.gz zip
repo.url=repo
repo.path=$repo
repo.desc=the repository cgitd's screenshots show
repo.owner=cgitd
RC

"$CGITD" serve --config "$tmp/cgitrc" --listen 127.0.0.1:0 > "$tmp/stdout" 2> "$tmp/stderr" &
server=$!
for _ in $(seq 100); do
    grep -q http:// "$tmp/stdout" 2>/dev/null && break
    sleep 0.1
done
base=$(grep -o 'http://[^ ]*' "$tmp/stdout" | head -1)
base=${base%/}

pages=(
    "summary=$base/repo/"
    "log=$base/repo/log/"
    "blob=$base/repo/tree/$blob"
    "blame=$base/repo/blame/$blame"
    "commit=$base/repo/commit/?id=$commit"
)

# Checked for parse errors too, not photographed.
tag=$(git --git-dir="$repo" for-each-ref --sort=-creatordate --count=1 --format='%(refname:short)' refs/tags)
more=(
    "index=$base/"
    "tree=$base/repo/tree/"
    "refs=$base/repo/refs/"
    "diff=$base/repo/diff/?id=$commit"
    "ssdiff=$base/repo/commit/?id=$commit&ss=1"
    "stats=$base/repo/stats/"
    "showmsg=$base/repo/log/?showmsg=1"
)
[ -n "$tag" ] && more+=("tag=$base/repo/tag/?h=$tag")

shoot() { # FILE WIDTH URL [FLAGS...]
    local file=$1 width=$2 url=$3
    shift 3
    timeout 120 /usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update --disable-sync \
        --hide-scrollbars --user-data-dir="$(mktemp -d -p "$tmp")" "$@" \
        --screenshot="$file" --window-size="$width,$height" "$url" > /dev/null 2>&1
}

echo "HTML5 parse errors (html5lib) per page:"
python3 check/html5errors.py "${pages[@]}" "${more[@]}" || true
for page in "${pages[@]}"; do
    name=${page%%=*}
    url=${page#*=}
    shoot "$out/$name-light.png" 1280 "$url"
    # --force-dark-mode makes prefers-color-scheme dark (checked on the PNGs).
    shoot "$out/$name-dark.png" 1280 "$url" --force-dark-mode
    shoot "$out/$name-390.png" 390 "$url"
done
if command -v optipng > /dev/null; then
    optipng -quiet -o2 "$out"/*.png
fi
du -ch "$out"/*.png | tail -1
