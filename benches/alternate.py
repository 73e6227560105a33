#!/usr/bin/env python3
"""Runs two or more commands strictly alternately (A, B, A, B, ...) and records each run's
wall time (spawn to reap), CPU time (user + system, from wait4) and exit code. (No RSS:
after posix_spawn, which shares the parent's memory until exec, wait4's ru_maxrss counts
Python's own RSS.)

    python3 benches/alternate.py --runs N --warmup W [--prepare CMD] [--order reverse|balanced] \
        --out OUT.json -- 'CMD A' 'CMD B' ['CMD C' ...]

Commands are split with shlex (no shell); stdin, stdout and stderr are /dev/null. A
non-zero exit is recorded, not fatal. Each round runs every command once. With
`--order reverse` (the default) the order is reversed every other round (A,B,C then C,B,A)
so no command always runs first after the same other one; with `--order balanced` the
rounds go through every rotation, forwards and then backwards (for three commands: ABC,
BCA, CAB, CBA, ACB, BAC), so over a multiple of 2 x (number of commands) rounds each
command holds each place, and within a round follows each other command, equally often.

`--prepare CMD` runs CMD (split the same way) before every run, warm-ups included, outside
the timed span (as hyperfine's --prepare): for instance removing the previous run's output,
so that every run starts alike and the removal's time is nobody's. A prepare command that
fails stops the measurement.
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
    _, status, usage = os.wait4(pid, 0)
    t1 = time.perf_counter_ns()
    return (t1 - t0) / 1e9, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def prepare(argv, devnull):
    """Runs the prepare command, untimed; exits when it fails."""
    if argv:
        code = run_once(argv, devnull)[2]
        if code != 0:
            sys.exit(f"alternate.py: the prepare command {shlex.join(argv)} exited {code}")


def order(n, r, how):
    """The order in which round r runs n commands (see the module's doc)."""
    forward = list(range(n))
    if how == "reverse":
        return forward if r % 2 == 0 else forward[::-1]
    k = r % n
    rotated = forward[k:] + forward[:k]
    return rotated if (r // n) % 2 == 0 else rotated[::-1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, required=True)
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--out", required=True)
    p.add_argument("--prepare", default="", help="run before every run, untimed")
    p.add_argument("--order", choices=("reverse", "balanced"), default="reverse")
    p.add_argument("commands", nargs="+")
    a = p.parse_args()
    if len(a.commands) < 2:
        p.error("give at least two commands")
    cmds = [shlex.split(c) for c in a.commands]
    before = shlex.split(a.prepare)
    devnull = os.open(os.devnull, os.O_RDWR)
    for _ in range(a.warmup):
        for c in cmds:
            prepare(before, devnull)
            run_once(c, devnull)
    res = [{"command": c, "times": [], "cpu_s": [], "exit_codes": []} for c in a.commands]
    for r in range(a.runs):
        for i in order(len(cmds), r, a.order):
            prepare(before, devnull)
            t, cpu, code = run_once(cmds[i], devnull)
            res[i]["times"].append(t)
            res[i]["cpu_s"].append(cpu)
            res[i]["exit_codes"].append(code)
    with open(a.out, "w") as f:
        json.dump({"results": res}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
