#!/usr/bin/env python3
"""Small GETs to one origin in one run, curl beside one or more retry-http builds, in
interleaved rounds (each round runs every client once, the order rotated from round to
round, so a change in the machine's load falls on all of them alike).

  python3 benches/batch_gets.py --port PORT --work DIR --urls N --mode Z|serial --rounds R \\
      NAME=BINARY [NAME=BINARY...]

Each URL is http://127.0.0.1:PORT/small.bin?I (I from 1 to N, so none is cached by the
client): curl reads them from a -K file of `url = ` lines, retry-http from --url @FILE.
Under -Z both get --parallel-max 50. Wall time is measured around the child (from fork
to its exit), CPU time is the child's user + system time (wait4's rusage); peak RSS is not
measured here (the forked Python's own pages count in the child's maximum): use GNU time.
Prints the medians, the range of the walls, the exit statuses and each build's ratios to
curl, with the load average over the run. Not part of the test suite.
"""
import argparse
import os
import statistics
import subprocess
import time


def run(argv):
    began = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    return time.perf_counter() - began, ru.ru_utime + ru.ru_stime, os.waitstatus_to_exitcode(status)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--urls", type=int, default=20000)
    ap.add_argument("--mode", choices=("Z", "serial"), default="Z")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--curl", default="curl")
    ap.add_argument("builds", nargs="+", help="NAME=BINARY")
    a = ap.parse_args()
    urls = os.path.join(a.work, f"urls-{a.urls}")
    conf = os.path.join(a.work, f"curl-{a.urls}")
    with open(urls, "w") as u, open(conf, "w") as c:
        for i in range(1, a.urls + 1):
            url = f"http://127.0.0.1:{a.port}/small.bin?{i}"
            u.write(url + "\n")
            c.write(f'url = "{url}"\n')
    z = ["-Z", "--parallel-max", "50"] if a.mode == "Z" else []
    cmds = {"curl": [a.curl, "-s", *z, "-K", conf]}
    for b in a.builds:
        name, path = b.split("=", 1)
        cmds[name] = [path, "-s", *z, "--url", "@" + urls]
    names = list(cmds)
    res = {k: [] for k in names}
    loads = []
    for r in range(a.rounds):
        for k in names[r % len(names):] + names[: r % len(names)]:
            res[k].append(run(cmds[k]))
        loads.append(os.getloadavg()[0])
    med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for k, v in res.items()}
    print(f"{a.urls} GETs, {a.mode}, {a.rounds} rounds, load average {min(loads):.1f}-{max(loads):.1f}")
    for k, v in res.items():
        w, c = med[k]
        walls = [x[0] for x in v]
        exits = sorted(set(x[2] for x in v))
        print(f"  {k:8s} wall {w:.3f} s ({min(walls):.3f}-{max(walls):.3f})  CPU {c:.3f} s  exit {exits}"
              f"  wall/curl {w / med['curl'][0]:.2f}x  CPU/curl {c / med['curl'][1]:.2f}x")


if __name__ == "__main__":
    main()
