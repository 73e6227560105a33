#!/usr/bin/env python3
"""Runs two commands strictly alternately (A, B, A, B, ...) and records each run's wall
time (spawn to reap) and exit code. (No RSS: after posix_spawn, which shares the parent's
memory until exec, wait4's ru_maxrss counts Python's own RSS.)

    python3 benches/alternate.py --runs N --warmup W --out OUT.json -- 'CMD A' 'CMD B'

Commands are split with shlex (no shell); stdin, stdout and stderr are /dev/null. A
non-zero exit is recorded, not fatal. The order inside each pair alternates too (A,B then
B,A) so neither command always runs first after the other.
"""

import argparse
import json
import os
import shlex
import sys
import time


def run_once(argv, devnull):
    t0 = time.perf_counter_ns()
    pid = os.posix_spawnp(
        argv[0],
        argv,
        os.environ,
        file_actions=[
            (os.POSIX_SPAWN_DUP2, devnull, 0),
            (os.POSIX_SPAWN_DUP2, devnull, 1),
            (os.POSIX_SPAWN_DUP2, devnull, 2),
        ],
    )
    _, status = os.waitpid(pid, 0)
    t1 = time.perf_counter_ns()
    return (t1 - t0) / 1e9, os.waitstatus_to_exitcode(status)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, required=True)
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--out", required=True)
    p.add_argument("commands", nargs=2)
    a = p.parse_args()
    cmds = [shlex.split(c) for c in a.commands]
    devnull = os.open(os.devnull, os.O_RDWR)
    for _ in range(a.warmup):
        for c in cmds:
            run_once(c, devnull)
    res = [{"command": a.commands[i], "times": [], "exit_codes": []}
           for i in range(2)]
    for r in range(a.runs):
        order = (0, 1) if r % 2 == 0 else (1, 0)
        for i in order:
            t, code = run_once(cmds[i], devnull)
            res[i]["times"].append(t)
            res[i]["exit_codes"].append(code)
    with open(a.out, "w") as f:
        json.dump({"results": res}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
