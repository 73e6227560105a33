#!/usr/bin/env python3
"""Runs the batch benchmark's clients side by side and writes benches/RESULTS-batch.md.
Started by benches/batch.sh, which builds the binary, starts nginx and describes the machine.

    python3 benches/batch_bench.py --bin retry-http --nginx-port P --machine machine.txt \
        --out results/batch.json --results RESULTS-batch.md \
        [--rate 40] [--urls 300] [--rounds 2] [--gets 1000] [--get-rounds 3] \
        [--mem 10000,100000] [--parallel 50] [--sections rate,ratelimit,gets,memory]

Clients, each started with /usr/bin/time (wall from spawn to exit, CPU = user + system of
the process and everything it waited for, peak RSS); stdout to /dev/null, stderr kept:
  curl      curl -Z --parallel-max P --retry 5 -s URL...
  batch     retry-http -Z --parallel-max P URL...   (only when this build has -Z, found by
            running two URLs with it; else the results say "not measured" and the script is
            ready for the build that does)
  procs     one retry-http process per URL, P at a time: xargs -P P -n 1 retry-http -s -o /dev/null
  procs-state  the same sharing one --state FILE (a fresh one each run): the processes share
            the origin's Retry-After, its retry budget and its breaker (the rate section only)
  careful   benches/batch_careful.py, a reference in Python: 6 connections sharing one hold,
            no spread (the rate section only)

Sections:
  rate       N URLs at /f/1..N of batch_server.py allowing R a second (fixed 1 s windows,
             429 + Retry-After beyond): every client, ROUNDS rounds, alternating. Each run
             starts 10 ms after a whole second of the wall clock, when a window opens, so
             runs are alike. The server counts the 429s, the requests started during an
             announced hold, the transfers that never got a 200, and the holds.
  ratelimit  the same URLs against the server announcing its quota (draft 12's RateLimit and
             RateLimit-Policy; the earlier drafts' RateLimit-Limit/-Remaining/-Reset; and
             X-RateLimit-* with the reset as epoch seconds and as a delay): the batch once per
             dialect (goal: no 429, >= 90% of the quota used), curl once with draft 12 beside,
             and the reference client pacing by the fields (batch_careful.py --pace) with
             draft 12 and with X-RateLimit-* (epoch reset).
  gets       G small GETs to one origin with no limit (nginx, 1 KiB, /small.bin?n=I so every
             URL differs; batch_server.py --rate 0 when nginx is absent): batch, procs and
             curl, GET_ROUNDS rounds alternating; wall and CPU, medians.
  memory     peak RSS of the batch given --url @FILE of M URLs (each size in --mem), with
             curl -Z -K FILE (url = lines) beside.
"""

import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] batch: {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ servers ---
class RateServer:
    """One batch_server.py of ours; stopped by stop()."""

    def __init__(self, *args):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "batch_server.py"), "--port", "0", *args],
            stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split()
        if len(line) != 2 or line[0] != "ready":
            raise SystemExit(f"batch_server.py {' '.join(args)} did not start")
        self.port = int(line[1])
        self.args = args

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def stats(self, reset=True):
        q = "?reset=1" if reset else ""
        with urllib.request.urlopen(self.url(f"/_stats{q}"), timeout=10) as r:
            return json.load(r)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# ------------------------------------------------------------------ clients ---
TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def run(argv, work, label, stdin_path=None, timeout=600):
    """Runs argv; wall (spawn to exit), CPU, peak RSS, exit code and the end of stderr.

    With /usr/bin/time, CPU and peak RSS are its %U + %S and %M (it forks, so the RSS is the
    client's own, not this script's). Without it, CPU comes from wait4 (the process and all
    it waited for) and peak RSS from VmHWM in /proc, read every 10 ms while it runs (the
    largest of the process and its children)."""
    tfile = os.path.join(work, f"{label}.time")
    efile = os.path.join(work, f"{label}.stderr")
    full = [TIME, "-f", "%U %S %M", "-o", tfile, *argv] if TIME else argv
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    hwm = 0
    with open(efile, "wb") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(full, stdin=stdin, stdout=subprocess.DEVNULL, stderr=err)
        killer = threading.Timer(timeout, p.kill)
        killer.start()
        while True:
            pid, status, usage = os.wait4(p.pid, 0 if TIME else os.WNOHANG)
            if pid:
                break
            hwm = max(hwm, vm_hwm(p.pid))
            time.sleep(0.01)
        wall = time.perf_counter() - t0
        killer.cancel()
        p.returncode = code = os.waitstatus_to_exitcode(status)
    if stdin_path:
        stdin.close()
    cpu, rss = usage.ru_utime + usage.ru_stime, hwm or None
    if TIME and os.path.exists(tfile):
        lines = [line for line in open(tfile).read().splitlines() if line.strip()]
        try:
            last = lines[-1].split()
            cpu, rss = float(last[0]) + float(last[1]), int(last[2])
        except (ValueError, IndexError):
            pass
    tail = open(efile, errors="replace").read().splitlines()
    return {"wall_s": wall, "cpu_s": cpu, "rss_kib": rss, "exit": code,
            "stderr_tail": tail[-3:], "stderr_lines": len(tail)}


def vm_hwm(pid):
    """VmHWM of pid and its children (KiB), for machines without /usr/bin/time."""
    best = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            for child in open(f"/proc/{pid}/task/{tid}/children").read().split():
                best = max(best, vm_hwm(int(child)))
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                best = max(best, int(line.split()[1]))
    except OSError:
        pass
    return best


def has_batch(binary):
    """Whether this build runs many URLs in one process: two URLs under -Z --parallel-max 2
    against a server of ours, both served, exit 0 (a probe, not --help: a build may accept
    the flags before its help lists them)."""
    srv = RateServer("--rate", "0")
    try:
        argv = [binary, "-s", "-Z", "--parallel-max", "2", srv.url("/f/1"), srv.url("/f/2")]
        code = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=60).returncode
        return code == 0 and srv.stats()["paths_served"] == 2
    except subprocess.TimeoutExpired:
        return False
    finally:
        srv.stop()


def align():
    """Sleeps until 10 ms after the next whole second of the wall clock (a window opens)."""
    now = time.time()
    time.sleep((int(now) + 1 + 0.010) - now)


def commands(a, urls, url_file, state=None):
    """The clients of the rate sections, by name: argv and stdin."""
    p = str(a.parallel)
    procs = ["xargs", "-P", p, "-n", "1", a.bin, "-s", "-o", "/dev/null"]
    cmds = {
        "curl": ([a.curl, "-Z", "--parallel-max", p, "--retry", "5", "-s", *urls], None),
        "procs": (procs, url_file),
    }
    if state:
        cmds["procs-state"] = ([*procs, "--state", state], url_file)
        cmds["careful"] = ([sys.executable, os.path.join(HERE, "batch_careful.py"),
                            "--connections", "6"], url_file)
    if a.batch:
        cmds["batch"] = ([a.bin, "-Z", "--parallel-max", p, *a.batch_flags, *urls], None)
    return cmds


# ------------------------------------------------------------------ sections ---
def rate_section(a, work, out):
    srv = RateServer("--rate", str(a.rate))
    try:
        urls = [srv.url(f"/f/{i}") for i in range(1, a.urls + 1)]
        url_file = os.path.join(work, "rate-urls.txt")
        open(url_file, "w").write("\n".join(urls) + "\n")
        state = os.path.join(work, "state.json")
        cmds = commands(a, urls, url_file, state)
        runs = {k: [] for k in cmds}
        for r in range(a.rounds):
            order = list(cmds) if r % 2 == 0 else list(reversed(list(cmds)))
            for name in order:
                argv, stdin = cmds[name]
                if os.path.exists(state):
                    os.unlink(state)  # every run with --state starts from a fresh one
                srv.stats(reset=True)
                align()
                res = run(argv, work, f"rate-{name}-{r}", stdin)
                res["server"] = srv.stats(reset=True)
                runs[name].append(res)
                s = res["server"]
                log(f"rate {name} round {r + 1}: {res['wall_s']:.2f} s, exit {res['exit']}, "
                    f"{s['r429']} x 429, {s['during_hold']} started during a hold, "
                    f"{a.urls - s['paths_served']} failed")
        out["rate"] = {"runs": runs, "argv": {k: shown(v[0], a) for k, v in cmds.items()}}
    finally:
        srv.stop()


def ratelimit_section(a, work, out):
    dialects = [("draft12", []), ("legacy", []), ("x", ["--x-reset", "epoch"]),
                ("x-delay", ["--x-reset", "delay"])]
    res_all = {}
    for name, extra in dialects:
        srv = RateServer("--rate", str(a.rate), "--announce", name.split("-")[0], *extra)
        try:
            urls = [srv.url(f"/f/{i}") for i in range(1, a.urls + 1)]
            url_file = os.path.join(work, "rl-urls.txt")
            open(url_file, "w").write("\n".join(urls) + "\n")
            cmds = commands(a, urls, url_file)
            cmds["pacer"] = ([sys.executable, os.path.join(HERE, "batch_careful.py"),
                              "--connections", "6", "--pace"], url_file)
            who = ["batch"] if a.batch else []
            if name in ("draft12", "x"):
                who.append("pacer")
            if name == "draft12":
                who.append("curl")
            for client in who:
                argv, stdin = cmds[client]
                srv.stats(reset=True)
                align()
                res = run(argv, work, f"rl-{name}-{client}", stdin)
                res["server"] = s = srv.stats(reset=True)
                res_all[f"{name}/{client}"] = res
                share = quota_share(s)
                log(f"ratelimit {name} {client}: {res['wall_s']:.2f} s, {s['r429']} x 429, "
                    f"quota used {share * 100 if share is not None else float('nan'):.0f}%")
        finally:
            srv.stop()
    out["ratelimit"] = res_all


def gets_section(a, work, out):
    srv = None
    if a.nginx_port:
        base = f"http://127.0.0.1:{a.nginx_port}/small.bin?n="
        target = "nginx"
    else:
        srv = RateServer("--rate", "0")
        base = srv.url("/f/")
        target = "batch_server.py --rate 0"
    try:
        urls = [f"{base}{i}" for i in range(1, a.gets + 1)]
        url_file = os.path.join(work, "gets-urls.txt")
        open(url_file, "w").write("\n".join(urls) + "\n")
        p = str(a.parallel)
        cmds = {
            "batch": [a.bin, "-Z", "--parallel-max", p, "-s", *a.batch_flags, "--url", "@" + url_file],
            "procs": ["xargs", "-P", p, "-n", "1", a.bin, "-s", "-o", "/dev/null"],
            "curl": [a.curl, "-Z", "--parallel-max", p, "-s", *urls],
        }
        if not a.batch:
            del cmds["batch"]
        runs = {k: [] for k in cmds}
        for r in range(a.get_rounds):
            order = list(cmds) if r % 2 == 0 else list(reversed(list(cmds)))
            for name in order:
                res = run(cmds[name], work, f"gets-{name}-{r}",
                          url_file if name == "procs" else None)
                runs[name].append(res)
                log(f"gets {name} round {r + 1}: wall {res['wall_s']:.2f} s, "
                    f"CPU {res['cpu_s'] or 0:.2f} s, exit {res['exit']}")
        out["gets"] = {"target": target, "runs": runs,
                       "argv": {k: shown(v, a) for k, v in cmds.items()}}
    finally:
        if srv:
            srv.stop()


def memory_section(a, work, out):
    if not a.nginx_port:
        srv = RateServer("--rate", "0")
        base = srv.url("/f/")
    else:
        srv, base = None, f"http://127.0.0.1:{a.nginx_port}/small.bin?n="
    res = {}
    try:
        for m in a.mem:
            url_file = os.path.join(work, f"mem-{m}.txt")
            with open(url_file, "w") as f:
                for i in range(1, m + 1):
                    f.write(f"{base}{i}\n")
            conf = os.path.join(work, f"mem-{m}.curlrc")
            with open(conf, "w") as f:
                for i in range(1, m + 1):
                    f.write(f'url = "{base}{i}"\n')
            p = str(a.parallel)
            cmds = {"curl": [a.curl, "-Z", "--parallel-max", p, "-s", "-K", conf]}
            if a.batch:
                cmds["batch"] = [a.bin, "-Z", "--parallel-max", p, "-s", *a.batch_flags,
                                 "--url", "@" + url_file]
            for name, argv in cmds.items():
                r = run(argv, work, f"mem-{name}-{m}")
                res[f"{name}/{m}"] = r
                log(f"memory {name} {m} URLs: peak RSS {r['rss_kib']} KiB, "
                    f"wall {r['wall_s']:.1f} s, exit {r['exit']}")
            os.unlink(conf)
    finally:
        if srv:
            srv.stop()
    out["memory"] = res


def shown(argv, a):
    """A command line as the results show it: no local paths, URLs elided."""
    out, urls = [], 0
    for x in argv:
        if x.startswith("http://"):
            urls += 1
            if urls == 1:
                out.append("URL...")
            continue
        if x == a.bin:
            x = "retry-http"
        elif x == sys.executable:
            x = "python3"
        elif x.endswith("/batch_careful.py"):
            x = "benches/batch_careful.py"
        elif x == a.curl:
            x = "curl"
        elif x.startswith("@/"):
            x = "@FILE"
        elif x.startswith("/") and x != "/dev/null":
            x = "FILE"
        out.append(x)
    return shlex.join(out)


# ------------------------------------------------------------------ report ---
def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, f="{:.2f}", none="n/a"):
    return none if x is None else f.format(x)


def table(lines, head, rows):
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for r in rows:
        lines.append("| " + " | ".join(str(c) for c in r) + " |")
    lines.append("")


NAMES = {"curl": "curl -Z", "batch": "retry-http -Z (one process)",
         "procs": "retry-http, a process per URL (xargs -P)",
         "procs-state": "the same, sharing --state FILE",
         "careful": "reference: batch_careful.py (6 connections, one hold)",
         "pacer": "reference: batch_careful.py --pace (6 connections)"}


def report(a, out, machine):
    L = []
    L.append("# retry-http benchmark results: many URLs in one run")
    L.append("")
    raw = os.path.relpath(os.path.abspath(a.out), HERE)
    L.append(f"Generated by `bash benches/batch.sh`; raw data in `benches/{raw}` (not kept in "
             f"git). Re-running regenerates everything above the findings marker; the "
             f"servers, the clients and how each figure is taken are described in "
             f"`benches/batch_server.py` and `benches/batch_bench.py`.")
    L.append("")
    L.append("## Machine, versions, date")
    L.append("")
    L.append("```")
    L.extend(machine.rstrip("\n").splitlines())
    L.append("```")
    L.append("")
    if not a.batch:
        L.append("**This build has no `-Z`**: the batch's rows are not measured. The script "
                 "measures them with a build that runs two URLs under `-Z --parallel-max 2`.")
        L.append("")
    summary = []
    rate_report(a, out, L, summary)
    ratelimit_report(a, out, L, summary)
    gets_report(a, out, L, summary)
    memory_report(a, out, L, summary)
    head = L[:L.index("## Machine, versions, date")]
    rest = L[len(head):]
    S = ["## Summary", ""]
    table(S, ("figure", "value"), summary)
    return "\n".join(head + S + rest)


def careful_ideal(n, rate, window=1.0, phase=0.010):
    """The least completion time of a client that honours every hold, against the server's
    rule, from a start `phase` seconds into a window: it sends without delay, takes the whole
    quota of each window, learns that the quota is spent from one 429 and waits out its
    Retry-After (the time to the window's end, rounded up to whole seconds)."""
    quota = int(round(rate * window))
    t, left = phase, n
    while True:
        left -= min(quota, left)
        if left == 0:
            return t - phase
        to_end = (math.floor(t / window) + 1) * window - t
        t += max(1, math.ceil(to_end - 1e-9))


def rate_report(a, out, L, summary):
    d = out.get("rate")
    if not d:
        return
    ideal = a.urls / a.rate
    careful = careful_ideal(a.urls, a.rate)
    L.append(f"## {a.urls:,} URLs against a limit of {a.rate:g} a second")
    L.append("")
    L.append(f"`benches/batch_server.py --rate {a.rate:g}`: fixed windows of 1 s aligned to the "
             f"wall clock, {a.rate:g} requests each per origin, 429 with `Retry-After` (the time "
             f"to the window's end, rounded up to whole seconds: 1) beyond. Each run starts 10 ms "
             f"into a window. A request started during a hold arrived more than 5 ms after an "
             f"earlier 429 for the origin was written and before the hold it announced ended "
             f"(within 5 ms the client may have decided to send it before it could read the "
             f"429: in flight); in brackets, how many of those met a 429 and how many came more "
             f"than 50 ms into the hold. A failed transfer is a URL that never got a 200, "
             f"whatever the client's exit status. Yardsticks: {a.urls}/R = {ideal:.2f} s, and "
             f"the careful ideal, {careful:.2f} s: a client with no latency that takes each "
             f"window's whole quota at once, learns that it is spent from one 429 and waits out "
             f"every Retry-After (from 10 ms into a window, a hold ends 10 ms into the next). "
             f"Medians of {a.rounds} runs each (every run in the raw data), runs alternating.")
    L.append("")
    rows = []
    for name, runs in d["runs"].items():
        S = [r["server"] for r in runs]
        wall = med([r["wall_s"] for r in runs])
        m = lambda k: fmt(med([s[k] for s in S]), "{:.0f}")  # noqa: E731
        rows.append((
            NAMES[name], fmt(wall), f"{wall / ideal:.2f}x", f"{wall / careful:.2f}x",
            m("requests"), fmt(med([s.get("connections") for s in S]), "{:.0f}"), m("r429"),
            f"{m('during_hold')} ({m('during_hold_429')} met a 429, "
            f"{m('during_hold_50ms')} > 50 ms in)",
            "/".join(str(a.urls - s["paths_served"]) for s in S),
            "/".join(str(r["exit"]) for r in runs),
            fmt(med([s["hold_s"] for s in S])),
            fmt(med([r["cpu_s"] for r in runs]))))
        summary.append((f"{a.urls} URLs at {a.rate:g}/s, {NAMES[name]}: completion, 429s, "
                        f"started during a hold, failed",
                        f"{wall:.2f} s ({wall / ideal:.2f}x of {a.urls}/R, {wall / careful:.2f}x "
                        f"of the careful ideal), {rows[-1][6]}, {rows[-1][7]}, {rows[-1][8]}"))
    table(L, ("client", "completion s", f"vs {a.urls}/R", "vs careful ideal", "requests",
              "connections", "429s", "started during a hold", "failed transfers, each run", "exit codes",
              "held s (union)", "CPU s"), rows)
    for r in d["runs"].get("batch", [])[:1]:
        if r["stderr_tail"]:
            L.append(f"The batch's last line on stderr (its summary), first run: "
                     f"`{r['stderr_tail'][-1]}` ({r['stderr_lines']} lines in all).")
            L.append("")
    L.append("Commands:")
    L.append("")
    L.append("```")
    for name, cmd in d["argv"].items():
        stdin = name.startswith("procs") or name == "careful"
        L.append(cmd + ("   # URLs one a line on stdin" if stdin else ""))
    L.append("```")
    L.append("")


def quota_share(s):
    """The share of the quota used in the windows strictly between the first and the last
    with a 200, empty windows included (from the 200s per window)."""
    inner = s["served_per_window"][1:-1]
    return sum(inner) / (s["quota"] * len(inner)) if inner and s["quota"] else None


def ratelimit_report(a, out, L, summary):
    d = out.get("ratelimit")
    if d is None:
        return
    L.append("## The same server announcing its quota (RateLimit fields)")
    L.append("")
    L.append("The same limit, every answer carrying the quota: draft 12 `RateLimit-Policy: "
             f"\"default\";q={int(a.rate)};w=1` and `RateLimit: \"default\";r=LEFT;t=SECONDS`; "
             "the earlier drafts' `RateLimit-Limit`/`-Remaining`/`-Reset` (a delay); "
             "`X-RateLimit-*` with the reset as epoch seconds, and as a delay. Goal: no 429, "
             "at least 90% of the quota used. The share counts the windows between the first "
             "and the last with a 200, those two left out (partial by nature).")
    L.append("")
    if not a.batch:
        L.append("The batch: not measured, this build has no `-Z`.")
        L.append("")
    rows = []
    for key, r in d.items():
        dialect, client = key.split("/")
        s = r["server"]
        share = quota_share(s)
        rows.append((dialect, NAMES[client], fmt(r["wall_s"]),
                     f"{r['wall_s'] / (a.urls / a.rate):.2f}x", s["r429"],
                     fmt(share * 100 if share is not None else None, "{:.0f}%"),
                     a.urls - s["paths_served"], r["exit"],
                     " ".join(map(str, s["served_per_window"]))))
        if client in ("batch", "pacer"):
            summary.append((f"RateLimit fields ({dialect}), {NAMES[client]}: 429s, quota used",
                            f"{s['r429']}, {rows[-1][5]}"))
    table(L, ("dialect", "client", "completion s", f"vs {a.urls}/R", "429s", "quota used",
              "failed", "exit", "200s per window"), rows)


def gets_report(a, out, L, summary):
    d = out.get("gets")
    if not d:
        return
    L.append(f"## {a.gets:,} small GETs to one origin, no limit")
    L.append("")
    L.append(f"Target: {d['target']} on loopback, 1 KiB, every URL different (a query). "
             f"Wall from spawn to exit; CPU = user + system of the client and everything it "
             f"started (xargs's children included). The batch keeps at most "
             f"`--parallel-max-host` transfers in flight to one origin (its default unless the "
             f"command says otherwise); curl 7.88 has no such limit and keeps {a.parallel}. "
             f"Medians of {a.get_rounds} rounds, the "
             f"order reversed every other round.")
    L.append("")
    meds = {k: (med([r["wall_s"] for r in v]), med([r["cpu_s"] for r in v]))
            for k, v in d["runs"].items()}
    rows = []
    for name, runs in d["runs"].items():
        w, c = meds[name]
        vs = lambda other, i: (f"{meds[name][i] / meds[other][i]:.2f}x"  # noqa: E731
                               if other in meds and meds[other][i] else "")
        rows.append((NAMES[name], fmt(w), fmt(c), vs("curl", 0), vs("curl", 1),
                     vs("procs", 0), vs("procs", 1),
                     fmt(med([r["rss_kib"] for r in runs]), "{:.0f}"),
                     "/".join(str(r["exit"]) for r in runs)))
        summary.append((f"{a.gets:,} GETs, {NAMES[name]}: wall, CPU", f"{w:.2f} s, {fmt(c)} s"
                        + (f" ({vs('curl', 0)} / {vs('curl', 1)} of curl's)" if name != "curl" else "")))
    table(L, ("client", "wall s", "CPU s", "wall vs curl", "CPU vs curl", "wall vs procs",
              "CPU vs procs", "peak RSS KiB", "exit codes"), rows)
    L.append("```")
    for name, cmd in d["argv"].items():
        L.append(cmd + ("   # URLs one a line on stdin" if name == "procs" else ""))
    L.append("```")
    L.append("")


def memory_report(a, out, L, summary):
    d = out.get("memory")
    if not d:
        return
    L.append("## Memory: peak RSS by the length of the URL list")
    L.append("")
    L.append("Peak RSS (`/usr/bin/time`'s %M, else VmHWM from /proc) of one run over a list of "
             "URLs from a file (retry-http `--url @FILE`, curl `-K FILE` of `url =` lines), "
             "bodies to /dev/null.")
    L.append("")
    rows = []
    sizes = sorted({int(k.split("/")[1]) for k in d})
    for client in ("batch", "curl"):
        cells = [d.get(f"{client}/{m}") for m in sizes]
        if not any(cells):
            continue
        rss = [c["rss_kib"] if c else None for c in cells]
        grow = (f"{rss[-1] / rss[0]:.2f}x" if len(rss) > 1 and rss[0] and rss[-1] else "")
        rows.append((NAMES[client], *[fmt(x / 1024 if x else None, "{:.1f} MiB") for x in rss],
                     grow, *[fmt(c["wall_s"] if c else None, "{:.1f} s") for c in cells],
                     "/".join(str(c["exit"]) for c in cells if c)))
        if len(rss) > 1:
            summary.append((f"peak RSS, {NAMES[client]}, {sizes[0]:,} → {sizes[-1]:,} URLs",
                            " → ".join(fmt(x / 1024 if x else None, "{:.1f} MiB") for x in rss)
                            + f" ({grow})"))
    table(L, ("client", *[f"{m:,} URLs" for m in sizes], f"{sizes[-1]:,} / {sizes[0]:,}",
              *[f"wall, {m:,}" for m in sizes], "exit codes"), rows)


# ------------------------------------------------------------------ main ---
def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--curl", default="curl")
    p.add_argument("--nginx-port", type=int, default=0)
    p.add_argument("--machine", help="the machine's description (batch.sh writes it)")
    p.add_argument("--out", required=True)
    p.add_argument("--results", required=True)
    p.add_argument("--rate", type=float, default=40)
    p.add_argument("--urls", type=int, default=300)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--gets", type=int, default=1000)
    p.add_argument("--get-rounds", type=int, default=3)
    p.add_argument("--mem", default="10000,100000")
    p.add_argument("--parallel", type=int, default=50)
    p.add_argument("--sections", default="rate,ratelimit,gets,memory")
    p.add_argument("--batch-flags", default="", help="more flags for the batch (split by shlex)")
    p.add_argument("--report-only", action="store_true",
                   help="write --results again from the raw data in --out, measuring nothing")
    a = p.parse_args()
    a.mem = [int(x) for x in a.mem.split(",") if x]
    a.batch = has_batch(a.bin) if not a.report_only else False
    a.batch_flags = shlex.split(a.batch_flags)
    if not a.report_only:
        log(f"the batch: {'measured' if a.batch else 'not in this build (no -Z)'}")
    out = {"params": {k: getattr(a, k) for k in ("rate", "urls", "rounds", "gets", "get_rounds",
                                                 "mem", "parallel", "batch", "batch_flags")}}
    if a.report_only:
        out = json.load(open(a.out))
        for k, v in out["params"].items():
            setattr(a, k, v)
    else:
        want = a.sections.split(",")
        with tempfile.TemporaryDirectory(prefix="retry-http-batch.") as work:
            for name, fn in (("rate", rate_section), ("ratelimit", ratelimit_section),
                             ("gets", gets_section), ("memory", memory_section)):
                if name in want:
                    fn(a, work, out)
        out["machine"] = (open(a.machine).read().rstrip("\n") + "\nloadavg at end: "
                          + " ".join(open("/proc/loadavg").read().split()[:3]) + "\n")
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
    text = report(a, out, out.get("machine", ""))
    findings = ""
    mark = "<!-- findings -->"
    if os.path.exists(a.results):
        old = open(a.results).read()
        if mark in old:
            findings = old[old.index(mark):]
    with open(a.results, "w") as f:
        f.write(text.rstrip("\n") + "\n\n" + (findings or mark + "\n"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
