#!/usr/bin/env python3
"""How late the machine itself wakes a sleeper, for DURATION seconds:
bench/stalls.py DURATION [EPOCH].

Sleeps 1 ms at a time as a real-time (SCHED_FIFO) thread when allowed, which no ordinary task
can keep off a CPU, and measures how much later than asked each sleep ends. A wake-up late by
tens of milliseconds then means the CPU itself was not running (a virtual machine's host ran
something else: steal time) or was kept in the kernel, not that a server was slow. Prints the
worst lateness, the wake-ups later than 5 ms with their times (seconds from EPOCH, a
`time.monotonic()` value, else from the start), and the steal time /proc/stat counted
meanwhile. Costs about 4 % of one CPU (0.43 s of CPU time in 10 s), in each system's run alike."""
import os
import sys
import time

LATE_MS = 5.0


def steal_ms():
    with open("/proc/stat") as f:
        fields = f.readline().split()
    # user nice system idle iowait irq softirq steal, in clock ticks.
    return int(fields[8]) * 1000 / os.sysconf("SC_CLK_TCK")


def main():
    duration = float(sys.argv[1])
    epoch = float(sys.argv[2]) if len(sys.argv) > 2 else time.monotonic()
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        kind = "real-time"
    except (OSError, AttributeError):
        kind = "ordinary (no real-time priority allowed)"
    start = time.monotonic()
    steal_before = steal_ms()
    worst, late = 0.0, []
    while (now := time.monotonic()) - start < duration:
        time.sleep(0.001)
        lateness = (time.monotonic() - now) * 1000 - 1.0
        worst = max(worst, lateness)
        if lateness > LATE_MS:
            late.append(f"+{now - epoch:.1f}s {lateness:.0f} ms")
    stolen = steal_ms() - steal_before
    shown = ", ".join(late[:12]) + (" ..." if len(late) > 12 else "")
    print(
        f"machine: a {kind} 1 ms sleeper woke at worst {worst:.1f} ms late, "
        f"{len(late)} times over {LATE_MS:.0f} ms ({shown or 'none'}); steal {stolen:.0f} ms"
    )


main()
