#!/usr/bin/env python3
"""Builds a git.git-shaped bare repository with `git fast-import`: a long linear-ish history
with merges, a few thousand files in nested directories, ~1,000 annotated tags, packed refs,
optionally a commit-graph with changed-path Bloom filters.

usage: make-corpus.py DIR [--commits N] [--tags N] [--commit-graph]
"""
import argparse
import random
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--commits", type=int, default=80_000)
    ap.add_argument("--tags", type=int, default=1_000)
    ap.add_argument("--files", type=int, default=4_000)
    ap.add_argument("--commit-graph", action="store_true")
    args = ap.parse_args()
    rnd = random.Random(42)
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin:/usr/local/bin"}
    subprocess.run(["git", "init", "-q", "--bare", "-b", "master", args.dir], check=True, env=env)
    dirs = ["builtin", "t", "Documentation", "compat", "contrib/completion", "xdiff", "refs", "t/helper", "po"]
    files = [f"{rnd.choice(dirs)}/file{i:04d}.c" for i in range(args.files)] + ["Makefile", "README.md"]
    contents = {}
    proc = subprocess.Popen(["git", "fast-import", "--quiet"], cwd=args.dir, stdin=subprocess.PIPE, env=env)
    out = proc.stdin
    t0 = 1_100_000_000
    tag_every = max(1, args.commits // max(1, args.tags))
    tags = 0
    for n in range(1, args.commits + 1):
        when = t0 + n * 1800
        author = f"Dev{rnd.randrange(400)} <dev{rnd.randrange(400)}@example.com>"
        msg = f"area{rnd.randrange(60)}: change number {n}\n\nExplain change {n} in a few words.\n"
        lines = [f"commit refs/heads/master\nmark :{n}\n",
                 f"author {author} {when} +0000\ncommitter {author} {when} +0000\n",
                 f"data {len(msg.encode())}\n{msg}"]
        if n > 1:
            lines.append(f"from :{n - 1}\n")
        touched = files if n == 1 else rnd.sample(files, rnd.choice([1, 1, 2, 3, 5]))
        for path in touched:
            body = contents.get(path, [f"/* {path} */\n"])
            i = rnd.randrange(len(body) + 1)
            body = body[:i] + [f"int f{n}_{i}(void) {{ return {n}; }}\n"] + body[i:]
            if len(body) > 400:
                del body[rnd.randrange(len(body))]
            contents[path] = body
            data = "".join(body).encode()
            lines.append(f"M 100644 inline {path}\ndata {len(data)}\n")
            out.write("".join(lines).encode())
            out.write(data + b"\n")
            lines = []
        if lines:
            out.write("".join(lines).encode())
        out.write(b"\n")
        if n % tag_every == 0 and tags < args.tags:
            tags += 1
            tmsg = f"Git-shaped v{tags // 100}.{tags % 100}.0\n"
            out.write(f"tag v{tags // 100}.{tags % 100}.0\nfrom :{n}\ntagger Maintainer <m@example.com> {when} +0000\n"
                      f"data {len(tmsg)}\n{tmsg}\n".encode())
    out.close()
    if proc.wait() != 0:
        sys.exit("fast-import failed")
    subprocess.run(["git", "pack-refs", "--all"], cwd=args.dir, check=True, env=env)
    subprocess.run(["git", "repack", "-adq", "--depth=50", "--window=10"], cwd=args.dir, check=True, env=env)
    if args.commit_graph:
        subprocess.run(["git", "commit-graph", "write", "--reachable", "--changed-paths"], cwd=args.dir, check=True, env=env)


if __name__ == "__main__":
    main()
