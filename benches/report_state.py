#!/usr/bin/env python3
"""Turns the raw results of sections 7 and 8 of benches/run.sh (the shared state) into
RESULTS-state.md.

    python3 benches/report_state.py RESULTS_DIR OUT.md

As with report.py, everything after the line `<!-- findings -->` in an existing OUT.md is
kept; the rest is regenerated from the raw files.
"""

import collections
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import MARK, Doc, cmd_block, commands, load_json, med, q  # noqa: E402

# Commands the harness itself sends (redis-cli), left out of the client's counts.
HARNESS = {"config|resetstat", "info", "flushall", "ping", "get_harness"}


def p10_90(xs, scale=1e3, fmt="{:.2f}"):
    if not xs:
        return "n/a"
    ys = [x * scale for x in xs]
    return (f"{fmt.format(q(ys, 10))}–{fmt.format(q(ys, 90))} "
            f"(min {fmt.format(min(ys))}, max {fmt.format(max(ys))})")


def commandstats(text):
    """{command: {calls, failed_calls, rejected_calls}} and the other counters of INFO."""
    cmds, other = {}, {}
    for item in text.replace("\t", " ").split():
        if ":" not in item:
            continue
        name, _, rest = item.partition(":")
        if name.startswith("cmdstat_"):
            d = {}
            for kv in rest.split(","):
                k, _, v = kv.partition("=")
                try:
                    d[k] = float(v)
                except ValueError:
                    pass
            cmds[name[len("cmdstat_"):]] = d
        else:
            try:
                other[name] = int(rest)
            except ValueError:
                pass
    return cmds, other


def trips(text):
    """What the clients asked of the server, from INFO after CONFIG RESETSTAT.

    The client sends every step as one EVAL: a read (a script answering TIME and the key's
    text) and each compare-and-set (a script that writes only if the key still holds what
    was read, else answers the current text and TIME). So round trips = EVAL calls, writes =
    the SET and DEL run inside the scripts, and the other round trips are reads and
    conflicts (a compare-and-set that found another run's write); with one run at a time
    there are no conflicts and they are all reads.
    """
    cmds, other = commandstats(text)
    c = lambda n, k="calls": int(cmds.get(n, {}).get(k, 0))  # noqa: E731
    e = c("eval") + c("evalsha")
    ef = (c("eval", "failed_calls") + c("eval", "rejected_calls")
          + c("evalsha", "failed_calls") + c("evalsha", "rejected_calls"))
    writes = c("set") + c("del")
    load = c("script|load")
    known = {"get", "time", "set", "del", "eval", "evalsha", "script|load"} | HARNESS
    extra = {k: c(k) for k in cmds if k not in known}
    return {
        "reads": e - writes, "evalsha": e, "noscript": ef, "script_load": load,
        "conflicts": "-", "writes": writes,
        "round_trips": e + load + sum(extra.values()),
        "other": extra,
        # one connection is redis-cli's own INFO
        "connections": other.get("total_connections_received", 0) - 1,
    }


def shape(line):
    """A client's line with its own durations taken out, so that the same message groups."""
    return re.sub(r"\b\d+(\.\d+)?(us|µs|ms|s)\b", "T", line)


def bucket_counts(path):
    """(successes, retries) in the budget buckets of a record as the store kept it."""
    if not os.path.exists(path):
        return None
    text = open(path).read().strip()
    if not text:
        return None
    try:
        rec = json.loads(text)
    except ValueError:
        return None
    t = rec.get("target", {})
    s = sum(b[1] for b in t.get("budget", []))
    r = sum(b[2] for b in t.get("budget", []))
    return s, r, t.get("breaker", {}), len(text)


# ------------------------------------------------------------------ section 7 ---
def section7(doc, res, cmds):
    path = os.path.join(res, "s7_alternate.json")
    if not os.path.exists(path):
        return
    alt = load_json(path)["results"]
    labels = ["(a) no --state", "(b) --state FILE on tmpfs (/dev/shm)",
              "(c) --state redis://127.0.0.1:PORT", "(d) --state redis+unix:///PATH"]
    rounds = len(alt[0]["times"])
    doc("## 7. The cost of the shared state: start-up + one small GET (1 KiB from nginx)")
    doc()
    doc(f"`benches/alternate.py` runs the four commands one after the other in each round, the "
        f"order reversed every other round (a, b, c, d, then d, c, b, a), {rounds} rounds after "
        f"warm-up rounds; wall = spawn to reap (posix_spawn from Python, the same for all four), "
        f"CPU = user + system time of the process (wait4). Every run is a success: with "
        f"`--state` it asks the store before the attempt (admit) and records the success after "
        f"it, two read-decide-write operations on the target's one record. The redis-server is "
        f"the harness's own (`--save '' --appendonly no`), on loopback TCP and a Unix socket; "
        f"the record exists (steady state, as for a cron job that ran before).")
    doc()
    base_w = med(alt[0]["times"])
    base_c = med(alt[0]["cpu_s"]) if alt[0].get("cpu_s") else None
    rows = []
    for lab, r in zip(labels, alt):
        w, c = r["times"], r.get("cpu_s", [])
        bad = sum(1 for x in r["exit_codes"] if x != 0)
        rows.append((lab, f"{med(w)*1e3:.2f}", p10_90(w), f"{med(w)/base_w:.2f}x",
                     f"{(med(w)-base_w)*1e3:+.2f}",
                     f"{med(c)*1e3:.2f}" if c else "n/a", p10_90(c) if c else "n/a",
                     f"{med(c)/base_c:.2f}x" if c and base_c else "n/a", bad))
    doc.table(("variant", "wall median ms", "wall p10–p90 ms", "wall vs (a)", "wall Δ ms",
               "CPU median ms", "CPU p10–p90 ms", "CPU vs (a)", "non-zero exits"), rows)
    doc.summary.append(("7. start-up + small GET, no state (a)", f"{base_w*1e3:.2f} ms", "", ""))
    for lab, r in zip(labels[1:], alt[1:]):
        doc.summary.append((f"7. start-up + small GET, {lab}", f"{med(r['times'])*1e3:.2f} ms",
                            f"{med(r['times'])/base_w:.2f}x", f"{(med(r['times'])-base_w)*1e3:+.2f} ms"))

    tp = os.path.join(res, "s7_trips.tsv")
    if os.path.exists(tp):
        by = collections.defaultdict(list)
        for line in open(tp):
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 3:
                by[parts[0]].append(trips(parts[2]))
        if by:
            doc("What one run asks of Redis, counted by the server (`CONFIG RESETSTAT`, one run, "
                "`INFO`), separate runs after the timed ones. Every step is one `EVAL`: a read (a "
                "script answering `TIME` and the key), or a compare-and-set (the `GET` and `SET` "
                "inside it are the server's, no round trip); a closed circuit's admission only "
                "reads. One run at a time: no conflicts.")
            doc()
            rows = []
            for v, lab in (("c", labels[2]), ("d", labels[3])):
                ts = by.get(v, [])
                if not ts:
                    continue
                f = lambda k: "/".join(sorted({str(t[k]) for t in ts}))  # noqa: E731
                rows.append((lab, len(ts), f("round_trips"), f("reads"), f("evalsha"),
                             f("script_load"), f("conflicts"), f("connections"),
                             ", ".join(sorted({f"{k}={n}" for t in ts for k, n in t["other"].items()})) or "none"))
            doc.table(("variant", "runs counted", "round trips per run", "reads and conflicts",
                       "EVAL", "SCRIPT LOAD", "conflicts", "connections", "other commands"),
                      rows)
    cp = os.path.join(res, "s7_redis_cpu.json")
    if os.path.exists(cp):
        d = load_json(cp)
        per = d["redis_cpu_s"] / d["store_runs"] * 1e6 if d["store_runs"] else 0
        doc(f"redis-server's own CPU time over the rounds (from /proc, 10 ms ticks; the warm-up "
            f"rounds and the server's own housekeeping included): {d['redis_cpu_s']:.2f} s for "
            f"{d['store_runs']} timed runs that used it (c and d), at most about {per:.0f} µs per "
            f"run.")
        doc()
    rec = bucket_counts(os.path.join(res, "s7_record.json"))
    if rec:
        doc(f"The target's record in Redis after the rounds: {rec[3]} bytes "
            f"({rec[0]} successes in the budget window's buckets).")
        doc()
    checks = []
    for v, lab in zip("abcd", labels):
        p = os.path.join(res, f"s7_check_{v}.txt")
        if os.path.exists(p):
            lines = [l.rstrip("\n") for l in open(p)]
            checks.append((lab, lines[0] if lines else "", "<br>".join(
                f"`{l}`" for l in lines[1:]) or "(nothing)"))
    if checks:
        doc("Each variant once without `-s` before the rounds (`-s` hides warnings), what it "
            "printed on stderr:")
        doc()
        doc.table(("variant", "exit", "stderr"), checks)
    cmd_block(doc, cmds, "7")


# ------------------------------------------------------------------ section 8 ---
# Section 8's modes, in the order they are shown.
MODES = ("budget", "budget-t2s", "warm-t2s", "unlimited", "nostate")


def allowed_by_rule(pct, floor, successes):
    """budget.rs: max(floor, floor(pct% of the successes in the window))."""
    return max(int(floor), int(successes * pct / 100.0))


def section8(doc, res, cmds):
    runs = collections.defaultdict(list)
    for path in sorted(glob.glob(os.path.join(res, "s8_*_*.json"))):
        if path.endswith(".record.json"):
            continue
        d = load_json(path)
        if "mode" not in d:
            continue
        name = os.path.basename(path)[:-len(".json")]
        d["name"] = name
        rec = bucket_counts(os.path.join(res, name + ".record.json"))
        d["record"] = rec
        rp = os.path.join(res, name + ".redis.txt")
        d["trips"] = trips(open(rp).read()) if os.path.exists(rp) and d["mode"] != "nostate" else None
        sp = os.path.join(res, name + ".stderr.txt")
        warn = collections.Counter()
        lines = collections.Counter()
        went_on = set()  # clients that gave up the store and went on without it
        at_admit = 0  # ... before their first attempt (the admission)
        attempted = set()
        if os.path.exists(sp):
            for line in open(sp):
                client, _, text = line.rstrip("\n").partition("\t")
                if "warning" in text:
                    warn[text] += 1
                if "going on without it" in text and client not in went_on:
                    went_on.add(client)
                    at_admit += client not in attempted
                if text.startswith("retry-http: attempt "):
                    attempted.add(client)
                if not text.startswith("retry-http: attempt "):
                    lines[shape(text)] += 1
        d["warnings"] = warn
        d["went_on"] = len(went_on)
        d["went_on_at_admit"] = at_admit
        d["final_lines"] = lines
        runs[d["mode"]].append(d)
    if not runs:
        return
    d0 = next(iter(runs.values()))[0]
    n = d0["clients_expected"]
    cfg = {m: (rs[0]["budget_pct"], rs[0]["budget_floor"]) for m, rs in runs.items()}
    pct, floor = cfg.get("budget", (10.0, 20))
    opct, ofloor = cfg.get("unlimited", (1000.0, 100000))
    warm = runs["warm-t2s"][0].get("seeded_successes", 0) if runs.get("warm-t2s") else 5 * n
    ex = sorted(glob.glob(os.path.join(res, "s8_warm-t2s_*.explain.txt")))
    explain = "; ".join(f"`{l.strip()}`" for l in open(ex[0]) if l.strip()) if ex else "not run"
    doc(f"## 8. A fleet sharing one Redis: {n} processes against the outage server")
    doc()
    doc(f"`benches/storm_server.py`, as in section 6: holds the first wave until all {n} clients "
        f"have sent a request, fails them all at one instant (503), stays down 600 ms, then serves "
        f"24 requests per 100 ms and rejects the rest with 503. Each run launches {n} `retry-http "
        f"--attempts 8 --base 100ms --cap 8s --jitter full -o /dev/null` processes at once, all "
        f"with the same `--state redis://127.0.0.1:PORT` (one redis-server, `FLUSHALL` and `CONFIG "
        f"RESETSTAT` before every run), breaker settings at their defaults. Modes, interleaved "
        f"run by run: **budget** `--retry-budget {pct:g}% --budget-floor {floor}` (window 10m "
        f"default); **unlimited** `--retry-budget {opct:g}% --budget-floor {ofloor}` (1000% is the "
        f"most the flag takes), a budget that never refuses here, so the store is used as in budget but grants every retry; **nostate**, "
        f"no `--state`; **budget-t2s**, as budget with `--state-timeout 2s` instead of the "
        f"default 250ms (a diagnostic: how much of what budget shows is the store timing out); "
        f"**warm-t2s**, as budget-t2s with the target's record first set to {warm} successes in "
        f"the window (as if every host had succeeded 5 times in the last 10 minutes), so that "
        f"10% of them earn retries beyond the floor (`retry-http --explain` before the run: "
        f"{explain}). Retries sent = requests the server received − {n} (every client's first "
        f"attempt). The budget's rule (crates/retry-http-policy/src/budget.rs): the retries allowed in the window are "
        f"max(floor, ⌊pct × successes in the window⌋); the successes and the retries taken are "
        f"read from the target's record in Redis after the run.")
    doc()
    rows = []
    for mode in MODES:
        for d in sorted(runs.get(mode, []), key=lambda d: d["run"]):
            retries = d["total_requests"] - d["clients_expected"]
            rec = d["record"]
            if mode == "nostate":
                succ, taken, allowed, within = "—", "—", "—", "—"
            elif rec:
                succ, taken = rec[0], rec[1]
                a = allowed_by_rule(d["budget_pct"], d["budget_floor"], succ)
                allowed = a
                within = ("yes" if retries <= a else "**NO**") + \
                    ("" if retries == taken else f" (sent {retries} ≠ taken {taken})")
            else:
                succ, taken, allowed, within = "no record", "?", "?", "?"
            t = d["trips"]
            br = rec[2] if rec else {}
            circuit = "—" if mode == "nostate" or not rec else \
                f"{'open' if br.get('opened_at') else 'closed'} ({br.get('failures')} failed)"
            rows.append((mode, d["run"], d["total_requests"], retries, d["served_clients"], succ,
                         taken, allowed, within, circuit,
                         ", ".join(f"{k}: {v}" for k, v in sorted(d["exit_codes"].items())),
                         f"{d['clients_done_s']:.2f}",
                         f"{d['last_success_s']:.2f}" if d.get("last_success_s") else "—",
                         f"{sum(d['warnings'].values())} / {d['went_on']} ({d['went_on_at_admit']})",
                         f"{t['round_trips']} / {t['writes']}" if t else "—",
                         f"{d['redis_cpu_s']:.2f}" if mode != "nostate" else "—"))
    doc.table(("mode", "run", "requests", "retries sent", "served", "successes in store",
               "retries taken (store)", "allowed by the rule", "sent ≤ allowed",
               "circuit after", "exit codes", "storm wall s", "last success s",
               "warning lines / clients that went on without the store (of them before attempt 1)",
               "store round trips / writes", "redis CPU s"), rows)
    doc("Storm wall = from the first launch to the last client reaped; last success is relative "
        "to the release of the first wave (T0). Circuit after = the breaker in the record after "
        "the run (default threshold 5: the runs are all admitted before the first wave fails, so "
        "it refuses no run of the storm itself, only the runs after it). Store round trips: "
        "counted as in section 7, over all the processes of the run; a conflict is one more "
        "compare-and-set because another process wrote the record between a read and a write.")
    doc()
    med_rows = []
    for mode in MODES:
        rs = runs.get(mode, [])
        if not rs:
            continue
        reqs = [d["total_requests"] for d in rs]
        ret = [d["total_requests"] - d["clients_expected"] for d in rs]
        wall = [d["clients_done_s"] for d in rs]
        served = [d["served_clients"] for d in rs]
        ex = collections.Counter()
        for d in rs:
            for k, v in d["exit_codes"].items():
                ex[k] += v
        tr = [d["trips"]["round_trips"] for d in rs if d["trips"]]
        med_rows.append((mode, len(rs), f"{med(reqs):.0f}", f"{med(ret):.0f}", f"{med(served):.0f}",
                         f"{med(wall):.2f}", ", ".join(f"{k}: {v}" for k, v in sorted(ex.items())),
                         f"{med(tr):.0f} ({med(tr) / n:.1f} per process)" if tr else "—"))
        doc.summary.append((f"8. fleet of {n}, {mode}: requests / retries / storm wall (median of {len(rs)})",
                            f"{med(reqs):.0f} / {med(ret):.0f} / {med(wall):.2f} s", "", ""))
    doc("Medians per mode (exit codes summed over the runs):")
    doc()
    doc.table(("mode", "runs", "requests", "retries sent", "served", "storm wall s",
               "exit codes (all runs)", "store round trips"), med_rows)
    warns = collections.Counter()
    finals = collections.Counter()
    for rs in runs.values():
        for d in rs:
            for k, v in d["warnings"].items():
                warns[(d["mode"], k)] += v
            for k, v in d["final_lines"].items():
                finals[(d["mode"], k)] += v
    if warns:
        doc("Warnings printed by the clients (exact text, count over all runs of the mode):")
        doc()
        doc.table(("mode", "count", "line"), [(m, c, f"`{t}`") for (m, t), c in warns.most_common()])
    else:
        doc("No client printed a warning in any run.")
        doc()
    if finals:
        doc("Other lines than the per-attempt ones (final lines and notes), by text with the "
            "durations replaced by T, the 12 most frequent:")
        doc()
        doc.table(("mode", "count", "line"),
                  [(m, c, f"`{t}`") for (m, t), c in finals.most_common(12)])
    cmd_block(doc, cmds, "8-server", "8-budget", "8-budget-t2s", "8-warm-t2s", "8-unlimited",
              "8-nostate")


# --------------------------------------------------------------------- main ---
def main():
    res, out = sys.argv[1], sys.argv[2]
    cmds = commands(res)
    envp = os.path.join(res, "env.txt")
    env = open(envp).read() if os.path.exists(envp) else ""
    body = Doc()
    section7(body, res, cmds)
    section8(body, res, cmds)
    doc = Doc()
    mode = "quick" if "mode: quick" in env else "full"
    doc("# retry-http benchmark results: the shared state (sections 7 and 8)")
    doc()
    doc(f"Generated by `bash benches/run.sh{' --quick' if mode == 'quick' else ''} --only 7,8` "
        f"({mode} run; a full `bash benches/run.sh` writes it too); raw data in "
        f"`benches/{os.path.basename(os.path.normpath(res))}/`. Sections 1–6 are in "
        f"[RESULTS.md](RESULTS.md). Re-running regenerates everything above the findings marker.")
    doc()
    doc("## Machine, versions, date")
    doc()
    doc("```")
    doc(env.strip())
    doc("```")
    doc()
    doc("## Summary")
    doc()
    doc.table(("figure", "value", "vs (a), no state", "Δ to (a)"), body.summary)
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
