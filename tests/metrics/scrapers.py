#!/usr/bin/env python3
"""Concurrent scrapers of one /metrics URL, cheap on the CPU (one process,
a thread and a kept-alive connection each), for tests/metrics/workload.sh
and bench/metrics.sh:

    scrapers.py URL N PAUSE DIR STOPFILE [PREFIX]

N threads each GET URL, pause PAUSE seconds, again, until STOPFILE
exists. Scraper i keeps each payload as DIR/scrape.i.K and, with PREFIX,
the value of the line starting with PREFIX in each, in order, one a line,
in DIR/values.i. Prints "answered failed" over all scrapers at the end.
"""
import http.client
import os
import sys
import threading
import time
import urllib.parse

url, n, pause, out, stop = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
prefix = sys.argv[6] if len(sys.argv) > 6 else None
where = urllib.parse.urlsplit(url)
totals = [0, 0]
lock = threading.Lock()


def scraper(i):
    ok = bad = 0
    conn = None
    values = []
    while not os.path.exists(stop):
        try:
            if conn is None:
                conn = http.client.HTTPConnection(where.hostname, where.port, timeout=5)
            conn.request("GET", where.path)
            reply = conn.getresponse()
            body = reply.read()
            if reply.status != 200:
                raise OSError(f"status {reply.status}")
            if reply.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException):
            bad += 1
            if conn is not None:
                conn.close()
            conn = None
        else:
            with open(os.path.join(out, f"scrape.{i}.{ok}"), "wb") as f:
                f.write(body)
            ok += 1
            if prefix:
                for line in body.decode().splitlines():
                    if line.startswith(prefix):
                        values.append(line[len(prefix):])
        time.sleep(pause)
    if prefix:
        with open(os.path.join(out, f"values.{i}"), "w") as f:
            f.write("".join(v + "\n" for v in values))
    with lock:
        totals[0] += ok
        totals[1] += bad


threads = [threading.Thread(target=scraper, args=(i,)) for i in range(1, n + 1)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(totals[0], totals[1])
