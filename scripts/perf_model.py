#!/usr/bin/env python3
"""A calibrated model of the seconds per pass of mf, lda and pagerank, fitted to runs of
scripts/bench-scale-out.sh on one machine (P processes x T threads), checked by leaving each
configuration out of the fit in turn, and used to predict clusters of 16-core nodes over 10 GbE.

The design it models: under the rotating schedules (MF, LDA) slices of the model rotate among
processes, C = P (s + 1) clocks a pass (+1/3: the objective's clock), and the T threads of a
process share their process's slice in place, each loading and sending 1/T of it; PageRank
reads every rank block once per process and iteration, its threads sharing the fetched ranks.
Per pass, with W = P x T workers, N work units (training ratings, tokens, edges) and R model
rows (16 items or words a row; 1024 ranks a block):

    t = c_u N / W          each worker's share of the units
      + c_0                per worker and pass, whatever W: a thread visits every model row of
                           its process's slices once a pass (LDA: every word of its documents)
      + c_r R / T          the rows a thread loads and sends (or, PageRank, reads) per pass
      + c_k C              per clock: the step turns, the clock barrier, the slowest block

c_u, c_0, c_r, c_k >= 0 are fitted per app by least squares on relative error, to the geometric
mean of the runs given (the same configuration moved by up to 33% between leases of the same
machine kind). Across machines each clock also waits for one round trip if the next slice is
not already there (it is fetched a clock ahead), and a node's NIC carries its processes' bytes:
per pass B_node = processes per node x B_p x (n-1)/n, where B_p is one fetch and one update of
the model per process and pass for MF and LDA, one fetch of every rank block for PageRank
(taken from the measured training bytes of the P x 1 runs). Two bounds are given: the network
fully overlapped with compute (max) and not at all (sum).

    usage: scripts/perf_model.py [--results results] [--run RUN.json ...]
"""
import argparse
import json
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

ap = argparse.ArgumentParser()
ap.add_argument("--run", nargs="+", default=["results/bench-scale-out-run4.json", "results/bench-scale-out.json"])
ap.add_argument("--results", default="results")
ap.add_argument("--rtt-us", type=float, default=100.0, help="round trip between nodes, microseconds")
ap.add_argument("--nic-gbps", type=float, default=10.0)
a = ap.parse_args()

runs = [json.loads(Path(r).read_text()) for r in a.run]
meta = runs[0]["meta"]
inp = meta["inputs"]
if any(r["meta"]["inputs"] != inp for r in runs):
    raise SystemExit("the runs were made on different inputs")
APPS = {
    "mf": dict(units=inp["ratings"] * 0.9, rows=inp["items"] / 16, unit="rating", trips=2),
    "lda": dict(units=inp["docs"] * 330, rows=inp["vocab"] / 16, unit="token", trips=2),
    "pagerank": dict(units=inp["nodes"] * 10, rows=-(-inp["nodes"] // 1024), unit="edge", trips=1),
}


def features(app, p, t, cpp):
    s = APPS[app]
    return np.array([s["units"] / (p * t), 1.0, s["rows"] / t, cpp])


def fit(x, y):
    w = 1 / y
    c, _ = nnls(x * w[:, None], y * w)
    return c


out = {"meta": {"runs": a.run, "machines": [r["meta"].get("machine") for r in runs], "cores": meta.get("cores"),
                "model": __doc__.split("usage:")[0].strip(), "rtt_us": a.rtt_us, "nic_gbps": a.nic_gbps},
       "apps": {}}
csv = ["app,procs,threads,workers,measured_s,run_spread,fitted_s,left_out_s,left_out_error"]
for app, s in APPS.items():
    per = [{(r["procs"], r["threads"]): r for r in run["runs"]
            if r["app"] == app and r["system"] == "ps" and r.get("s_per_pass")} for run in runs]
    keys = sorted(set.intersection(*(set(p) for p in per)))
    if len(keys) < 5:
        continue
    x = np.array([features(app, p, t, per[0][(p, t)]["clocks_per_pass"]) for p, t in keys])
    ys = np.array([[pr[k]["s_per_pass"] for k in keys] for pr in per])
    y = np.exp(np.log(ys).mean(axis=0))
    spread = ys.max(axis=0) / ys.min(axis=0) - 1
    c = fit(x, y)
    checks = []
    for i, (p, t) in enumerate(keys):
        keep = np.arange(len(keys)) != i
        lo = x[i] @ fit(x[keep], y[keep])
        checks.append({"procs": p, "threads": t, "measured_s": y[i], "runs_s": list(ys[:, i]), "run_spread": spread[i],
                       "fitted_s": x[i] @ c, "left_out_s": lo, "left_out_error": lo / y[i] - 1})
        csv.append(f"{app},{p},{t},{p * t},{y[i]:.4f},{spread[i]:.3f},{x[i] @ c:.4f},{lo:.4f},{lo / y[i] - 1:+.3f}")
    # Bytes a process moves per pass: the P x 1 run with the most processes, scaled to P -> inf.
    top = max((k for k in keys if k[1] == 1), key=lambda k: k[0])
    mb = np.mean([pr[top]["mb_per_worker_per_pass"] for pr in per])
    b_p = mb * 1e6 * top[0] / (top[0] - 1)
    preds = []
    for nodes in (1, 16, 64):
        for layout, (p_node, t_node) in {"1 process x 16 threads": (1, 16), "16 processes x 1 thread": (16, 1)}.items():
            p, t = nodes * p_node, t_node
            cpp = 2 * p + 1 / 3 if app != "pagerank" else 1.1
            local = float(features(app, p, t, cpp) @ c)
            t_nic = p_node * b_p * (nodes - 1) / nodes / (a.nic_gbps * 1.25e8)
            t_rtt = cpp * a.rtt_us * 1e-6 if nodes > 1 else 0.0
            preds.append({"nodes": nodes, "layout": layout, "workers": p * t, "clocks_per_pass": cpp,
                          "local_s": local, "nic_s": t_nic, "rtt_s": t_rtt,
                          "overlapped_s": max(local, t_nic) + t_rtt, "serial_s": local + t_nic + t_rtt})
    out["apps"][app] = {
        "coefficients": {"c_u_ns_per_" + s["unit"]: c[0] * 1e9, "c_0_ms_per_pass": c[1] * 1e3,
                         "c_r_us_per_row": c[2] * 1e6, "c_k_ms_per_clock": c[3] * 1e3},
        "units": s["units"], "rows": s["rows"], "bytes_per_process_per_pass": b_p, "checks": checks,
        "max_left_out_error": max(abs(k["left_out_error"]) for k in checks),
        "median_left_out_error": float(np.median([abs(k["left_out_error"]) for k in checks])),
        "max_run_spread": float(spread.max()), "predictions": preds,
    }

res = Path(a.results)
(res / "perf-model.json").write_text(json.dumps(out, indent=1))
(res / "perf-model.csv").write_text("\n".join(csv) + "\n")
for app, m in out["apps"].items():
    co = ", ".join(f"{k} {v:.3g}" for k, v in m["coefficients"].items())
    print(f"{app}: {co}; left-out error worst {m['max_left_out_error']:.0%}, median "
          f"{m['median_left_out_error']:.0%} (runs spread up to {m['max_run_spread']:.0%})")
    for p in m["predictions"]:
        print(f"  {p['nodes']:3} nodes, {p['layout']:24} {p['workers']:5} workers: {p['overlapped_s']:.3f}-"
              f"{p['serial_s']:.3f} s/pass (local {p['local_s']:.3f}, NIC {p['nic_s']:.3f}, RTT {p['rtt_s']:.3f})")
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(out["apps"]), figsize=(5 * len(out["apps"]), 4))
    for ax, (app, m) in zip(np.atleast_1d(axes), out["apps"].items()):
        ch = m["checks"]
        xs = np.arange(len(ch))
        ax.bar(xs - 0.2, [k["measured_s"] for k in ch], 0.4, label="measured (geometric mean; bars: the runs)",
               yerr=[[k["measured_s"] - min(k["runs_s"]) for k in ch], [max(k["runs_s"]) - k["measured_s"] for k in ch]],
               capsize=2)
        ax.bar(xs + 0.2, [k["left_out_s"] for k in ch], 0.4, label="model (fitted without it)")
        ax.set_xticks(xs, [f"{k['procs']}x{k['threads']}" for k in ch], rotation=60, fontsize=8)
        ax.set_title(f"{app}: s/pass, worst left-out error {m['max_left_out_error']:.0%}")
        ax.legend(fontsize=8)
    fig.suptitle(f"Time per pass, measured and modelled ({meta.get('cores')} cores; runs {', '.join(a.run)})",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(res / "perf-model.png", dpi=110)
except ImportError:
    print("no matplotlib: no plot")
