#!/usr/bin/env python3
"""The retry-storm scenario of `retry-http simulate`, as a real HTTP server on loopback.

    python3 benches/storm_server.py --port P --clients 200 --summary OUT.json \
        [--outage-ms 600] [--capacity 24] [--window-ms 100] [--attempts 8] \
        [--requests OUT.jsonl] [--hold-timeout 60] [--max-seconds 300]

1. Holds the first wave: every request is kept unanswered until N distinct clients (header
   `X-Client: i`; the connection counts as a client when the header is missing) have sent
   one. Then all held requests are failed at the same instant T0 with 503 (no Retry-After,
   Connection: close). If the wave is not complete after --hold-timeout seconds, it is
   released anyway and the summary says so.
2. Outage: from T0 for --outage-ms, every request gets 503.
3. Recovery: windows of --window-ms start at T0 + outage; in each, the first --capacity
   requests (in arrival order) get 200, the rest 503.

The same rules as the model's (crates/retry-http-simulate/src/outage.rs): a request at or after the end of the
outage may be served; windows start when the outage ends; first come first served.

It records every request (client, arrival time relative to T0, outcome). The summary is
written when every client is done (served, or --attempts requests made, when --attempts is
given), on SIGTERM/SIGINT, or after --max-seconds, whichever comes first; then it exits.
Listens on 127.0.0.1 only. Prints "ready" on stdout once listening.
"""

import argparse
import asyncio
import json
import signal
import sys
import time

R503 = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"Content-Type: text/plain\r\nContent-Length: 12\r\nConnection: close\r\n\r\n"
    b"unavailable\n"
)
R200 = (
    b"HTTP/1.1 200 OK\r\n"
    b"Content-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\n"
    b"ok\n"
)


class Storm:
    def __init__(self, args):
        self.a = args
        self.outage_ns = int(args.outage_ms * 1e6)
        self.window_ns = int(args.window_ms * 1e6)
        self.t0 = None  # monotonic_ns of the release
        self.first_ns = None  # first request seen
        self.held = []  # (writer, client, arrive_ns)
        self.held_clients = set()
        self.records = []  # dicts
        self.served_in = {}  # window -> served count
        self.arrivals_in = {}  # window -> arrivals
        self.per_client = {}  # client -> requests made
        self.served = set()
        self.release_spread_ns = None
        self.released_by_timeout = False
        self.done = asyncio.Event()
        self.conn_seq = 0

    # -- the rules -----------------------------------------------------------------------
    def release(self, by_timeout=False):
        if self.t0 is not None:
            return
        self.t0 = time.monotonic_ns()
        self.released_by_timeout = by_timeout
        for writer, client, arrive in self.held:
            try:
                writer.write(R503)
                writer.close()
            except Exception:
                pass
            self.records.append(
                {"client": client, "t_ns": arrive - self.t0, "outcome": 503, "phase": "held"}
            )
            self.count(client)
        self.release_spread_ns = time.monotonic_ns() - self.t0
        self.held = []
        self.check_done()

    def decide(self, t):
        rel = t - self.t0
        if rel < self.outage_ns:
            return 503, "outage", None
        w = (rel - self.outage_ns) // self.window_ns
        self.arrivals_in[w] = self.arrivals_in.get(w, 0) + 1
        if self.served_in.get(w, 0) < self.a.capacity:
            self.served_in[w] = self.served_in.get(w, 0) + 1
            return 200, "served", w
        return 503, "over-capacity", w

    def count(self, client):
        self.per_client[client] = self.per_client.get(client, 0) + 1

    def check_done(self):
        if self.t0 is None or not self.a.attempts:
            return
        if len(self.per_client) < self.a.clients:
            return
        for c, n in self.per_client.items():
            if c not in self.served and n < self.a.attempts:
                return
        self.done.set()

    # -- the connection handler ----------------------------------------------------------
    async def handle(self, reader, writer):
        self.conn_seq += 1
        seq = self.conn_seq
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        except Exception:
            writer.close()
            return
        t = time.monotonic_ns()
        if self.first_ns is None:
            self.first_ns = t
        client = None
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"x-client":
                client = value.strip().decode("latin-1")
        if client is None:
            client = f"conn-{seq}"
        if self.t0 is None:
            self.held.append((writer, client, t))
            self.held_clients.add(client)
            if len(self.held_clients) >= self.a.clients:
                self.release()
            return  # release() answers it
        status, phase, w = self.decide(t)
        self.records.append(
            {"client": client, "t_ns": t - self.t0, "outcome": status, "phase": phase, "window": w}
        )
        self.count(client)
        if status == 200:
            self.served.add(client)
        try:
            writer.write(R200 if status == 200 else R503)
            await writer.drain()
        except Exception:
            pass
        finally:
            writer.close()
        self.check_done()

    async def hold_timer(self):
        await asyncio.sleep(self.a.hold_timeout)
        if self.t0 is None and self.held:
            self.release(by_timeout=True)

    # -- the summary ---------------------------------------------------------------------
    def summary(self, why):
        recs = self.records
        succ = [r["t_ns"] for r in recs if r["outcome"] == 200]
        cap = self.a.capacity
        peak = max(self.arrivals_in.values()) if self.arrivals_in else 0
        load = {}
        for r in recs:
            b = r["t_ns"] // 100_000_000  # 100 ms buckets from T0
            load[b] = load.get(b, 0) + 1
        repeat_after_served = 0
        seen_served = set()
        for r in sorted(recs, key=lambda r: r["t_ns"]):
            if r["client"] in seen_served:
                repeat_after_served += 1
            if r["outcome"] == 200:
                seen_served.add(r["client"])
        n_clients = self.a.clients
        return {
            "why_stopped": why,
            "clients_expected": n_clients,
            "clients_seen": len(self.per_client),
            "first_wave": sum(1 for r in recs if r["phase"] == "held"),
            "released_by_timeout": self.released_by_timeout,
            "hold_s": None if self.t0 is None or self.first_ns is None
            else (self.t0 - self.first_ns) / 1e9,
            "release_spread_ms": None if self.release_spread_ns is None
            else self.release_spread_ns / 1e6,
            "served_clients": len(self.served),
            "served_pct": 100.0 * len(self.served) / n_clients if n_clients else 0.0,
            "total_requests": len(recs),
            "last_success_s": max(succ) / 1e9 if succ else None,
            "peak_load": peak / cap if cap else None,
            "max_requests_per_client": max(self.per_client.values()) if self.per_client else 0,
            "requests_after_served": repeat_after_served,
            "outcomes": {
                k: sum(1 for r in recs if r["phase"] == k)
                for k in ("held", "outage", "served", "over-capacity")
            },
            "load_per_100ms": [load.get(i, 0) for i in range(max(load) + 1)] if load else [],
            "params": {
                "outage_ms": self.a.outage_ms,
                "capacity": cap,
                "window_ms": self.a.window_ms,
                "attempts": self.a.attempts,
            },
        }


async def amain(args):
    storm = Storm(args)
    server = await asyncio.start_server(
        storm.handle, "127.0.0.1", args.port, backlog=4096, reuse_address=True
    )
    loop = asyncio.get_running_loop()
    why = {"v": "max-seconds"}

    def on_signal(name):
        why["v"] = name
        storm.done.set()

    loop.add_signal_handler(signal.SIGTERM, on_signal, "SIGTERM")
    loop.add_signal_handler(signal.SIGINT, on_signal, "SIGINT")
    print("ready", flush=True)
    timer = asyncio.create_task(storm.hold_timer())
    try:
        await asyncio.wait_for(storm.done.wait(), args.max_seconds)
        if why["v"] == "max-seconds":
            why["v"] = "all clients done"
    except asyncio.TimeoutError:
        pass
    timer.cancel()
    server.close()
    s = storm.summary(why["v"])
    with open(args.summary, "w") as f:
        json.dump(s, f, indent=1)
    if args.requests:
        with open(args.requests, "w") as f:
            for r in storm.records:
                f.write(json.dumps(r) + "\n")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--clients", type=int, default=200)
    p.add_argument("--outage-ms", type=float, default=600)
    p.add_argument("--capacity", type=int, default=24)
    p.add_argument("--window-ms", type=float, default=100)
    p.add_argument("--attempts", type=int, default=0,
                   help="a client is done after this many requests (0: only signals end it)")
    p.add_argument("--summary", required=True)
    p.add_argument("--requests", help="write every request as JSON lines here")
    p.add_argument("--hold-timeout", type=float, default=60)
    p.add_argument("--max-seconds", type=float, default=300)
    args = p.parse_args()
    return asyncio.run(amain(args))


if __name__ == "__main__":
    sys.exit(main())
