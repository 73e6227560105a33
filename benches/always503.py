#!/usr/bin/env python3
"""Loopback server answering every request with 503 (no Retry-After, Connection: close).

    python3 benches/always503.py PORT LOGFILE [--max-seconds N]

One thread, one connection at a time, so nothing queues behind another client and the
timestamps are not disturbed by other work. For every request it appends one JSON line to
LOGFILE:

    {"run": X-Run header or null, "arrive_ns": ..., "sent_ns": ...}

arrive_ns is time.monotonic_ns() when the request head (up to the blank line) has been
read; sent_ns when the response has been written and the socket shut down. CLOCK_MONOTONIC
is the clock Rust's Instant uses too, so the numbers compare with the client's own.

Listens on 127.0.0.1 only. Stops by itself after --max-seconds (default 600) or on
SIGTERM/SIGINT. Prints "ready" on stdout once listening.
"""

import json
import signal
import socket
import sys
import time

RESPONSE = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"Content-Type: text/plain\r\n"
    b"Content-Length: 12\r\n"
    b"Connection: close\r\n"
    b"\r\n"
    b"unavailable\n"
)


def main() -> int:
    port = int(sys.argv[1])
    log_path = sys.argv[2]
    max_seconds = 600.0
    if "--max-seconds" in sys.argv:
        max_seconds = float(sys.argv[sys.argv.index("--max-seconds") + 1])

    stop = False

    def on_signal(_sig, _frame):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(64)
    srv.settimeout(0.2)
    end = time.monotonic() + max_seconds
    print("ready", flush=True)
    with open(log_path, "a", buffering=1) as log:
        while not stop and time.monotonic() < end:
            try:
                conn, _ = srv.accept()
            except (socket.timeout, InterruptedError):
                continue
            except OSError:
                if stop:
                    break
                raise
            with conn:
                conn.settimeout(5.0)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                head = b""
                try:
                    while b"\r\n\r\n" not in head and len(head) < 65536:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        head += chunk
                except OSError:
                    continue
                arrive = time.monotonic_ns()
                run = None
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"x-run":
                        run = value.strip().decode("latin-1")
                try:
                    conn.sendall(RESPONSE)
                    conn.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                sent = time.monotonic_ns()
                log.write(json.dumps({"run": run, "arrive_ns": arrive, "sent_ns": sent}) + "\n")
    srv.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
