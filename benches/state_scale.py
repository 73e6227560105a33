#!/usr/bin/env python3
"""The fleet store at scale: batches of N retry-http processes at once against one target,
all sharing one redis-server through `--state redis://`, measured from outside.

    python3 benches/state_scale.py --bin BIN --target URL --redis-port PORT \
        --proxy PROXY [--levels 1,64,128,1000] [--label before] [--out RAW.json] [--results RESULTS.md]

For each level N (runs launched back to back, as fast as posix_spawn goes, then reaped as
they end):

- wall time a run adds: rounds of two batches of N, one without `--state` and one with it,
  the order swapped every round; each run's wall is spawn to reap; the p50 and p99 of all
  the runs with the store against those without it;
- outcomes lost: each batch with the store uses a key of its own (`?prefix=`), made by one
  warm-up run first (a cron job's record exists); after the batch `retry-http --explain`
  reads the successes in the record; a run that ends 0 without a warning about the store
  must be among them: lost = silent runs - (recorded - 1), when positive;
- store operations per second: `INFO commandstats` calls summed (after `CONFIG RESETSTAT`,
  the warm-up excluded) over the batch's wall time (first spawn to last reap). Redis counts
  the commands a script runs too (`EVAL` and the `GET` inside it are two calls); the script
  calls alone are given beside. Redis's own CPU for the batch (`INFO cpu`, main thread) per
  run bounds what one primary sustains: 1 s / CPU per run, runs per second;
- round trips per run: one more batch of N through a loopback proxy (--proxy, built from
  benches/state_scale/proxy.rs: the tests' tests/support/round_trips.rs) that counts, per
  connection, the connect as one round trip and then each client write that
  follows server bytes (writes with no server byte between them count once); the total
  over the batch's connections / N.

STATE_SCALE_ROUNDS=K runs K rounds at every level instead (a try of the script).

Writes the raw figures to --out (JSON) and a Markdown block, labelled (`before`, `after`),
into --results between `<!-- state-scale:LABEL -->` and `<!-- /state-scale:LABEL -->`
(replaced when the label is there, else appended; other labels are kept).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

# Rounds of (without, with) batches per level; proxy batches per level.
ROUNDS = {1: 100, 64: 6, 128: 4, 1000: 2}
PROXY_ROUNDS = {1: 5}
STORE_WARNING = re.compile(r"warning: cannot (use the state store|record the run in the state store)")


# ------------------------------------------------------------------------------ proxy ---

class Proxy:
    """The round-trip counting proxy (benches/state_scale/proxy.rs, the tests' proxy as a
    program) in front of redis, as a child process."""

    def __init__(self, binary, upstream_port):
        self.child = subprocess.Popen([binary, str(upstream_port)], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
        self.port = int(self.child.stdout.readline())

    def settle(self):
        """(connections, round trips) so far, once every connection has closed."""
        self.child.stdin.write("\n")
        self.child.stdin.flush()
        line = self.child.stdout.readline().split()
        if len(line) != 2:
            sys.exit("state_scale.py: the proxy stopped")
        return int(line[0]), int(line[1])


# ---------------------------------------------------------------------------- batches ---

def batch(argv, n, tmp):
    """Runs `argv` n times, launched back to back; returns (runs, wall) where each run is
    {wall, code, stderr} and wall is first spawn to last reap, in seconds."""
    devnull = os.open(os.devnull, os.O_RDWR)
    started, ended = {}, {}
    paths = {}
    spawned = threading.Semaphore(0)

    def reap():
        # One wait per child spawned, never before it is: wait4 with no child fails.
        for _ in range(n):
            spawned.acquire()
            pid, status, _ = os.wait4(-1, 0)
            ended[pid] = (time.perf_counter(), os.waitstatus_to_exitcode(status))

    reaper = threading.Thread(target=reap, daemon=True)
    reaper.start()
    first = time.perf_counter()
    for i in range(n):
        path = os.path.join(tmp, f"err{i}")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        t = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=[
            (os.POSIX_SPAWN_DUP2, devnull, 0),
            (os.POSIX_SPAWN_DUP2, devnull, 1),
            (os.POSIX_SPAWN_DUP2, fd, 2),
        ])
        spawned.release()
        os.close(fd)
        started[pid], paths[pid] = t, path
    reaper.join()
    last = max(t for t, _ in ended.values())
    os.close(devnull)
    runs = []
    for pid, t0 in started.items():
        t1, code = ended[pid]
        with open(paths[pid], errors="replace") as f:
            err = f.read()
        runs.append({"wall": t1 - t0, "code": code, "stderr": err})
    return runs, last - first


def pct(values, p):
    """The p-th percentile (nearest rank) of values."""
    v = sorted(values)
    if not v:
        return float("nan")
    k = max(0, min(len(v) - 1, int(round(p / 100 * len(v) + 0.5)) - 1))
    return v[k]


# ------------------------------------------------------------------------------ redis ---

def rcli(port, *args):
    out = subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True,
                         text=True, check=True)
    return out.stdout


def info(port, section):
    fields = {}
    for line in rcli(port, "INFO", section).splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.strip().split(":", 1)
            fields[k] = v
    return fields


def commandstats(port):
    calls = {}
    for k, v in info(port, "commandstats").items():
        m = re.search(r"calls=(\d+)", v)
        if m and k.startswith("cmdstat_"):
            calls[k[len("cmdstat_"):]] = int(m.group(1))
    return calls


def redis_cpu(port):
    f = info(port, "cpu")
    if "used_cpu_user_main_thread" in f:
        return float(f["used_cpu_user_main_thread"]) + float(f["used_cpu_sys_main_thread"])
    return float(f["used_cpu_user"]) + float(f["used_cpu_sys"])


def successes(bin_, state, target):
    out = subprocess.run([bin_, "--explain", "--state", state, target], capture_output=True,
                         text=True)
    m = re.search(r"retry budget: \d+ of \d+ left in the last \S+ \((\d+) success(?:es)?\)", out.stdout)
    if not m:
        sys.exit(f"state_scale.py: --explain said:\n{out.stdout}{out.stderr}")
    return int(m.group(1))


# ------------------------------------------------------------------------- measuring ---

class Bench:
    def __init__(self, a):
        self.bin, self.target, self.port = a.bin, a.target, a.redis_port
        self.tmp = tempfile.mkdtemp(prefix="state-scale-")
        self.key = 0

    def argv(self, state):
        extra = ["--state", state] if state else []
        return [self.bin, "-s", "-o", "/dev/null", *extra, self.target]

    def fresh_state(self, port):
        """A store URL whose prefix no batch used, its record made by one warm-up run."""
        self.key += 1
        state = f"redis://127.0.0.1:{port}?prefix=scale{self.key}:"
        runs, _ = batch(self.argv(state), 1, self.tmp)
        if runs[0]["code"] != 0:
            sys.exit(f"state_scale.py: the warm-up run failed: {runs[0]['stderr']}")
        return state

    def with_state(self, n):
        state = self.fresh_state(self.port)
        rcli(self.port, "CONFIG", "RESETSTAT")
        cpu0 = redis_cpu(self.port)
        runs, wall = batch(self.argv(state), n, self.tmp)
        cpu = redis_cpu(self.port) - cpu0
        # The harness's own commands (CONFIG RESETSTAT, INFO) are not the runs'.
        calls = {k: v for k, v in commandstats(self.port).items()
                 if not k.startswith(("config", "info"))}
        recorded = successes(self.bin, state, self.target) - 1
        warned = sum(1 for r in runs if STORE_WARNING.search(r["stderr"]))
        silent = sum(1 for r in runs if r["code"] == 0 and not STORE_WARNING.search(r["stderr"]))
        return {"runs": runs, "wall": wall, "redis_cpu": cpu, "calls": calls,
                "recorded": recorded, "warned": warned, "silent": silent,
                "failed": sum(1 for r in runs if r["code"] != 0)}

    def round_trips(self, n, proxy):
        state = self.fresh_state(proxy.port)
        conns0, trips0 = proxy.settle()
        runs, _ = batch(self.argv(state), n, self.tmp)
        conns, trips = proxy.settle()
        conns, trips = conns - conns0, trips - trips0
        warned = sum(1 for r in runs if STORE_WARNING.search(r["stderr"]))
        return {"connections": conns, "round_trips": trips, "runs": n, "warned": warned}

    def level(self, n, proxy):
        without, withs = [], []
        rounds = int(os.environ.get("STATE_SCALE_ROUNDS", "0")) or ROUNDS.get(n, 2)
        for r in range(rounds):
            order = [False, True] if r % 2 == 0 else [True, False]
            for use in order:
                if use:
                    withs.append(self.with_state(n))
                else:
                    runs, wall = batch(self.argv(None), n, self.tmp)
                    without.append({"runs": runs, "wall": wall})
        trips = [self.round_trips(n, proxy) for _ in range(PROXY_ROUNDS.get(n, 1))]
        return summarise(n, without, withs, trips)


def summarise(n, without, withs, trips):
    w0 = [r["wall"] * 1000 for b in without for r in b["runs"]]
    w1 = [r["wall"] * 1000 for b in withs for r in b["runs"]]
    calls = {}
    for b in withs:
        for k, v in b["calls"].items():
            calls[k] = calls.get(k, 0) + v
    total_calls = sum(calls.values())
    scripts = sum(v for k, v in calls.items() if k in ("eval", "evalsha", "fcall", "fcall_ro"))
    runs_with = sum(len(b["runs"]) for b in withs)
    wall_with = sum(b["wall"] for b in withs)
    cpu = sum(b["redis_cpu"] for b in withs)
    lost = [max(0, b["silent"] - b["recorded"]) for b in withs]
    return {
        "level": n,
        "batches": len(withs),
        "runs_with_state": runs_with,
        "p50_without_ms": pct(w0, 50), "p99_without_ms": pct(w0, 99),
        "p50_with_ms": pct(w1, 50), "p99_with_ms": pct(w1, 99),
        "added_p50_ms": pct(w1, 50) - pct(w0, 50), "added_p99_ms": pct(w1, 99) - pct(w0, 99),
        "calls": calls,
        "calls_per_run": total_calls / runs_with,
        "script_calls_per_run": scripts / runs_with,
        "ops_per_s": total_calls / wall_with,
        "batch_wall_s": [round(b["wall"], 3) for b in withs],
        "redis_cpu_per_run_us": cpu / runs_with * 1e6,
        "expected": [b["silent"] for b in withs],
        "recorded": [b["recorded"] for b in withs],
        "warned": [b["warned"] for b in withs],
        "failed": [b["failed"] for b in withs],
        "lost": lost,
        "round_trips_per_run": sum(t["round_trips"] for t in trips) / sum(t["runs"] for t in trips),
        "proxy": trips,
        "warnings": sorted({re.sub(r"\d+", "N", l) for b in withs for r in b["runs"]
                            for l in r["stderr"].splitlines() if STORE_WARNING.search(l)}),
    }


# ---------------------------------------------------------------------------- writing ---

def proxy_warned(s):
    """" (W of N warned)" for the runs through the proxy that gave up on the store, if any."""
    w = sum(t["warned"] for t in s["proxy"])
    return f" ({w} of {sum(t['runs'] for t in s['proxy'])} warned)" if w else ""


def table(label, machine, levels):
    rows = [
        f"<!-- state-scale:{label} -->",
        f"### {label}",
        "",
        "```",
        machine.strip(),
        "```",
        "",
        "| runs at once | batches | round trips per run (proxy) | store commands per run (scripts' own included) | script calls per run | store ops/s during the batch | Redis CPU per run | wall p50 without / with (added) | wall p99 without / with (added) | runs that warned | outcomes lost in silence (expected − recorded) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in levels:
        lost = ", ".join(f"{e}−{r}={max(0, e - r)}" for e, r in zip(s["expected"], s["recorded"]))
        if s["level"] == 1:
            lost = f"{sum(s['lost'])} of {s['runs_with_state']} runs"
        rows.append(
            f"| {s['level']} | {s['batches']} | {s['round_trips_per_run']:.2f}{proxy_warned(s)} | "
            f"{s['calls_per_run']:.2f} | {s['script_calls_per_run']:.2f} | {s['ops_per_s']:,.0f} | "
            f"{s['redis_cpu_per_run_us']:.0f} µs | "
            f"{s['p50_without_ms']:.2f} / {s['p50_with_ms']:.2f} ms ({s['added_p50_ms']:+.2f}) | "
            f"{s['p99_without_ms']:.2f} / {s['p99_with_ms']:.2f} ms ({s['added_p99_ms']:+.2f}) | "
            f"{sum(s['warned'])} of {s['runs_with_state']} | {lost} |")
    rows.append("")
    for s in levels:
        calls = ", ".join(f"{k} {v}" for k, v in sorted(s["calls"].items()))
        walls = s["batch_wall_s"]
        rows.append(f"- {s['level']} at once: commands counted by Redis over the batches: {calls}; "
                    f"batch wall (first spawn to last reap) median {pct(walls, 50):.3f} s, "
                    f"{min(walls):.3f}–{max(walls):.3f} s")
        for w in s["warnings"]:
            rows.append(f"  - warning seen: `{w}`")
    rows += ["", f"<!-- /state-scale:{label} -->"]
    return "\n".join(rows) + "\n"


def write_results(path, label, block):
    text = open(path).read() if os.path.exists(path) else ""
    pattern = re.compile(rf"<!-- state-scale:{re.escape(label)} -->.*?<!-- /state-scale:{re.escape(label)} -->\n",
                         re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        text = text.rstrip("\n") + "\n\n" + block
    with open(path, "w") as f:
        f.write(text)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--target", required=True)
    p.add_argument("--redis-port", type=int, required=True)
    p.add_argument("--levels", default="1,64,128,1000")
    p.add_argument("--label", default="before")
    p.add_argument("--proxy", required=True, help="benches/state_scale/proxy.rs, built")
    p.add_argument("--machine", default="", help="a file describing the machine")
    p.add_argument("--out")
    p.add_argument("--results")
    a = p.parse_args()
    bench = Bench(a)
    proxy = Proxy(a.proxy, a.redis_port)
    levels = []
    for n in [int(x) for x in a.levels.split(",")]:
        t = time.monotonic()
        s = bench.level(n, proxy)
        levels.append(s)
        print(f"{n:5} at once: {s['round_trips_per_run']:.2f} round trips/run, "
              f"{s['calls_per_run']:.2f} commands/run, {s['ops_per_s']:,.0f} ops/s, "
              f"Redis CPU {s['redis_cpu_per_run_us']:.0f} us/run, "
              f"added p50 {s['added_p50_ms']:+.2f} ms p99 {s['added_p99_ms']:+.2f} ms, "
              f"warned {sum(s['warned'])} (through the proxy {sum(t['warned'] for t in s['proxy'])}), lost in silence {sum(s['lost'])} of "
              f"{s['runs_with_state']} ({time.monotonic() - t:.0f} s)", flush=True)
    machine = open(a.machine).read() if a.machine else ""
    with open("/proc/loadavg") as f:
        machine = machine.rstrip("\n") + f"\nloadavg at end: {f.read().strip()}\n"
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"label": a.label, "machine": machine, "levels": levels}, f, indent=1)
    if a.results:
        write_results(a.results, a.label, table(a.label, machine, levels))


if __name__ == "__main__":
    main()
