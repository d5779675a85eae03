#!/usr/bin/env python3
"""The peak RssAnon of a process and its children (summed at each sample), sampled every
100 ms for DURATION seconds: bench/peak-rss.py PID DURATION."""
import os, sys, time
pid, dur = int(sys.argv[1]), float(sys.argv[2])
def tree(p):
    out = [p]
    try:
        for t in os.listdir(f"/proc/{p}/task"):
            with open(f"/proc/{p}/task/{t}/children") as f:
                for c in f.read().split():
                    out += tree(int(c))
    except OSError:
        pass
    return out
def rss_anon(p):
    try:
        with open(f"/proc/{p}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0
peak, procs, end = 0, 0, time.monotonic() + dur
while time.monotonic() < end:
    ps = tree(pid)
    total = sum(rss_anon(p) for p in ps)
    if total > peak:
        peak, procs = total, len(ps)
    time.sleep(0.1)
print(f"peak RssAnon: {peak / 1024:.1f} MiB ({procs} process{'es' if procs != 1 else ''} at the peak)")
