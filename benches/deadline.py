#!/usr/bin/env python3
"""How closely `--deadline` holds, by length and by what blocks the run.

    python3 benches/deadline.py [--binary PATH] [--lengths 1,5,25,60] [--runs N] [--out FILE]

For each length and each scenario, N runs start at once (they only wait, so running them
side by side does not disturb them) and each one's overrun is its wall time less the
deadline, measured from just before the process is started to its exit. Scenarios:

- hang: the server accepts and never answers (benches/hang.py), `--stall-timeout 0`;
- unread: a 64 MiB body to stdout, a pipe whose reader never reads;
- fifo: the same body to `-o FIFO`, whose reader opens it and never reads.

curl is beside it for the first scenario (`curl --max-time`, the nearest thing it has).
Writes a Markdown table to --out (default benches/DEADLINE.md): the machine's kind, cores,
memory, versions and load are recorded; no paths and no other processes. Lengths up to
10 min are accepted (`--lengths 1,5,25,60,300,600`, about 10 min of wall time).
"""

import argparse
import http.server
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BODY = 64 << 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_hang(seconds: float) -> tuple[subprocess.Popen, int]:
    port = free_port()
    p = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "hang.py"), str(port), "--max-seconds", str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None
    p.stdout.readline()
    return p, port


class Big(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the http.server name)
        self.send_response(200)
        self.send_header("Content-Length", str(BODY))
        self.end_headers()
        chunk = b"b" * (1 << 20)
        try:
            for _ in range(BODY >> 20):
                self.wfile.write(chunk)
        except OSError:
            pass

    def log_message(self, *_args):
        pass


def start_big() -> int:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Big)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


CODES: dict[str, list[int]] = {}


def note_code(cmd: list[str], code: int) -> None:
    CODES.setdefault(" ".join(cmd[1:3]), []).append(code)


def timed(cmd: list[str], stdout, env=None) -> float:
    t = time.monotonic()
    p = subprocess.run(cmd, stdout=stdout, stderr=subprocess.DEVNULL, env=env, check=False)
    took = time.monotonic() - t
    note_code(cmd, p.returncode)
    return took


def run_unread(cmd: list[str], env) -> float:
    """stdout is a pipe nobody reads; the read end is held until the process exits."""
    r, w = os.pipe()
    t = time.monotonic()
    p = subprocess.Popen(cmd, stdout=w, stderr=subprocess.DEVNULL, env=env)
    os.close(w)
    p.wait()
    took = time.monotonic() - t
    os.close(r)
    note_code(cmd, p.returncode)
    return took


def run_fifo(cmd_for, tmp: str, i: int, env) -> float:
    fifo = os.path.join(tmp, f"fifo{i}")
    os.mkfifo(fifo)
    holder = threading.Thread(target=lambda: _hold(fifo), daemon=True)
    holder.start()
    cmd = cmd_for(fifo)
    t = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    took = time.monotonic() - t
    note_code(cmd, p.returncode)
    return took


def _hold(fifo: str) -> None:
    fd = os.open(fifo, os.O_RDONLY)
    time.sleep(700)
    os.close(fd)


def parallel(fn, n: int) -> list[float]:
    out: list[float] = [0.0] * n
    def one(i):
        out[i] = fn(i)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def version(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        return "not found"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(HERE, "..", "target", "release", "retry-http"))
    ap.add_argument("--lengths", default="1,5,25,60")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(HERE, "DEADLINE.md"))
    a = ap.parse_args()
    lengths = [float(x) for x in a.lengths.split(",")]
    hang, hang_port = start_hang(max(lengths) + 60)
    big_port = start_big()
    tmp = tempfile.mkdtemp(prefix="rh-deadline-")
    env = dict(os.environ, TMPDIR=tmp)
    curl = shutil.which("curl")
    load_before = os.getloadavg()
    rows = []
    jobs = []
    for length in lengths:
        d = f"{length:g}s"
        hang_url = f"http://127.0.0.1:{hang_port}/"
        big_url = f"http://127.0.0.1:{big_port}/big"
        scen = {
            # --stall-timeout 0: the default 30 s would end each attempt first, and six of
            # them end the run (exit 4) before a deadline longer than about 3 min.
            "hang": lambda i, d=d, u=hang_url: timed(
                [a.binary, "--deadline", d, "--stall-timeout", "0", u], subprocess.DEVNULL, env),
            "unread": lambda i, d=d, u=big_url: run_unread([a.binary, "--deadline", d, u], env),
            "fifo": lambda i, d=d, u=big_url, L=length: run_fifo(
                lambda f: [a.binary, "-o", f, "--deadline", d, u], tmp, int(L * 1000) * 100 + i, env),
        }
        if curl:
            scen["hang, curl --max-time"] = lambda i, d=length, u=hang_url: timed(
                [curl, "-s", "--max-time", f"{d:g}", u], subprocess.DEVNULL, env)
        for name, fn in scen.items():
            jobs.append((length, name, fn))
    results: dict[tuple[float, str], list[float]] = {}
    codes: dict[tuple[float, str], list[int]] = {}
    lock = threading.Lock()
    def run_job(job):
        length, name, fn = job
        took = parallel(fn, a.runs)
        with lock:
            results[(length, name)] = [t - length for t in took]
    # The longest rows start first and the rest follow one by one, a second apart, so
    # that no row is measured through the burst of process starts of the others.
    jobs.sort(key=lambda j: -j[0])
    threads = [threading.Thread(target=run_job, args=(j,)) for j in jobs]
    for t in threads:
        t.start()
        time.sleep(1.0)
    for t in threads:
        t.join()
    hang.terminate()
    shutil.rmtree(tmp, ignore_errors=True)
    for (length, name), over in sorted(results.items()):
        ms = sorted(o * 1000 for o in over)
        rows.append(f"| {length:g} s | {name} | {statistics.median(ms):.1f} | {ms[0]:.1f} | {ms[-1]:.1f} |")
    seen = sorted({c for cs in CODES.values() for c in cs})
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    lines = [
        "# How closely --deadline holds",
        "",
        "Generated by `python3 benches/deadline.py`. Overrun = wall time from process start to",
        "exit, less the deadline, in milliseconds; runs of one row start together.",
        "",
        "```",
        f"date: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, {mem:.1f} GiB",
        f"kernel: {platform.release()}",
        f"retry-http: {version([a.binary, '--version'])}",
        f"curl: {version([curl, '--version']) if curl else 'not found'}",
        f"runs per row: {a.runs}",
        f"exit codes seen (retry-http: 5 expected; curl: 28): {seen}",
        f"load average before: {' '.join(f'{x:.2f}' for x in load_before)}",
        f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        "```",
        "",
        "| deadline | scenario | median overrun (ms) | min | max |",
        "|---|---|---|---|---|",
        *rows,
        "",
    ]
    with open(a.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
