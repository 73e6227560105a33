#!/usr/bin/env python3
"""A reference client for the batch benchmark: as careful as a client can be with nothing
but Retry-After (or, with --pace, the RateLimit fields too), and no smarter.

    python3 benches/batch_careful.py --connections 6 [--pace] < URLS

Fetches the URLs on stdin (one a line, all of one origin, http only) over C keep-alive
connections, bodies discarded. A 429 sets one hold for all connections, to the moment it
was read + its Retry-After (seconds; a later end wins); no connection sends while a hold
runs, and a held transfer is sent again when it ends, every connection at once (no spread).
Up to 10 attempts a URL.

With --pace it also reads the quota the answers announce (draft 12's `RateLimit: "p";r=R;t=T`,
or `RateLimit-Remaining`/`-Reset`, or `X-RateLimit-Remaining`/`-Reset`, the reset a delay in
seconds, or epoch seconds when larger than 10^9): until the first answer one request is in
flight; then no more than the requests left, as last reported less those in flight and those
sent since; none left: hold until the reset, then one request again to learn the new quota.

Exits 0 when every URL got a 200, 1 otherwise. Beside the batch, it
shows what the rate-limited server's counters read for a client that never sends during a
hold it knows of (the requests it counts as started during a hold are then those in flight
when the 429 was written), and how close to the careful ideal such a client comes.
"""

import argparse
import http.client
import re
import sys
import threading
import time
from urllib.parse import urlsplit


def announced(r):
    """(requests left, seconds to the reset) from an answer's RateLimit fields, or (None, 0)."""
    m = re.search(r";\s*r=(\d+).*;\s*t=(\d+)", r.getheader("RateLimit", ""))
    if m:
        return int(m.group(1)), int(m.group(2))
    for prefix in ("RateLimit-", "X-RateLimit-"):
        left, reset = r.getheader(prefix + "Remaining"), r.getheader(prefix + "Reset")
        if left is not None and reset is not None:
            reset = int(reset)
            if reset > 10**9:  # epoch seconds
                reset = max(0.0, reset - time.time())
            return int(left), reset
    return None, 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--connections", type=int, default=6)
    p.add_argument("--attempts", type=int, default=10)
    p.add_argument("--pace", action="store_true", help="pace by the RateLimit fields too")
    a = p.parse_args()
    urls = [u.strip() for u in sys.stdin if u.strip()]
    if not urls:
        return 0
    first = urlsplit(urls[0])
    lock = threading.Lock()
    hold = [0.0]
    queue = list(reversed(urls))
    failed = []
    # --pace: the requests left by our count (None: unknown), when the quota resets, and the
    # requests in flight
    quota = {"left": None, "reset": 0.0, "inflight": 0}

    def may_send():
        """Under the lock: 0 when the pacing allows a request now (counted as sent), else
        how long to wait before asking again."""
        if not a.pace:
            return 0
        now = time.monotonic()
        if quota["left"] is not None and quota["left"] <= 0:
            if now < quota["reset"]:
                return quota["reset"] - now
            quota["left"] = None  # the quota was reset: learn the new one
        if quota["left"] is None and quota["inflight"] > 0:
            return 0.001  # one request in flight until an answer tells the quota
        quota["inflight"] += 1
        if quota["left"] is not None:
            quota["left"] -= 1
        return 0

    def learn(r):
        """Under the lock: an answer's quota, less the requests still in flight (the server
        may count them after this answer)."""
        quota["inflight"] -= 1
        left, reset = announced(r)
        if left is None:
            return
        left -= quota["inflight"]
        quota["left"] = left if quota["left"] is None else min(quota["left"], left)
        quota["reset"] = time.monotonic() + reset

    def fetch(conn, url):
        target = urlsplit(url)
        path = target.path + ("?" + target.query if target.query else "")
        for _ in range(a.attempts):
            while True:
                with lock:
                    wait = hold[0] - time.monotonic()
                    if wait <= 0:
                        wait = may_send()
                if wait <= 0:
                    break
                time.sleep(wait)
            conn.request("GET", path)
            r = conn.getresponse()
            r.read()
            if a.pace:
                with lock:
                    learn(r)
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
