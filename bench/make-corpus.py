#!/usr/bin/env python3
"""Builds a git.git-shaped bare repository with `git fast-import`: a long linear-ish history
with merges, a few thousand files in nested directories, ~1,000 annotated tags, packed refs,
optionally a commit-graph with changed-path Bloom filters.

With --shape linux it builds a linux-shaped one instead (bench/make-corpus.py linux_corpus):
many files in deep directories (one with ~5,000 entries), topic branches merged back into
master, tags and branches together --refs, a hot file touched by every 25th commit (for blame).
Its memory stays bounded (file contents are a function of each file's revision count, not
kept) and it prints its progress to stderr.

usage: make-corpus.py DIR [--commits N] [--tags N] [--files N] [--commit-graph]
       make-corpus.py DIR --shape linux [--commits N] [--files N] [--refs N] [--depth D]
                          [--big-dir N] [--commit-graph-copy DIR2] [--repack none|ad|adf]
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
    ap.add_argument("--shape", choices=["git", "linux"], default="git")
    ap.add_argument("--refs", type=int, default=950, help="linux shape: tags plus branches")
    ap.add_argument("--depth", type=int, default=6, help="linux shape: deepest directory level")
    ap.add_argument("--big-dir", type=int, default=5_000, help="linux shape: entries of the big directory")
    ap.add_argument("--commit-graph-copy", help="linux shape: also a copy of DIR with a commit-graph")
    ap.add_argument("--repack", choices=["none", "ad", "adf"], default="none",
                    help="linux shape: fast-import's own pack (none), or git repack -ad / -adf")
    args = ap.parse_args()
    if args.shape == "linux":
        return linux_corpus(args)
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


WORDS = ["drivers", "net", "gpu", "drm", "usb", "core", "host", "phy", "arm", "boot", "dts",
         "media", "i2c", "spi", "pci", "fs", "ext4", "btrfs", "mm", "kernel", "sched", "power",
         "sound", "soc", "codecs", "include", "linux", "uapi", "tools", "perf", "lib", "crypto",
         "block", "scsi", "firmware", "iio", "input", "misc", "mfd", "clk", "regulator", "video"]


def linux_corpus(args):
    """The linux-shaped corpus, streamed into git fast-import."""
    import os
    import shutil
    import time
    rnd = random.Random(43)
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin:/usr/local/bin"}
    subprocess.run(["git", "init", "-q", "--bare", "-b", "master", args.dir], check=True, env=env)
    tops = ["arch", "drivers", "fs", "net", "include", "kernel", "sound", "tools", "Documentation", "lib", "mm"]
    big = "drivers/gpu/drm/amd/include/asic_reg"
    ndirs = max(1, args.files // 14)
    dirs = []
    for _ in range(ndirs):
        d = [rnd.choice(tops)] + [rnd.choice(WORDS) + str(rnd.randrange(30)) for _ in range(rnd.randint(1, args.depth - 1))]
        dirs.append("/".join(d))
    nbig = min(args.big_dir, args.files // 4)
    files = [f"{big}/reg_{i:05d}.h" for i in range(nbig)]
    files += [f"{rnd.choice(dirs)}/f{i:06d}.c" for i in range(args.files - nbig)]
    files = sorted(set(files)) + ["MAINTAINERS", "Makefile", "README"]
    small = [f for f in files if not f.startswith(big + "/")]
    revs = {}  # path -> how many times it changed; its content is a function of that

    def content(path, r):
        lines = [f"/* {path} */\n"] + [f"int f{k}(void) {{ return {k * 7 % 1000}; }}\n" for k in range(max(0, r - 30), r)]
        return "".join(lines).encode()

    proc = subprocess.Popen(["git", "fast-import", "--quiet", "--active-branches=20"], cwd=args.dir,
                            stdin=subprocess.PIPE, env=env, bufsize=1 << 20)
    out = proc.stdin
    t0, start = 1_100_000_000, time.time()
    nbranches = max(1, min(50, args.refs // 20))
    ntags = max(0, args.refs - nbranches)
    tag_every = max(1, args.commits // max(1, ntags))
    tags = 0
    mark = 0
    master = None  # mark of master's tip
    topic = None   # (ref, tip mark, paths touched, commits left) of the open topic branch
    topics = 0
    written = 0

    def commit(ref, parent, merge, paths, msg):
        nonlocal mark, written
        mark += 1
        written += 1
        when = t0 + written * 30
        who = rnd.randrange(5000)
        author = f"Dev{who} <dev{who}@example.com>"
        head = [f"commit {ref}\nmark :{mark}\nauthor {author} {when} +0000\ncommitter {author} {when} +0000\n",
                f"data {len(msg.encode())}\n{msg}"]
        if parent:
            head.append(f"from :{parent}\n")
        if merge:
            head.append(f"merge :{merge}\n")
        out.write("".join(head).encode())
        for path in paths:
            data = content(path, revs.get(path, 0))
            out.write(f"M 100644 inline {path}\ndata {len(data)}\n".encode())
            out.write(data + b"\n")
        out.write(b"\n")
        return mark

    def touch(n):
        if n % 25 == 0:
            paths = ["MAINTAINERS"]
        elif rnd.random() < 0.02:
            paths = [rnd.choice(files)]
        else:
            paths = rnd.sample(small, rnd.choice([1, 1, 1, 2, 3]))
        for p in paths:
            revs[p] = revs.get(p, 0) + 1
        return paths

    for path in files:
        revs[path] = 1
    master = commit("refs/heads/master", None, None, files, "Initial import\n")
    n = 1
    while n < args.commits:
        if topic is None and rnd.random() < 0.08:
            topics += 1
            topic = [f"refs/heads/b{topics % nbranches:02d}", master, set(), rnd.randint(2, 12)]
        if topic is not None and topic[3] > 0 and rnd.random() < 0.5:
            n += 1
            paths = touch(n)
            topic[1] = commit(topic[0], topic[1], None, paths, f"sub{rnd.randrange(200)}: topic change {n}\n")
            topic[2].update(paths)
            topic[3] -= 1
        elif topic is not None and topic[3] == 0:
            n += 1
            msg = f"Merge branch '{topic[0][11:]}' of topic {topics}\n"
            master = commit("refs/heads/master", master, topic[1], sorted(topic[2]), msg)
            topic = None
        else:
            n += 1
            paths = touch(n)
            master = commit("refs/heads/master", master, None, paths,
                            f"area{rnd.randrange(300)}: change number {n}\n\nExplain change {n} in a few words.\n")
        if n % tag_every == 0 and tags < ntags:
            tags += 1
            tmsg = f"Linux-shaped v{tags // 100}.{tags % 100}\n"
            out.write(f"tag v{tags // 100}.{tags % 100}\nfrom :{master}\ntagger Maintainer <m@example.com> {t0 + written * 30} +0000\n"
                      f"data {len(tmsg)}\n{tmsg}\n".encode())
        if n % 50_000 == 0:
            el = time.time() - start
            print(f"{n} commits, {tags} tags, {el:.0f} s ({n / el:.0f}/s)", file=sys.stderr, flush=True)
    if topic is not None:
        master = commit("refs/heads/master", master, topic[1], sorted(topic[2]), "Merge the last topic\n")
    out.close()
    if proc.wait() != 0:
        sys.exit("fast-import failed")
    print(f"fast-import done: {mark} commits, {tags} tags, {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    subprocess.run(["git", "pack-refs", "--all"], cwd=args.dir, check=True, env=env)
    if args.repack != "none":
        subprocess.run(["git", "repack", "-" + args.repack + "q"], cwd=args.dir, check=True, env=env)
        print(f"repack -{args.repack} done: {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    if args.commit_graph_copy:
        shutil.copytree(args.dir, args.commit_graph_copy, symlinks=True)
        subprocess.run(["git", "commit-graph", "write", "--reachable"], cwd=args.commit_graph_copy, check=True, env=env)
        print(f"commit-graph copy done: {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    print(f"total {time.time() - start:.0f} s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
