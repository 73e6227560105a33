#!/usr/bin/env python3
"""A rate-limiting HTTP/1.1 server on loopback, for the batch benchmark (benches/batch.sh).

    python3 benches/batch_server.py [--port 0] [--rate 40] [--window 1] \
        [--announce none|draft12|legacy|x] [--x-reset epoch|delay] [--grace-ms 5] \
        [--body 1024] [--max-seconds 600]

Serves BODY bytes (1 KiB by default) at /f/N for any N, keep-alive, one thread per
connection (`ThreadingHTTPServer`), on 127.0.0.1 only. Prints "ready PORT" on stdout once
it listens (with --port 0 the kernel picks a free port). Stops by itself after
--max-seconds, or on SIGTERM/SIGINT.

The limit, per origin (the Host header the client sent: one server, one origin, unless the
client names it two ways): a FIXED WINDOW of --window seconds, aligned to the wall clock's
whole seconds (so an epoch-time reset is exact), allowing --rate x --window requests in
each window; the request counted is the one that arrives, whatever its outcome. Beyond
the quota the answer is 429 with `Retry-After: S`, S the time to the window's end rounded
up to whole seconds (so with 1 s windows always 1: the hold it announces ends up to a
second after the window does). --rate 0 lifts the limit.

--announce adds the quota to every answer of a /f/ path (200 and 429 alike), so a careful
client can keep under the limit and never meet a 429:
  draft12  `RateLimit-Policy: "default";q=Q;w=W` and `RateLimit: "default";r=R;t=T`
           (IETF httpapi ratelimit-headers, draft 12: Q the quota of a window, W its
           length, R the requests left in it after this one, T seconds to its end rounded up)
  legacy   `RateLimit-Limit: Q`, `RateLimit-Remaining: R`, `RateLimit-Reset: T` (the
           earlier drafts' three fields; the reset a delay in seconds)
  x        `X-RateLimit-Limit: Q`, `X-RateLimit-Remaining: R`, `X-RateLimit-Reset: E`, E
           the window's end as Unix epoch seconds (GitHub's form), or with
           --x-reset delay the seconds to it (T, as some APIs send)

What it counts, between two reads of /_stats (GET /_stats?reset=1 answers the JSON below
and starts a new period with fresh windows and no hold; the client under test never asks
for it):
  requests, connections accepted, answers by status, the distinct paths served 200 (a transfer that never got a
  200 failed), paths served more than once;
  holds: each 429 announces a hold of its origin from the moment its answer was written to
  that moment + S; the period keeps their union (`hold_s`);
  `during_hold`: requests that arrived while an earlier 429's hold for their origin was
  announced and not over, more than --grace-ms after the announcement (a request the
  client had decided to send before it could read the 429 is in flight, not started
  during the hold; the grace allows for it), and how many of those got a 429
  (`during_hold_429`); the same with no grace (`during_hold_strict`) and more than 50 ms
  in (`during_hold_50ms`), and the largest delay since the announcement;
  per window: arrivals and 200s, for the share of the quota used (in the windows between
  the first and the last served request, the first and last excluded as partial);
  the time from the first arrival to the last answer written (`span_s`).
"""

import argparse
import json
import math
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class Origin:
    """One origin's window and holds. Guarded by Limiter.lock."""

    def __init__(self):
        self.window = None  # index of the current window
        self.count = 0  # arrivals counted in it
        self.hold_end = 0.0  # latest announced hold end (monotonic s)
        self.announced = []  # (announced_at, hold_end) of each 429, in order


class Limiter:
    """The fixed-window rule and the period's counters, shared by all connection threads."""

    def __init__(self, a):
        self.a = a
        self.lock = threading.Lock()
        # monotonic + offset = wall clock; windows are aligned to the wall clock.
        self.offset = time.time() - time.monotonic()
        self.quota = int(round(a.rate * a.window))
        self.reset()

    def reset(self):
        self.origins = {}
        self.requests = 0
        self.connections = 0  # accepted (a client that reuses them opens few)
        self.status = {}
        self.served = {}  # path -> times served 200
        self.first = None
        self.last = None
        self.holds = []  # (announced at, hold end) of every 429
        self.during = []  # (delay since announce s, status), every request during a hold
        self.win_arrivals = {}
        self.win_served = {}

    def window_of(self, t):
        w = math.floor((t + self.offset) / self.a.window)
        end = (w + 1) * self.a.window - self.offset  # monotonic time of the window's end
        return w, end

    def decide(self, host, t):
        """The answer's status and the fields to send, for a request that arrived at t."""
        with self.lock:
            o = self.origins.setdefault(host, Origin())
            w, end = self.window_of(t)
            if o.window != w:
                o.window, o.count = w, 0
            o.count += 1
            self.win_arrivals[w] = self.win_arrivals.get(w, 0) + 1
            limited = self.quota > 0 and o.count > self.quota
            left = max(0, self.quota - o.count)
            # requests that started while an earlier 429's hold was announced
            if o.announced and t >= o.hold_end:
                o.announced = []  # every hold is over
            if t < o.hold_end:
                since = [t - at for at, he in o.announced if at <= t < he]
                if since:
                    # the longest the client could have known of a hold
                    self.during.append((max(since), 429 if limited else 200))
            self.requests += 1
            if self.first is None:
                self.first = t
        to_end = end - t
        secs = max(1, math.ceil(to_end - 1e-9)) if limited else math.ceil(to_end - 1e-9)
        return (429 if limited else 200), left, secs, w, o

    def fields(self, left, secs, w):
        a, q = self.a, self.quota
        if a.announce == "draft12":
            return [("RateLimit-Policy", f'"default";q={q};w={a.window:g}'),
                    ("RateLimit", f'"default";r={left};t={secs}')]
        if a.announce == "legacy":
            return [("RateLimit-Limit", str(q)), ("RateLimit-Remaining", str(left)),
                    ("RateLimit-Reset", str(secs))]
        if a.announce == "x":
            # the window's end on the wall clock, from its index (exact; no float rounding)
            reset = secs if a.x_reset == "delay" else round((w + 1) * a.window)
            return [("X-RateLimit-Limit", str(q)), ("X-RateLimit-Remaining", str(left)),
                    ("X-RateLimit-Reset", str(reset))]
        return []

    def answered(self, o, path, status, w, secs, t_written):
        """Records an answer once it was written; a 429 announces its hold from then."""
        with self.lock:
            self.status[status] = self.status.get(status, 0) + 1
            self.last = t_written
            if status == 200:
                self.served[path] = self.served.get(path, 0) + 1
                self.win_served[w] = self.win_served.get(w, 0) + 1
            elif status == 429:
                he = t_written + secs
                o.announced.append((t_written, he))
                o.hold_end = max(o.hold_end, he)
                self.holds.append((t_written, he))

    def stats(self):
        with self.lock:
            return summarize(self)


def union(intervals):
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def summarize(lim):
    served_windows = sorted(lim.win_served)
    # the windows strictly between the first and the last with a 200, empty ones included
    span = range(served_windows[0] + 1, served_windows[-1]) if served_windows else range(0)
    used = sum(lim.win_served.get(w, 0) for w in span)
    share = used / (lim.quota * len(span)) if len(span) and lim.quota else None
    during = [(d, st) for d, st in lim.during if d > lim.a.grace_ms / 1e3]
    return {
        "rate": lim.a.rate,
        "window_s": lim.a.window,
        "quota": lim.quota,
        "announce": lim.a.announce,
        "x_reset": lim.a.x_reset,
        "grace_ms": lim.a.grace_ms,
        "requests": lim.requests,
        "connections": lim.connections,
        "status": {str(k): v for k, v in sorted(lim.status.items())},
        "r429": lim.status.get(429, 0),
        "paths_served": len(lim.served),
        "paths_served_twice": sum(1 for n in lim.served.values() if n > 1),
        "holds": len(lim.holds),
        "hold_s": union(lim.holds),
        "during_hold": len(during),
        "during_hold_429": sum(1 for _, st in during if st == 429),
        "during_hold_strict": len(lim.during),
        "during_hold_50ms": sum(1 for d, _ in during if d > 0.050),
        "during_hold_max_delay_ms": max((d for d, _ in during), default=0) * 1e3,
        "span_s": (lim.last - lim.first) if lim.first is not None and lim.last else None,
        "windows_served": len(served_windows),
        "interior_windows": len(span),
        "quota_share_interior": share,
        "served_per_window": [lim.win_served.get(w, 0) for w in
                              range(served_windows[0], served_windows[-1] + 1)]
        if served_windows else [],
        "origins": len(lim.origins),
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "batch-server"
    sys_version = ""

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        lim = self.server.limiter
        with lim.lock:
            lim.connections += 1

    # Head and body leave in one write, with Nagle off: written apart, the body would wait
    # for the client's delayed ACK of the head (40 ms a request on Linux).
    disable_nagle_algorithm = True

    def send(self, status, body, fields=()):
        reason = {200: "OK", 404: "Not Found", 429: "Too Many Requests"}[status]
        head = [f"HTTP/1.1 {status} {reason}", "Content-Type: application/octet-stream",
                f"Content-Length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in fields]
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        self.wfile.flush()

    def do_GET(self):
        t = time.monotonic()
        lim = self.server.limiter
        parts = urlsplit(self.path)
        if parts.path == "/_stats":
            body = json.dumps(lim.stats(), indent=1).encode()
            if "reset" in parse_qs(parts.query):
                with lim.lock:
                    lim.reset()
            self.send(200, body)
            return
        if not parts.path.startswith("/f/"):
            self.send(404, b"not found\n")
            return
        host = self.headers.get("Host", "")
        status, left, secs, w, o = lim.decide(host, t)
        fields = lim.fields(left, secs, w)
        if status == 429:
            fields.append(("Retry-After", str(secs)))
            self.send(429, b"too many requests\n", fields)
        else:
            self.send(200, self.server.body, fields)
        lim.answered(o, parts.path, status, w, secs, time.monotonic())

    do_HEAD = do_GET


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 4096
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        # A client that closes its connection (a process that exits, a reset) is normal
        # here; anything else is shown.
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--rate", type=float, default=40, help="requests a second per origin; 0: no limit")
    p.add_argument("--window", type=float, default=1.0, help="the fixed window, seconds")
    p.add_argument("--announce", choices=("none", "draft12", "legacy", "x"), default="none")
    p.add_argument("--x-reset", choices=("epoch", "delay"), default="epoch")
    p.add_argument("--grace-ms", type=float, default=5.0)
    p.add_argument("--body", type=int, default=1024)
    p.add_argument("--max-seconds", type=float, default=600)
    a = p.parse_args()
    srv = Server(("127.0.0.1", a.port), Handler)
    srv.limiter = Limiter(a)
    srv.body = bytes((i * 7 + 13) % 256 for i in range(a.body))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    print(f"ready {srv.server_address[1]}", flush=True)
    stop.wait(a.max_seconds)
    srv.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
