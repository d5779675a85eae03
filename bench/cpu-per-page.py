#!/usr/bin/env python3
"""Server CPU time per page: starts `BINARY serve --config CGITRC` on 127.0.0.1:PORT, waits
SETTLE seconds (a repository's commit index builds in the background after its first page),
then asks for the first N URLs of URLFILE one after the other over one keep-alive connection
and prints the server's user+system CPU milliseconds per page (from /proc), which depends far
less on other load on the machine than wall time does. Alternate two binaries to compare them.

usage: bench/cpu-per-page.py BINARY CGITRC URLFILE [N]
env:   PORT=8494, SETTLE=4, AE (an Accept-Encoding for every request, e.g. 'gzip'; default none)
Only 127.0.0.1 is contacted; the run ends after N requests."""
import http.client, os, subprocess, sys, time

binary, cgitrc, url_file = sys.argv[1:4]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
port = int(os.environ.get("PORT", "8494"))
urls = [line.strip() for line in open(url_file) if line.strip()][:n]
server = subprocess.Popen([binary, "serve", "--config", cgitrc, "--listen", f"127.0.0.1:{port}"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def cpu_ms():
    fields = open(f"/proc/{server.pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


try:
    for _ in range(100):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", urls[0])
            c.getresponse().read()
            break
        except OSError:
            time.sleep(0.1)
    time.sleep(float(os.environ.get("SETTLE", "4")))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Accept-Encoding": os.environ["AE"]} if os.environ.get("AE") else {}
    statuses = {}
    before, started = cpu_ms(), time.time()
    for url in urls:
        conn.request("GET", url, headers=headers)
        response = conn.getresponse()
        response.read()
        statuses[response.status] = statuses.get(response.status, 0) + 1
    cpu, wall = cpu_ms() - before, time.time() - started
    print(f"{os.path.basename(url_file)}: {cpu / len(urls):.2f} ms CPU a page, "
          f"{wall * 1000 / len(urls):.2f} ms wall, {len(urls)} pages, statuses {statuses}")
finally:
    server.terminate()
    server.wait()
