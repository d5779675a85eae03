#!/bin/sh
# Compares cgitd's rawdiff and patch pages with git's own output (`git diff`, `git format-patch`)
# for N random commits of any repository and reports how many are byte-identical.
# Usage: check/diffcheck.sh REPO [N] [SEED] [PATHSPEC...]   (pathspecs: only commits touching them)
set -eu
cd "$(dirname "$0")/.."
cargo build --release --quiet --example diffcheck
exec target/release/examples/diffcheck "$@"
