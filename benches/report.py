#!/usr/bin/env python3
"""Turns the raw results of benches/run.sh into RESULTS.md.

    python3 benches/report.py RESULTS_DIR OUT.md

Everything after the line `<!-- findings -->` in an existing OUT.md is kept (hand-written
findings survive a re-run); the rest is regenerated from the raw files.
"""

import collections
import glob
import json
import os
import statistics
import sys

MIB = 1024 * 1024
MARK = "<!-- findings -->"
# The markers around the section benches/floor.sh writes.
FLOOR = ("<!-- floor -->", "<!-- /floor -->")


# ------------------------------------------------------------------ helpers ---
def q(xs, p):
    """Percentile p (0..100) by linear interpolation."""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100
    f = int(k)
    c = min(f + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def spread(xs, fmt="{:.3f}"):
    if not xs:
        return "n/a"
    return (f"min {fmt.format(min(xs))}, IQR {fmt.format(q(xs, 25))}–{fmt.format(q(xs, 75))}, "
            f"max {fmt.format(max(xs))}")


def verdict(ok):
    if ok is None:
        return "n/a"
    return "**met**" if ok else "**MISSED**"


def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        lines = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    head = lines[0]
    return [dict(zip(head, l)) for l in lines[1:]]


def load_json(path):
    with open(path) as f:
        return json.load(f)


class Doc:
    def __init__(self):
        self.parts = []
        self.summary = []  # (metric, retry-http, curl, ratio, target, verdict)

    def __call__(self, s=""):
        self.parts.append(s)

    def row(self, *cells):
        self.parts.append("| " + " | ".join(str(c) for c in cells) + " |")

    def table(self, header, rows):
        self.row(*header)
        self.row(*["---"] * len(header))
        for r in rows:
            self.row(*r)
        self()


def commands(res):
    out = collections.OrderedDict()
    p = os.path.join(res, "commands.tsv")
    if os.path.exists(p):
        for line in open(p):
            if "\t" in line:
                k, v = line.rstrip("\n").split("\t", 1)
                out.setdefault(k, []).append(v)
    return out


def cmd_block(doc, cmds, *keys):
    lines = []
    for k in keys:
        for v in cmds.get(k, []):
            lines.append(v)
    if lines:
        doc("Reproduce:")
        doc()
        doc("```")
        for l in lines:
            doc(l)
        doc("```")
        doc()


# ----------------------------------------------------------------- sections ---
def section1(doc, res, cmds):
    rounds = sorted(glob.glob(os.path.join(res, "s1_round*.json")))
    if not rounds:
        return
    times = collections.defaultdict(list)

    def kind(cmd):
        if cmd.startswith("curl"):
            return "curl"
        if cmd.startswith("env -u"):
            return "retry-http, SSL_CERT_DIR/FILE unset"
        if " -k " in cmd:
            return "retry-http -k"
        return "retry-http"
    for path in rounds:
        for r in load_json(path)["results"]:
            times[kind(r["command"])].extend(r["times"])
    alt = load_json(os.path.join(res, "s1_alternate.json"))["results"]
    alt_t = {("curl" if r["command"].startswith("curl") else "retry-http"): r for r in alt}
    doc("## 1. Start-up + one small GET (1 KiB from nginx), whole process")
    doc()
    doc(f"hyperfine -N, retry-http and curl (and the two diagnostic variants below) in each "
        f"invocation, {len(rounds)} rounds with the order reversed every round (retry-http first "
        f"in odd rounds), all runs pooled "
        f"({len(times['retry-http'])} runs each). Cross-check: `benches/alternate.py`, strict "
        f"A,B,B,A,... alternation with posix_spawn ({len(alt_t['retry-http']['times'])} runs each; "
        f"this includes Python's spawn overhead, the same for both).")
    doc()
    rows = []
    ratios = {}
    for label, src in (("hyperfine", times), ("alternate.py", {k: v["times"] for k, v in alt_t.items()})):
        r, c = src["retry-http"], src["curl"]
        ratio = med(r) / med(c)
        ratios[label] = ratio
        rows.append((label, f"{med(r)*1e3:.2f}", spread([x * 1e3 for x in r], "{:.2f}"),
                     f"{med(c)*1e3:.2f}", spread([x * 1e3 for x in c], "{:.2f}"),
                     f"{ratio:.2f}x"))
    doc.table(("method", "retry-http median ms", "retry-http spread ms", "curl median ms",
               "curl spread ms", "ratio"), rows)
    bad = [c for c in alt_t["retry-http"]["exit_codes"] + alt_t["curl"]["exit_codes"] if c != 0]
    doc(f"Non-zero exits in the alternation: {len(bad)}.")
    doc()
    diag = [k for k in ("retry-http -k", "retry-http, SSL_CERT_DIR/FILE unset") if times.get(k)]
    if diag:
        doc("Diagnostics, measured in the same hyperfine rounds (same runs count): where retry-http's "
            "start-up goes. `-k` builds no certificate store at all; the env variant shows the cost "
            "when SSL_CERT_DIR/SSL_CERT_FILE are unset (rustls-native-certs then probes the default "
            "locations; this row also pays for env(1)'s own exec, roughly 0.5 ms).")
        doc()
        rows = []
        for k in ["retry-http", "curl"] + diag:
            xs = times[k]
            rows.append((k, f"{med(xs)*1e3:.2f}", spread([x * 1e3 for x in xs], "{:.2f}"),
                         f"{med(xs) / med(times['curl']):.2f}x"))
        doc.table(("command", "median ms", "spread ms", "vs curl"), rows)
    cmd_block(doc, cmds, "1", "1b")
    r = ratios["hyperfine"]
    doc.summary.append(("1. start-up + small GET, median", f"{med(times['retry-http'])*1e3:.2f} ms",
                        f"{med(times['curl'])*1e3:.2f} ms", f"{r:.2f}x", "<= 0.5x", verdict(r <= 0.5)))


def section2(doc, res, cmds):
    rows = read_tsv(os.path.join(res, "s2.tsv"))
    if not rows:
        return
    data = collections.defaultdict(lambda: {"wall": [], "rss": [], "exit": [], "bytes": [], "cpu": []})
    for r in rows:
        if r["run"] == "0":  # warm-up
            continue
        tool = "curl" if r["tool"] == "curl" else "retry-http"
        d = data[(r["variant"], tool)]
        d["wall"].append(float(r["wall_s"]))
        d["rss"].append(int(r["maxrss_kb"]) if r["maxrss_kb"].isdigit() else 0)
        d["exit"].append(int(r["exit"]))
        d["bytes"].append(int(r["bytes"]))
        if r.get("user_s") and r.get("sys_s"):
            d["cpu"].append(float(r["user_s"]) + float(r["sys_s"]))
    n = max(len(d["wall"]) for d in data.values())
    size = max(max(d["bytes"]) for d in data.values() if d["bytes"])
    doc(f"## 2. Large download ({size / MIB:.0f} MiB from nginx, sendfile, page cache warm)")
    doc()
    doc(f"{n} timed runs per tool and variant (after one warm-up pair), alternating retry-http/curl "
        f"(the order swaps every pair). `sync` and removal of the output file before each run, "
        f"outside the timed region. Wall time is the whole command (pipeline included) from bash's "
        f"EPOCHREALTIME; peak RSS and CPU time are `/usr/bin/time -f '%M %U %S'` of the client "
        f"alone (medians).")
    doc()
    names = {"file": "-o FILE", "pipe": "stdout piped to wc -c (retry-http default: spooled)",
             "pipe-nobuf": "stdout piped to wc -c (retry-http --no-buffer)",
             "devnull": "-o /dev/null (nothing spooled)"}
    targets = {"file": 1.0, "pipe": 2.5, "pipe-nobuf": 1.1, "devnull": None}
    tab = []
    for v in ("file", "pipe", "pipe-nobuf", "devnull"):
        if (v, "retry-http") not in data or (v, "curl") not in data:
            continue
        r, c = data[(v, "retry-http")], data[(v, "curl")]
        ratio = med(r["wall"]) / med(c["wall"])
        ok_bytes = all(b == size for b in r["bytes"] + c["bytes"]) and \
            all(e == 0 for e in r["exit"] + c["exit"])
        tgt = targets[v]
        tab.append((names[v], f"{med(r['wall']):.3f}", spread(r["wall"]), f"{med(c['wall']):.3f}",
                    spread(c["wall"]), f"{ratio:.2f}x",
                    f"<= {tgt}x {verdict(ratio <= tgt)}" if tgt else "none (reported)",
                    f"{med(r['rss'])/1024:.1f} (max {max(r['rss'])/1024:.1f})",
                    f"{med(c['rss'])/1024:.1f} (max {max(c['rss'])/1024:.1f})",
                    f"{med(r['cpu']):.2f} / {med(c['cpu']):.2f}" if r["cpu"] and c["cpu"] else "n/a",
                    "yes" if ok_bytes else "NO"))
        doc.summary.append((f"2. {size / MIB:.0f} MiB, {names[v]}: wall median",
                            f"{med(r['wall']):.3f} s", f"{med(c['wall']):.3f} s", f"{ratio:.2f}x",
                            f"<= {tgt}x" if tgt else "none", verdict(ratio <= tgt) if tgt else "reported"))
        if v == "file":
            rss = max(r["rss"]) / 1024
            doc.summary.append((f"2. {size / MIB:.0f} MiB -o FILE: peak RSS (max of runs)",
                                f"{rss:.1f} MiB", f"{max(c['rss'])/1024:.1f} MiB", "", "<= 8 MiB",
                                verdict(rss <= 8)))
    doc.table(("variant", "retry-http median s", "retry-http spread s", "curl median s",
               "curl spread s", "ratio", "target", "retry-http RSS MiB", "curl RSS MiB",
               "CPU s (user+sys) retry-http / curl", "all complete, exit 0"), tab)
    sp = {}
    for tool in ("retry-http", "retry-http-N", "retry-http-devnull"):
        p = os.path.join(res, f"s2_spool_{tool}.json")
        if os.path.exists(p):
            sp[tool] = load_json(p)
            po = os.path.join(res, f"s2_spool_{tool}_out.json")
            sp[tool]["bytes_out"] = load_json(po)["bytes_out"] if os.path.exists(po) else None
    if sp:
        doc("Disk used in `$TMPDIR` by the stdout spool (a separate run; `benches/fdwatch.py` "
            "polls /proc/PID/fd every 5 ms and sums the allocated blocks of the process's files "
            "under $TMPDIR, unnamed ones included; `df delta` is the file system's used-space growth "
            "over the same time, which other writers disturb):")
        doc()
        t = []
        for tool, d in sp.items():
            label = {"retry-http": "retry-http URL, piped to wc -c (default)",
                     "retry-http-N": "retry-http --no-buffer URL, piped to wc -c",
                     "retry-http-devnull": "retry-http -o /dev/null URL"}[tool]
            t.append((label, f"{d['peak_bytes'] / MIB:.1f} MiB", f"{d['peak_size'] / MIB:.1f} MiB",
                      f"{d['df_used_delta_peak'] / MIB:.1f} MiB", d["samples"], d["bytes_out"]))
        doc.table(("run", "peak allocated", "peak file size", "df delta (peak)", "samples",
                   "bytes delivered"), t)
        d = sp.get("retry-http")
        if d:
            doc.summary.append(("2. spool disk used by default stdout mode", f"{d['peak_bytes'] / MIB:.0f} MiB in $TMPDIR",
                                "0 (streams)", "", "report", "reported"))
    cmd_block(doc, cmds, "2-file", "2-pipe", "2-nobuf", "2-devnull", "2-spool")


def section3(doc, res, cmds):
    srv_path = os.path.join(res, "s3_server.jsonl")
    if not os.path.exists(srv_path):
        return
    by_run = collections.defaultdict(list)
    for line in open(srv_path):
        if line.strip():
            d = json.loads(line)
            by_run[d["run"]].append(d)
    excess, excess_e, after_resp, client_gap, service, conn = [], [], [], [], [], []
    mism = []
    seeds = 0
    worst = None
    for path in sorted(glob.glob(os.path.join(res, "s3_client_*.jsonl"))):
        seed = path.rsplit("_", 1)[1].split(".")[0]
        att = []
        for line in open(path):
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if d.get("type") == "attempt":
                att.append(d)
        srv = sorted(by_run.get(seed, []), key=lambda d: d["arrive_ns"])
        if len(srv) != len(att):
            mism.append((seed, len(srv), len(att)))
            continue
        seeds += 1
        offs = [srv[k]["arrive_ns"] / 1e6 - att[k]["start_ms"] for k in range(len(att))]
        conn.extend(o - min(offs) for o in offs)
        for k in range(len(att) - 1):
            planned_ns = att[k]["wait_us"] * 1000
            gap = srv[k + 1]["arrive_ns"] - srv[k]["arrive_ns"]
            ex = (gap - planned_ns) / 1e6
            excess.append(ex)
            excess_e.append(ex - att[k]["elapsed_ms"])
            after_resp.append((srv[k + 1]["arrive_ns"] - srv[k]["sent_ns"] - planned_ns) / 1e6)
            client_gap.append(att[k + 1]["start_ms"] - att[k]["start_ms"] - att[k]["elapsed_ms"]
                              - att[k]["wait_us"] / 1000)
            service.append((srv[k]["sent_ns"] - srv[k]["arrive_ns"]) / 1e6)
            if worst is None or ex > worst[0]:
                worst = (ex, seed, k + 1, att[k]["wait_us"])
    doc("## 3. Wait precision (planned wait vs. what the server saw)")
    doc()
    doc(f"`benches/always503.py` (one thread, one connection at a time) answers 503 without "
        f"Retry-After and records `time.monotonic_ns()` when each request head has been read and "
        f"when the response has been sent. {seeds} seeds x 20 retries = {len(excess)} waits "
        f"(base 20 ms, cap 200 ms, full jitter). For retry k: `actual - planned` = (arrival of "
        f"attempt k+1 - arrival of attempt k) - wait_us of attempt k. This gap also holds attempt "
        f"k's own duration and the next connection's set-up; the other rows take those out in two "
        f"ways.")
    doc()
    if mism:
        doc(f"Seeds skipped because server and client counts differ: {mism}")
        doc()
    rows = []
    for label, xs in (
        ("actual - planned (arrival to arrival)", excess),
        ("actual - planned - client elapsed_ms of the attempt", excess_e),
        ("(next arrival - response sent) - planned", after_resp),
        ("client's own view: start gap - elapsed_ms - wait (ms resolution)", client_gap),
        ("request arrival after the attempt began, above the run's minimum (±1: start_ms is whole ms)", conn),
        ("server service time of one attempt (arrival to response sent)", service),
    ):
        neg = sum(1 for x in xs if x < 0)
        rows.append((label, f"{q(xs, 50):.3f}", f"{q(xs, 99):.3f}", f"{max(xs):.3f}",
                     f"{min(xs):.3f}", neg))
    doc.table(("quantity (ms)", "p50", "p99", "max", "min", "negative"), rows)
    if worst:
        doc(f"Largest overshoot: {worst[0]:.3f} ms, seed {worst[1]}, after attempt {worst[2]} "
            f"(planned {worst[3]} us).")
        doc()
    p99 = q(excess, 99)
    neg = sum(1 for x in after_resp if x < 0)
    doc.summary.append(("3. wait overshoot p99 (actual - planned)", f"{p99:.2f} ms "
                        f"(p50 {q(excess, 50):.2f}, max {max(excess):.2f})", "", "", "<= 5 ms",
                        verdict(p99 <= 5)))
    doc.summary.append(("3. waits shorter than planned", f"{neg} of {len(after_resp)} "
                        f"(min {min(after_resp):.3f} ms after response)", "", "", "never",
                        verdict(neg == 0)))
    cmd_block(doc, cmds, "3")


def section4(doc, res, cmds):
    rows = read_tsv(os.path.join(res, "s4.tsv"))
    if not rows:
        return
    data = collections.defaultdict(lambda: {"wall": [], "exit": []})
    for r in rows:
        data[r["tool"]]["wall"].append(float(r["wall_s"]))
        data[r["tool"]]["exit"].append(int(r["exit"]))
    doc("## 4. Deadline against a server that accepts and never answers")
    doc()
    doc("`benches/hang.py` accepts and holds every connection. Runs alternate retry-http / curl; "
        "curl's runs are capped with timeout(1) (exit 124 = killed by the cap).")
    doc()
    labels = {
        "retry-http": "retry-http -s --deadline 1s",
        "curl-maxtime": "curl --retry 5 --retry-max-time 1 --max-time 1",
        "curl-no-maxtime": "curl --retry 5 --retry-max-time 1 (no --max-time)",
    }
    t = []
    for k, label in labels.items():
        d = data.get(k)
        if not d:
            continue
        t.append((label, len(d["wall"]), f"{med(d['wall']):.3f}", spread(d["wall"]),
                  f"{med(d['wall']) - 1:+.3f}", dict(collections.Counter(d["exit"]))))
    doc.table(("command", "runs", "median s", "spread s", "over 1 s (median)", "exit codes"), t)
    r = data.get("retry-http")
    c = data.get("curl-maxtime")
    cn = data.get("curl-no-maxtime")
    if r:
        doc.summary.append(("4. --deadline 1s vs hung server, wall (max of runs)",
                            f"{max(r['wall']):.3f} s (median {med(r['wall']):.3f})",
                            f"{med(c['wall']):.3f} s with --max-time 1; "
                            f"{'killed at ' + format(max(cn['wall']), '.1f') + ' s cap' if cn and 124 in cn['exit'] else (format(max(cn['wall']), '.1f') + ' s' if cn else 'n/a')} without" if c else "",
                            "", "<= 1.05 s", verdict(max(r["wall"]) <= 1.05)))
    cmd_block(doc, cmds, "4-retry-http", "4-curl-maxtime", "4-curl")


def section5(doc, res, cmds):
    rows = read_tsv(os.path.join(res, "s5.tsv"))
    if not rows:
        return
    doc("## 5. Binary size per release-profile setting")
    doc()
    doc("Each row adds one setting to the row before, built from scratch into its own "
        "CARGO_TARGET_DIR with CARGO_PROFILE_RELEASE_* overrides (`cargo build --release --locked "
        "--bin retry-http`). The last row is the profile in Cargo.toml. Build time is wall time on "
        "this machine (2 cores, shared; a kept target dir makes a re-run only relink).")
    doc()
    t = []
    prev = None
    for r in rows:
        b = int(r["bytes"])
        delta = "" if prev is None else f"{(b - prev) / MIB:+.2f} MiB ({(b - prev) / prev * 100:+.0f}%)"
        t.append((r["variant"], r["opt"], r["lto"], r["cgu"], r["strip"], r["panic"], b,
                  f"{b / MIB:.2f}", delta, f"{float(r['build_s']):.0f}"))
        prev = b
    doc.table(("variant", "opt-level", "lto", "codegen-units", "strip", "panic", "bytes", "MiB",
               "what it bought", "build s"), t)
    final = int(rows[-1]["bytes"])
    doc.summary.append(("5. stripped release binary", f"{final / MIB:.2f} MiB ({final} bytes)", "",
                        "", "<= 2.5 MiB", verdict(final / MIB <= 2.5)))
    keys = [k for k in cmds if k.startswith("5-")]
    cmd_block(doc, cmds, *keys)


def section6(doc, res, cmds):
    runs = collections.defaultdict(list)
    for path in sorted(glob.glob(os.path.join(res, "s6_*_*.json"))):
        base = os.path.basename(path)
        if base.startswith("s6_model") or base.startswith("s6_diag"):
            continue
        d = load_json(path)
        runs[d.get("mode")].append(d)
    if not runs:
        return
    model = {d["strategy"]: d for d in load_json(os.path.join(res, "s6_model.json"))}
    seeds = collections.defaultdict(list)
    for line in open(os.path.join(res, "s6_model_seeds.jsonl")):
        if line.strip():
            for d in json.loads(line):
                seeds[d["strategy"]].append(d)
    strat = {"full": "full", "equal": "equal", "decorrelated": "decorrelated", "none": "exponential"}
    n = next(iter(runs.values()))[0]["clients_expected"]
    doc(f"## 6. Retry storm with real processes ({n} clients)")
    doc()
    doc(f"`benches/storm_server.py` holds the first wave until all {n} clients have sent a request, "
        f"fails them all at one instant T0 (503), stays down 600 ms, then serves 24 requests per "
        f"100 ms window (first come first served, windows from T0 + 600 ms) and rejects the rest "
        f"with 503. Each run launches {n} `retry-http --attempts 8 --base 100ms --cap 8s --jitter "
        f"MODE -s -o /dev/null` processes at once from bash. Times are relative to T0; the model "
        f"(`retry-http simulate`, same scenario) has every client fail at t = 0. Model = mean of "
        f"`--runs 20`; model range = min–max of 20 single-seed runs (seeds 1–20), to show how much "
        f"one run varies by chance.")
    doc()
    t = []
    for mode in ("full", "equal", "decorrelated", "none"):
        rs = runs.get(mode)
        if not rs:
            continue
        m = model[strat[mode]]
        sd = seeds[strat[mode]]
        served = [r["served_pct"] for r in rs]
        reqs = [r["total_requests"] for r in rs]
        last = [r["last_success_s"] for r in rs if r["last_success_s"] is not None]
        d_req = (med(reqs) - m["calls"]) / m["calls"] * 100
        d_last = (med(last) - m["last_success_s"]) / m["last_success_s"] * 100
        lo_c, hi_c = min(s["calls"] for s in sd), max(s["calls"] for s in sd)
        lo_l, hi_l = min(s["last_success_s"] for s in sd), max(s["last_success_s"] for s in sd)
        ok = abs(d_req) <= 15 and abs(d_last) <= 15
        t.append((
            f"{mode}" + (" (model: exponential)" if mode == "none" else ""), len(rs),
            f"{med(served):.1f} ({', '.join(f'{x:.1f}' for x in served)})",
            f"{m['served_pct']:.1f} ({min(s['served_pct'] for s in sd):.1f}–{max(s['served_pct'] for s in sd):.1f})",
            f"{med(reqs):.0f} ({', '.join(str(x) for x in reqs)})",
            f"{m['calls']:.0f} ({lo_c:.0f}–{hi_c:.0f})", f"{d_req:+.1f}%",
            f"{med(last):.2f} ({', '.join(f'{x:.2f}' for x in last)})",
            f"{m['last_success_s']:.2f} (median {med([s['last_success_s'] for s in sd]):.2f}, "
            f"{lo_l:.2f}–{hi_l:.2f})", f"{d_last:+.1f}%",
            verdict(ok)))
        doc.summary.append((f"6. storm, jitter {mode}: requests / last success vs model",
                            f"{med(reqs):.0f} / {med(last):.2f} s", "",
                            f"{d_req:+.1f}% / {d_last:+.1f}%", "within ±15%", verdict(ok)))
    doc.table(("mode", "runs", "served % (runs)", "model served % (range)", "requests (runs)",
               "model requests (range)", "Δ requests", "last success s (runs)",
               "model last success s (single-seed median, range)", "Δ last success",
               "within 15%"), t)
    doc("Δ = (median of the real runs − model mean) / model mean. Last success is the maximum "
        "over 200 clients, so one run varies a lot by chance (see the model's own range); the "
        "number of requests is far more stable.")
    doc()
    aux = []
    for mode in ("full", "equal", "decorrelated", "none", "curl"):
        for r in runs.get(mode, []):
            aux.append((mode, r["run"], f"{r['launch_s']:.2f}", f"{r['hold_s']:.2f}",
                        f"{r['release_spread_ms']:.1f}", f"{r['peak_load']:.2f}",
                        r["max_requests_per_client"], r["requests_after_served"],
                        r["outcomes"], r["exit_codes"], f"{r['clients_done_s']:.1f}"))
    doc("Per run: launch = time bash took to fork all clients; hold = first request to release "
        "(start-up spread of the processes); release spread = time the server took to write all "
        "first-wave 503s; peak load = most arrivals in one window after the outage / capacity.")
    doc()
    doc.table(("mode", "run", "launch s", "hold s", "release spread ms", "peak load",
               "max req/client", "req after served", "outcomes", "exit codes", "all done s"), aux)
    if runs.get("curl"):
        c = runs["curl"][0]
        mc = load_json(os.path.join(res, "s6_model_curl.json"))[0]
        doc(f"curl, {n} processes `curl -s -o FILE --retry 7 --retry-max-time 40` once: served "
            f"{c['served_pct']:.1f}%, {c['total_requests']} requests, last success "
            f"{c['last_success_s'] and round(c['last_success_s'], 2)} s, all clients done after "
            f"{c['clients_done_s']:.1f} s (exit codes {c['exit_codes']}). Model of the same schedule "
            f"(simulate --strategies exponential --base 1s --cap 600s --attempts 8 --deadline 40s): "
            f"served {mc['served_pct']:.1f}%, {mc['calls']:.0f} requests, last success "
            f"{mc['last_success_s']} s.")
        doc()
        arr = cluster_lag(os.path.join(res, "s6_curl_1.requests.jsonl"),
                          [0, 1000, 3000, 7000, 15000, 31000, 63000, 127000])
        if arr:
            doc("curl's request k arrived (ms after T0; nominal = sum of curl's 1 s, 2 s, 4 s ... waits):")
            doc()
            doc.table(("request", "n", "nominal", "first", "median", "last", "median lag"), arr)
        doc.summary.append(("6. storm, curl --retry 7 (200 processes)",
                            "", f"{c['served_pct']:.0f}% served, {c['total_requests']} req, last "
                            f"{c['last_success_s'] and round(c['last_success_s'], 1)} s", "", "report", "reported"))
    diag(doc, res)
    cmd_block(doc, cmds, "6-model", "6-server", "6-clients", "6-diag", "6-curl")


def cluster_lag(req_path, nominal):
    if not os.path.exists(req_path):
        return []
    by = collections.defaultdict(list)
    for line in open(req_path):
        d = json.loads(line)
        by[d["client"]].append(d["t_ns"] / 1e6)
    rows = []
    for k in range(1, len(nominal)):
        xs = sorted(v[k] for v in ((sorted(v)) for v in by.values()) if len(v) > k)
        if not xs:
            break
        rows.append((k + 1, len(xs), nominal[k], f"{xs[0]:.1f}", f"{med(xs):.1f}", f"{xs[-1]:.1f}",
                     f"{med(xs) - nominal[k]:+.1f}"))
    return rows


def diag(doc, res):
    req = os.path.join(res, "s6_diag_none_1.requests.jsonl")
    cl = os.path.join(res, "s6_diag_none_1.clients.jsonl")
    if not (os.path.exists(req) and os.path.exists(cl)):
        return
    s = load_json(os.path.join(res, "s6_diag_none_1.json"))
    doc("### Diagnosis: where real processes leave the model (jitter none, JSON logs)")
    doc()
    doc(f"One more `--jitter none` storm with `--log-format json` per client (served "
        f"{s['served_pct']:.1f}%, {s['total_requests']} requests, last success "
        f"{s['last_success_s'] and round(s['last_success_s'], 2)} s). With no jitter every client "
        f"plans the same waits, so the model has all of them arrive together at 0, 100, 300, 700, "
        f"1500, 3100, 6300, 12700 ms. Server side: when request k arrived. Client side (from the "
        f"log; ms resolution): how long attempt k took (`elapsed_ms`: connect, send, server, read) "
        f"and how much later than `end of attempt + wait` attempt k+1 began (sleep overshoot).")
    doc()
    nominal = [0, 100, 300, 700, 1500, 3100, 6300, 12700]
    srv = {r[0]: r for r in cluster_lag(req, nominal)}
    att = collections.defaultdict(list)
    for line in open(cl):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if d.get("type") == "attempt":
            att[d["client"]].append(d)
    el = collections.defaultdict(list)
    over = collections.defaultdict(list)
    for a in att.values():
        a.sort(key=lambda d: d["attempt"])
        for i, d in enumerate(a):
            el[d["attempt"]].append(d["elapsed_ms"])
            if i + 1 < len(a) and d["wait_us"] is not None:
                over[d["attempt"] + 1].append(a[i + 1]["start_ms"] - d["start_ms"] - d["elapsed_ms"]
                                              - d["wait_us"] / 1000)
    rows = []
    for k in range(2, 9):
        sr = srv.get(k)
        if not sr:
            continue
        e = el.get(k, [])
        o = over.get(k, [])
        rows.append((k, sr[1], nominal[k - 1], sr[3], sr[4], sr[5], sr[6],
                     f"{med(e):.0f} / {max(e) if e else 'n/a'}",
                     f"{med(o):.1f} / {max(o):.1f}" if o else "n/a"))
    doc.table(("attempt", "n", "model ms", "first arrival", "median arrival", "last arrival",
               "median lag", "attempt elapsed_ms med / max", "sleep overshoot ms med / max"), rows)
    e1 = el.get(1, [])
    if e1:
        doc(f"Attempt 1's elapsed_ms is the hold (median {med(e1):.0f} ms). Release spread "
            f"{s['release_spread_ms']:.1f} ms, hold {s['hold_s']:.2f} s.")
        doc()
    lag_tables(doc, res)


def lag_tables(doc, res):
    """Per-retry lag: the server's arrival gap minus the wait the client planned."""
    names = [n for n in ("none", "decorrelated")
             if os.path.exists(os.path.join(res, f"s6_diag_{n}_1.clients.jsonl"))]
    if not names:
        return
    doc("Lag per retry, joining each client's JSON log with the server's arrivals: lag of retry k "
        "= (arrival of request k+1 − arrival of request k) − the wait_us the client planned after "
        "attempt k (for k = 1, from the release instant T0 instead of the held arrival). This is "
        "everything real processes add to the model's waits: the attempt's own duration, the "
        "sleep's overshoot, the next process wake-up and connection, the server's queue. "
        "`cumulative` = the sum over a client's retries up to its success, i.e. how much later a "
        "client is served than the model would have it with the same draws.")
    doc()
    rows = []
    for name in names:
        s = load_json(os.path.join(res, f"s6_diag_{name}_1.json"))
        arr = collections.defaultdict(list)
        for line in open(os.path.join(res, f"s6_diag_{name}_1.requests.jsonl")):
            d = json.loads(line)
            arr[d["client"]].append((d["t_ns"] / 1e6, d["outcome"]))
        att = collections.defaultdict(list)
        for line in open(os.path.join(res, f"s6_diag_{name}_1.clients.jsonl")):
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if d.get("type") == "attempt":
                att[d["client"]].append(d)
        per_k = collections.defaultdict(list)
        cum_served = []
        last_client = None
        for c, a in att.items():
            a.sort(key=lambda d: d["attempt"])
            ts = sorted(arr.get(c, []))
            if len(ts) != len(a):
                continue
            cum = 0.0
            for k in range(len(a) - 1):
                start = 0.0 if k == 0 else ts[k][0]
                lag = ts[k + 1][0] - start - a[k]["wait_us"] / 1000
                per_k[k + 1].append(lag)
                cum += lag
            if ts[-1][1] == 200:
                cum_served.append(cum)
                if last_client is None or ts[-1][0] > last_client[0]:
                    last_client = (ts[-1][0], cum, len(a))
        allk = [x for xs in per_k.values() for x in xs]
        ks = sorted(per_k)
        rows.append((name, f"{s['served_pct']:.1f}% / {s['total_requests']} / "
                     f"{s['last_success_s'] and round(s['last_success_s'], 2)} s",
                     " · ".join(f"{k}: {med(per_k[k]):.0f}" for k in ks),
                     f"{med(allk):.1f} / {q(allk, 90):.1f} / {max(allk):.1f}",
                     f"{med(cum_served):.0f} / {max(cum_served):.0f}" if cum_served else "n/a",
                     f"{last_client[1]:.0f} ms over {last_client[2] - 1} retries "
                     f"(served at {last_client[0] / 1000:.2f} s)" if last_client else "n/a"))
    doc.table(("jitter", "run: served / requests / last success", "median lag ms by retry k",
               "lag ms p50 / p90 / max (all retries)", "cumulative lag ms of served clients, "
               "median / max", "last-served client"), rows)


# --------------------------------------------------------------------- main ---
def main():
    res, out = sys.argv[1], sys.argv[2]
    cmds = commands(res)
    env = open(os.path.join(res, "env.txt")).read() if os.path.exists(os.path.join(res, "env.txt")) else ""
    body = Doc()
    section1(body, res, cmds)
    section2(body, res, cmds)
    section3(body, res, cmds)
    section4(body, res, cmds)
    section6(body, res, cmds)
    section5(body, res, cmds)

    doc = Doc()
    mode = "quick" if "mode: quick" in env else "full"
    doc("# retry-http benchmark results")
    doc()
    doc(f"Generated by `bash benches/run.sh{' --quick' if mode == 'quick' else ''}` "
        f"({mode} run); raw data in `benches/{os.path.basename(os.path.normpath(res))}/`. "
        f"Re-running regenerates everything above the findings marker.")
    doc()
    doc("Sections 7 and 8, the cost of `--state` (a file, Redis) and a fleet of processes sharing "
        "one Redis, are in [RESULTS-state.md](RESULTS-state.md), written by the same harness "
        "(`bash benches/run.sh --only 7,8`).")
    doc()
    # The table beside the physical floor is benches/floor.sh's, kept as it last wrote it.
    if os.path.exists(out):
        old = open(out).read()
        if FLOOR[0] in old and FLOOR[1] in old:
            doc(old[old.index(FLOOR[0]):old.index(FLOOR[1]) + len(FLOOR[1])])
            doc()
    doc("## Machine, versions, date")
    doc()
    doc("```")
    doc(env.strip())
    doc("```")
    doc()
    doc("## Summary")
    doc()
    doc.table(("metric", "retry-http", "curl", "ratio / Δ", "target", "verdict"), body.summary)
    doc.parts.extend(body.parts)
    text = "\n".join(doc.parts).rstrip() + "\n"
    kept = ""
    if os.path.exists(out):
        old = open(out).read()
        if MARK in old:
            kept = old[old.index(MARK):]
    text += "\n" + (kept if kept else MARK + "\n")
    with open(out, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
