#!/usr/bin/env python3
"""Loopback server that accepts connections, reads nothing back to the client and never
answers: every socket is held open until the server stops.

    python3 benches/hang.py PORT [--max-seconds N]

Listens on 127.0.0.1 only; stops by itself after --max-seconds (default 600) or on
SIGTERM/SIGINT. Holds at most 4096 sockets (older ones are closed first). Prints "ready"
on stdout once listening.
"""

import collections
import signal
import socket
import sys
import time


def main() -> int:
    port = int(sys.argv[1])
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
    srv.listen(256)
    srv.settimeout(0.2)
    held = collections.deque()
    end = time.monotonic() + max_seconds
    print("ready", flush=True)
    while not stop and time.monotonic() < end:
        try:
            conn, _ = srv.accept()
        except (socket.timeout, InterruptedError):
            continue
        except OSError:
            if stop:
                break
            raise
        held.append(conn)
        while len(held) > 4096:
            held.popleft().close()
    for c in held:
        c.close()
    srv.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
