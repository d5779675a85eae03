#!/usr/bin/env python3
"""Memory of a full response cache: starts `BINARY serve --config CGITRC` on 127.0.0.1:PORT,
asks for each of the first N URLs of URLFILE twice (a page is kept from its second request)
over one keep-alive connection, waits SETTLE seconds and prints the server's RssAnon beside
the bytes the response cache counts (`cgitd_response_cache_bytes`; CGITRC needs
`metrics-path=/metrics`). Alternate two binaries to compare them.

usage: bench/cache-rss.py BINARY CGITRC URLFILE [N]
env:   PORT=8495, SETTLE=3, AE= (an Accept-Encoding for every request, e.g. AE=gzip)
Only 127.0.0.1 is contacted; the run ends after 2 N requests."""
import http.client, os, subprocess, sys, time

binary, cgitrc, url_file = sys.argv[1:4]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 6000
port = int(os.environ.get("PORT", "8495"))
headers = {"Accept-Encoding": os.environ["AE"]} if os.environ.get("AE") else {}
urls = [line.strip() for line in open(url_file) if line.strip()][:n]
server = subprocess.Popen([binary, "serve", "--config", cgitrc, "--listen", f"127.0.0.1:{port}"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def get(conn, url):
    conn.request("GET", url, headers=headers)
    response = conn.getresponse()
    return response.status, response.read()


try:
    for _ in range(100):
        try:
            get(http.client.HTTPConnection("127.0.0.1", port, timeout=10), urls[0])
            break
        except OSError:
            time.sleep(0.1)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    statuses = {}
    for _ in range(2):
        for url in urls:
            status, _ = get(conn, url)
            statuses[status] = statuses.get(status, 0) + 1
    time.sleep(float(os.environ.get("SETTLE", "3")))
    rss = next(line.split(":")[1].strip() for line in open(f"/proc/{server.pid}/status")
               if line.startswith("RssAnon"))
    _, metrics = get(conn, "/metrics")
    counted = next((line.split()[-1] for line in metrics.decode().splitlines()
                    if line.startswith("cgitd_response_cache_bytes")), "?")
    print(f"{os.path.basename(url_file)}: RssAnon {rss}, the cache counts {counted} bytes; "
          f"{len(urls)} pages twice, statuses {statuses}")
finally:
    server.terminate()
    server.wait()
