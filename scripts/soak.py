#!/usr/bin/env python3
"""Soak test: long `demo` jobs through yarn-submit (4 local processes x 2 threads) under BSP, SSP
and ESSP with random per-clock delays and jitter, while a chaos thread SIGSTOPs one random process
at random moments for random times shorter than the peer timeout, then SIGCONTs it.

The demo checks the consistency guarantee on every read, so a violation fails the job. Its rows
are 64 columns wide, reused every 64 clocks (`--window 64`), so work and memory per clock stay
constant however long the run: growing memory is a leak, not the demo. A run
passes if the job succeeds within its time limit (no hang), completes every clock, and each
process's resident memory is flat (the median of the last fifth of the samples within 10% or
8 MB of the median of the second fifth, after start-up). Samples go to <out>.csv, the summary to
<out>.json, and a plot of RSS over time (if matplotlib is available) to <out>.png.

usage: soak.py [--clocks N] [--modes bsp,ssp,essp] [--out results/soak]
"""
import argparse
import csv
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "target" / "release"


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def run_mode(mode, args, rng, samples, events):
    job = Path(tempfile.mkdtemp(prefix=f"ps-soak-{mode}-"))
    conf = job.parent / f"{job.name}-conf.json"
    conf.write_text(json.dumps({"peer_timeout_ms": args.peer_timeout_ms, "heartbeat_ms": 500}))
    stats = job.parent / f"{job.name}-stats.json"
    cmd = [str(BIN / "yarn-submit"), "--master", "local[4]", "--threads", "2", "--consistency", mode,
           "--staleness", "2", "--properties-file", str(conf), "--job-dir", str(job), "--stats", str(stats),
           "demo", "--clocks", str(args.clocks), "--delay-ms", "1", "--jitter-ms", "4", "--skew-ms", "1",
           "--shared-rows", "8", "--window", "64", "--seed", str(rng.randrange(1 << 30)), "--barrier-every", "100"]
    env = dict(os.environ, PS_RUNTIME_BIN=str(BIN / "ps-runtime"))
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    pids, log, done = {}, [], threading.Event()

    def reader():
        for line in p.stdout:
            log.append(line.rstrip())
            m = re.search(r"process (\d+) started \(pid (\d+)\)", line)
            if m:
                pids[int(m.group(1))] = int(m.group(2))

    def sampler():
        while not done.is_set():
            now = time.monotonic() - t0
            for k, pid in list(pids.items()):
                kb = rss_kb(pid)
                if kb is not None:
                    samples.append((mode, round(now, 2), k, kb))
            done.wait(0.5)

    def chaos():
        stops = 0
        while not done.wait(rng.uniform(1.0, 4.0)):
            if len(pids) < 4:
                continue
            k = rng.randrange(4)
            pause = rng.uniform(0.2, args.peer_timeout_ms / 1000 * 0.6)
            try:
                os.kill(pids[k], signal.SIGSTOP)
            except OSError:
                return
            events.append((mode, round(time.monotonic() - t0, 2), k, round(pause, 2)))
            done.wait(pause)
            try:
                os.kill(pids[k], signal.SIGCONT)
            except OSError:
                return
            stops += 1

    threads = [threading.Thread(target=f, daemon=True) for f in (reader, sampler, chaos)]
    for t in threads:
        t.start()
    try:
        rc = p.wait(timeout=args.limit_s)
        hung = False
    except subprocess.TimeoutExpired:
        p.kill()
        rc, hung = p.wait(), True
    done.set()
    # A stopped process must not stay stopped after the job (it would never exit).
    for pid in pids.values():
        try:
            os.kill(pid, signal.SIGCONT)
        except OSError:
            pass
    threads[0].join(timeout=10)
    wall = time.monotonic() - t0
    st = json.loads(stats.read_text()) if stats.exists() else {}
    result = {"mode": mode, "exit_code": rc, "hung": hung, "wall_s": round(wall, 1), "clocks": st.get("clocks"),
              "checks": st.get("checks"), "stops": sum(1 for e in events if e[0] == mode),
              "stopped_s": round(sum(e[3] for e in events if e[0] == mode), 1),
              "log_tail": log[-8:] if rc != 0 else []}
    return result


def flatness(mode, samples):
    """Per process: (median RSS of the 2nd fifth, of the last fifth) in MB, and whether flat."""
    out = {}
    for k in range(4):
        v = [kb for (m, _, p, kb) in samples if m == mode and p == k]
        if len(v) < 10:
            out[k] = {"samples": len(v), "flat": False}
            continue
        n = len(v)
        early = sorted(v[n // 5: 2 * n // 5])
        late = sorted(v[4 * n // 5:])
        a, b = early[len(early) // 2] / 1024, late[len(late) // 2] / 1024
        out[k] = {"samples": n, "early_mb": round(a, 1), "late_mb": round(b, 1), "peak_mb": round(max(v) / 1024, 1),
                  "flat": b <= a * 1.10 or b - a <= 8}
    return out


def plot(samples, events, modes, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not available: no plot", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, len(modes), figsize=(5 * len(modes), 3.6), sharey=True)
    for ax, mode in zip(axes if len(modes) > 1 else [axes], modes):
        for k in range(4):
            pts = [(t, kb / 1024) for (m, t, p, kb) in samples if m == mode and p == k]
            ax.plot([x for x, _ in pts], [y for _, y in pts], label=f"process {k}", lw=1)
        for (m, t, k, d) in events:
            if m == mode:
                ax.axvspan(t, t + d, color="grey", alpha=0.15, lw=0)
        ax.set_title(f"{mode.upper()}: RSS (grey: a process stopped)")
        ax.set_xlabel("seconds")
        ax.grid(alpha=0.3)
    (axes[0] if len(modes) > 1 else axes).set_ylabel("resident MB")
    (axes[0] if len(modes) > 1 else axes).legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clocks", type=int, default=5000)
    ap.add_argument("--modes", default="bsp,ssp,essp")
    ap.add_argument("--peer-timeout-ms", type=int, default=8000)
    ap.add_argument("--limit-s", type=int, default=900, help="a run longer than this is a hang")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "results" / "soak"))
    args = ap.parse_args()
    rng = random.Random(args.seed)
    modes = args.modes.split(",")
    samples, events, results = [], [], []
    for mode in modes:
        r = run_mode(mode, args, rng, samples, events)
        r["rss"] = flatness(mode, samples)
        r["ok"] = (r["exit_code"] == 0 and not r["hung"] and r["clocks"] == args.clocks
                   and all(v["flat"] for v in r["rss"].values()))
        results.append(r)
        print(f"{mode}: {'ok' if r['ok'] else 'FAILED'} in {r['wall_s']} s, {r['clocks']} clocks, "
              f"{r['checks']} checks, {r['stops']} stops ({r['stopped_s']} s stopped), RSS MB "
              + ", ".join(f"p{k} {v.get('early_mb')}->{v.get('late_mb')}" for k, v in r["rss"].items()))
        for line in r["log_tail"]:
            print("   ", line)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{out}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mode", "t_s", "process", "rss_kb"])
        w.writerows(samples)
    summary = {"command": "yarn-submit --master local[4] --threads 2 --consistency MODE --staleness 2 "
               f"demo --clocks {args.clocks} --delay-ms 1 --jitter-ms 4 --skew-ms 1 --shared-rows 8 --window 64 --barrier-every 100",
               "peer_timeout_ms": args.peer_timeout_ms, "stops": events, "runs": results}
    Path(f"{out}.json").write_text(json.dumps(summary, indent=1))
    plot(samples, events, modes, f"{out}.png")
    print(f"results: {out}.csv, {out}.json, {out}.png")
    sys.exit(0 if all(r["ok"] for r in results) else 1)


if __name__ == "__main__":
    main()
