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


APPS = {"mf": "MF, MovieLens-100K", "lda": "LDA, NYT", "pagerank": "PageRank, 1M-node graph"}
YLABEL = {"mf": "training RMSE", "lda": "log-likelihood per token", "pagerank": "L1 error vs exact ranks"}


def apps_in(r):
    seen = []
    for x in r:
        if x["app"] not in seen:
            seen.append(x["app"])
    return seen


def staleness():
    r = rows("staleness")
    apps = apps_in(r)
    fig, axes = plt.subplots(len(apps), 2, figsize=(10, 3.6 * len(apps)), squeeze=False)
    for (a, b), app in zip(axes, apps):
        mine = [x for x in r if x["app"] == app]
        ab = [x for x in mine if x["model"] == "A-BSP"]
        ss = [x for x in mine if x["model"] == "SSP"]
        wpc = ss[0]["wpc"] if ss else "1"
        for ax, data, key, label in [(a, ab, "wpc", "work per clock (passes), A-BSP"),
                                     (b, ss, "slack", f"slack (clocks), SSP, wpc = {wpc}")]:
            if not data:
                ax.text(0.5, 0.5, "one clock is one iteration:\nno A-BSP", ha="center", va="center",
                        transform=ax.transAxes)
                ax.set_axis_off()
                continue
            xs = [num(x[key]) for x in data]
            t = [num(x["time_to_target_s"]) for x in data]
            ax.plot([x for x, y in zip(xs, t) if y is not None], [y for y in t if y is not None], "o-")
            missed = [x for x, y in zip(xs, t) if y is None]
            if missed:
                ax.plot(missed, [0] * len(missed), "rx", label="target not reached")
                ax.legend(fontsize=7)
            ax.set_xlabel(label)
            ax.set_ylabel("time to target (s)")
            ax.set_ylim(bottom=0)
            ax.set_title(APPS.get(app, app))
            if key == "wpc":
                ax.set_xscale("log", base=2)
    fig.suptitle("Staleness sweet spot: time to a target objective")
    save(fig, "staleness")


def stragglers(out="stragglers", title="Delayed-thread stragglers (4 processes)", ideal="ideal (d/N)",
               xlabel="delay d per clock of the delayed process (s)"):
    r = rows(out)
    apps = apps_in(r)
    fig, axes = plt.subplots(1, len(apps), figsize=(5.5 * len(apps), 4), squeeze=False)
    for ax, app in zip(axes[0], apps):
        by = defaultdict(list)
        for x in r:
            if x["app"] == app:
                by[x["config"]].append((num(x["delay_s"]), num(x["pass_s"]), num(x["ideal_pass_s"])))
        for name, pts in by.items():
            pts = [p for p in pts if p[1] is not None]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=name)
        bsp = [p for p in by.get("BSP", []) if p[2] is not None]
        ax.plot([p[0] for p in bsp], [p[2] for p in bsp], "k--", label=ideal)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("mean time per pass (s)")
        ax.legend(fontsize=8)
        ax.set_title(APPS.get(app, app))
    fig.suptitle(title)
    save(fig, out)


def background():
    stragglers("background", "Background disruptions: each process, 10% of clocks", "ideal (0.1 d)",
               "delay d of a disrupted clock (s)")


def bytes_():
    r = rows("bytes")
    apps = apps_in(r)
    fig, axes = plt.subplots(1, len(apps), figsize=(5 * len(apps), 4), squeeze=False)
    for ax, app in zip(axes[0], apps):
        mine = [x for x in r if x["app"] == app]
        names = [x["config"] for x in mine]
        sent = [(num(x["bytes_sent_per_pass"]) or 0) / 1e6 for x in mine]
        recv = [(num(x["bytes_recv_per_pass"]) or 0) / 1e6 for x in mine]
        xs = range(len(names))
        ax.bar([i - 0.2 for i in xs], sent, 0.4, label="sent")
        ax.bar([i + 0.2 for i in xs], recv, 0.4, label="received")
        ax.set_xticks(list(xs), names)
        ax.set_ylabel("MB per process per pass")
        ax.legend()
        ax.set_title(APPS.get(app, app))
    fig.suptitle("Communication per pass")
    save(fig, "bytes")


def prefetch():
    r = rows("prefetch")
    apps = apps_in(r)
    fig, axes = plt.subplots(1, len(apps), figsize=(5 * len(apps), 4), squeeze=False)
    for ax, app in zip(axes[0], apps):
        mine = [x for x in r if x["app"] == app]
        both = len({x["refresh_ahead"] for x in mine}) > 1
        names = [(x["prefetch"] + ("\n+ app refresh" if both and x["refresh_ahead"] == "true" else ""))
                 for x in mine]
        comp = [num(x["compute_s_per_pass"]) or 0 for x in mine]
        wait = [num(x["wait_s_per_pass"]) or 0 for x in mine]
        ax.bar(names, comp, label="compute")
        ax.bar(names, wait, bottom=comp, label="wait")
        for i, x in enumerate(mine):
            ax.annotate(f'{int(float(x["get_misses"]))} blocked', (i, comp[i] + wait[i]), ha="center",
                        va="bottom", fontsize=7)
        ax.set_ylabel("seconds per pass per worker")
        ax.tick_params(axis="x", labelsize=7)
        ax.legend()
        ax.set_title(APPS.get(app, app))
    fig.suptitle("Prefetching: compute vs wait, slack 1")
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
    fig, (a, lag, ahead, b) = plt.subplots(1, 4, figsize=(22, 4))
    bars(a, lambda m: [(int(x["staleness"]), int(x["count"])) for x in h if x["model"] == m],
         "observed staleness (data age - reader clock)", "Staleness, s = 3 (rank 100, 1% per clock)")
    for ax, measure, xlabel in [
        (lag, "delivery_lag", "delivery lag (freshest servable age - age read)"),
        (ahead, "ahead_of_slowest", "reader's lead over the slowest worker (clocks)"),
    ]:
        bars(ax, lambda m: [(int(x["value"]), int(x["count"])) for x in prof
                            if x["model"] == m and x["measure"] == measure], xlabel, measure.replace("_", " "))
    for lr in sorted({x["lr"] for x in r}, key=float):
        for model, style in [("SSP", "o-"), ("ESSP", "s--")]:
            pts = [(num(x["slack"]), num(x["final_rmse"])) for x in r if x["model"] == model and x["lr"] == lr]
            b.plot([p[0] for p in pts if p[1] is not None], [p[1] for p in pts if p[1] is not None], style,
                   label=f"{model} lr {lr}")
            for p in pts:
                if p[1] is None:
                    b.annotate("diverged", (p[0], b.get_ylim()[0]), rotation=90, fontsize=7, va="bottom")
    b.set_xscale("symlog", base=2)
    b.set_xlabel("slack s")
    b.set_ylabel("training RMSE after 12 passes")
    b.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    b.set_title("MF robustness to large staleness")
    save(fig, "essp")


def convergence():
    r = rows("essp_convergence")
    split = rows("essp_breakdown")
    apps = apps_in(r)
    fig, axes = plt.subplots(len(apps), 3, figsize=(16, 4 * len(apps)), squeeze=False)
    slacks = sorted({int(x["slack"]) for x in r})
    colors = dict(zip(slacks, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for (per_pass, per_s, bar), app in zip(axes, apps):
        for model, style in [("SSP", "-"), ("ESSP", "--")]:
            for s in slacks:
                pts = [(num(x["pass"]), num(x["time_s"]), num(x["objective"])) for x in r
                       if x["app"] == app and x["model"] == model and int(x["slack"]) == s]
                pts = [p for p in pts if p[2] is not None]
                for ax, i in [(per_pass, 0), (per_s, 1)]:
                    ax.plot([p[i] for p in pts], [p[2] for p in pts], style, color=colors[s],
                            label=f"{model} s={s}")
        per_pass.set_xlabel("passes")
        per_s.set_xlabel("seconds")
        for ax in (per_pass, per_s):
            ax.set_ylabel(YLABEL.get(app, "objective"))
            ax.set_title(APPS.get(app, app))
        per_pass.legend(fontsize=7, ncol=2)
        mine = [x for x in split if x["app"] == app]
        labels = [f'{x["model"]}\ns={x["slack"]}' for x in mine]
        comp = [(num(x["compute_s_per_clock"]) or 0) * 1e3 for x in mine]
        wait = [(num(x["wait_s_per_clock"]) or 0) * 1e3 for x in mine]
        bar.bar(labels, comp, label="computation")
        bar.bar(labels, wait, bottom=comp, label="communication + waiting")
        bar.set_ylabel("ms per clock per worker")
        bar.tick_params(axis="x", labelsize=7)
        bar.set_ylim(top=max(c + w for c, w in zip(comp, wait)) * 1.3)
        bar.legend(fontsize=8, ncol=2, loc="upper center")
        bar.set_title(f"{APPS.get(app, app)}: where a clock goes")
    fig.suptitle("SSP (solid) vs ESSP (dashed) across slack")
    save(fig, "essp_convergence")


for f in [staleness, stragglers, background, bytes_, prefetch, essp, convergence]:
    f()
