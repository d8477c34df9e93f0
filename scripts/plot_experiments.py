#!/usr/bin/env python3
"""Draws the experiment plots (PNG) from the CSVs that `ps-bench experiment` writes.
usage: plot_experiments.py [RESULTS_DIR]   (default results/experiments; needs matplotlib)"""
import csv
import math
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

D = Path(sys.argv[1] if len(sys.argv) > 1 else "results/experiments")


def rows(name):
    with open(D / f"{name}.csv") as f:
        return list(csv.DictReader(f))


def num(x):
    try:
        v = float(x)
        return v if math.isfinite(v) else None
    except ValueError:
        return None


def save(fig, name):
    fig.tight_layout()
    fig.savefig(D / f"{name}.png", dpi=110)
    plt.close(fig)
    print("wrote", D / f"{name}.png")


def staleness():
    r = rows("staleness")
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    ab = [x for x in r if x["model"] == "A-BSP"]
    ss = [x for x in r if x["model"] == "SSP"]
    for ax, data, key, label in [(a, ab, "wpc", "work per clock (passes), A-BSP"), (b, ss, "slack", "slack (clocks), SSP, wpc = 1/4")]:
        xs = [num(x[key]) for x in data]
        t = [num(x["time_to_target_s"]) for x in data]
        ax.plot([x for x, y in zip(xs, t) if y is not None], [y for y in t if y is not None], "o-")
        for x, y in zip(xs, t):
            if y is None:
                ax.annotate("diverged / not reached", (x, 0), rotation=90, fontsize=7, va="bottom")
        ax.set_xlabel(label)
        ax.set_ylabel("time to target training RMSE (s)")
        ax.set_ylim(bottom=0)
        if key == "wpc":
            ax.set_xscale("log", base=2)
    fig.suptitle("Staleness sweet spot: MF on MovieLens-100K")
    save(fig, "staleness")


def stragglers(out="stragglers", title="Delayed-thread stragglers (4 processes)", ideal="ideal (d/N)",
               xlabel="delay d per clock of the delayed process (s)"):
    r = rows(out)
    fig, ax = plt.subplots(figsize=(6, 4))
    by = defaultdict(list)
    for x in r:
        by[x["config"]].append((num(x["delay_s"]), num(x["pass_s"]), num(x["ideal_pass_s"])))
    for name, pts in by.items():
        pts = [p for p in pts if p[1] is not None]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=name)
    bsp = [p for p in by.get("BSP", []) if p[2] is not None]
    ax.plot([p[0] for p in bsp], [p[2] for p in bsp], "k--", label=ideal)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("mean time per pass (s)")
    ax.legend()
    ax.set_title(title)
    save(fig, out)


def background():
    stragglers("background", "Background disruptions: each process, 10% of clocks", "ideal (0.1 d)",
               "delay d of a disrupted clock (s)")


def bytes_():
    r = rows("bytes")
    fig, ax = plt.subplots(figsize=(6, 4))
    names = [x["config"] for x in r]
    sent = [(num(x["bytes_sent_per_pass"]) or 0) / 1e6 for x in r]
    recv = [(num(x["bytes_recv_per_pass"]) or 0) / 1e6 for x in r]
    xs = range(len(names))
    ax.bar([i - 0.2 for i in xs], sent, 0.4, label="sent")
    ax.bar([i + 0.2 for i in xs], recv, 0.4, label="received")
    ax.set_xticks(list(xs), names)
    ax.set_ylabel("MB per process per pass")
    ax.legend()
    ax.set_title("Communication per pass (same staleness bound of 3 passes)")
    save(fig, "bytes")


def prefetch():
    r = rows("prefetch")
    fig, ax = plt.subplots(figsize=(6, 4))
    names = [x["prefetch"] for x in r]
    comp = [num(x["compute_s_per_pass"]) or 0 for x in r]
    wait = [num(x["wait_s_per_pass"]) or 0 for x in r]
    ax.bar(names, comp, label="compute")
    ax.bar(names, wait, bottom=comp, label="wait")
    ax.set_ylabel("seconds per pass per worker")
    ax.legend()
    ax.set_title("Prefetching: compute vs wait (SSP s=1)")
    save(fig, "prefetch")


def bars(ax, pts_by_model, xlabel, title):
    for model, off in [("SSP", -0.2), ("ESSP", 0.2)]:
        pts = pts_by_model(model)
        total = sum(c for _, c in pts) or 1
        ax.bar([k + off for k, _ in pts], [c / total for _, c in pts], 0.4, label=model)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of reads")
    ax.legend()
    ax.set_title(title)


def essp():
    h = rows("essp_staleness_hist")
    prof = rows("essp_staleness_profile")
    r = rows("essp_robustness")
    fig, (a, lag, ahead, b) = plt.subplots(1, 4, figsize=(20, 4))
    bars(a, lambda m: [(int(x["staleness"]), int(x["count"])) for x in h if x["model"] == m],
         "observed staleness (data age - reader clock)", "Staleness, s = 3 (rank 100, 1% per clock)")
    for ax, measure, xlabel in [
        (lag, "delivery_lag", "delivery lag (freshest servable age - age read)"),
        (ahead, "ahead_of_slowest", "reader's lead over the slowest worker (clocks)"),
    ]:
        bars(ax, lambda m: [(int(x["value"]), int(x["count"])) for x in prof
                            if x["model"] == m and x["measure"] == measure], xlabel, measure.replace("_", " "))
    for model in ["SSP", "ESSP"]:
        pts = [(num(x["slack"]), num(x["final_rmse"])) for x in r if x["model"] == model]
        pts = [p for p in pts if p[1] is not None]
        b.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=model)
    b.set_xlabel("slack s")
    b.set_ylabel("training RMSE after 12 passes")
    b.legend()
    b.set_title("MF robustness to large staleness")
    save(fig, "essp")


for f in [staleness, stragglers, background, bytes_, prefetch, essp]:
    f()
