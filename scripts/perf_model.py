#!/usr/bin/env python3
"""A calibrated model of the seconds per pass of mf, lda and pagerank, fitted to one run of
scripts/bench-scale-out.sh (P processes x T threads on one machine), checked by leaving each
configuration out of the fit in turn, and used to predict clusters of 16-core nodes over 10 GbE.

Per pass, with W = P x T workers, N work units (training ratings, tokens, edges), R model rows a
worker moves (fetches and updates) per pass, C clocks per pass:

    compute = c_u N / W + c_r R              each worker: its share of the units, its rows
    serve   = c_s T R                        a process's one server/communication task serves
                                             the rows of all its T workers, one after another
    t       = max(compute, serve) + c_k C    (+ network terms across machines, below)

c_u, c_r, c_s, c_k are fitted per app (least squares on relative error, all >= 0). Across
machines each clock also waits for one round trip (the next slice comes from another node), and
a node's NIC carries its workers' bytes: per pass  B_node = workers per node x B_w x (n-1)/n
where B_w is the bytes a worker sends and receives per pass: R x row bytes, twice for the rotating
schedules (fetch and update), once per process for PageRank (its threads share the fetched ranks). Two bounds are
given: the network fully overlapped with compute (max) and not at all (sum).

    usage: scripts/perf_model.py [--results results] [--run results/bench-scale-out.json]
"""
import argparse
import json
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

ap = argparse.ArgumentParser()
ap.add_argument("--run", default="results/bench-scale-out.json")
ap.add_argument("--results", default="results")
ap.add_argument("--rtt-us", type=float, default=100.0, help="round trip between nodes, microseconds")
ap.add_argument("--nic-gbps", type=float, default=10.0)
a = ap.parse_args()

run = json.loads(Path(a.run).read_text())
meta = run["meta"]
inp = meta["inputs"]
rank, topics = meta["mf_rank"], meta["lda_topics"]
test_fraction = 0.1
# What one pass works through and moves, from the generated inputs (scripts/bench_scale_out.py).
APPS = {
    "mf": dict(units=inp["ratings"] * (1 - test_fraction), rows=inp["items"], row_bytes=4 * rank + 12,
               unit="rating", trips=2, per_thread=True),
    # A sparse word-topic row holds a few topics; its bytes are estimated from the measured traffic.
    "lda": dict(units=inp["docs"] * 330, rows=inp["vocab"], row_bytes=None, unit="token", trips=2, per_thread=True),
    # Rank blocks of 1024 nodes (f64), every block read by every process (its threads share the
    # process cache's copy), and only a worker's own blocks written.
    "pagerank": dict(units=inp["nodes"] * 10, rows=-(-inp["nodes"] // 1024), row_bytes=8 * 1024 + 12,
                     unit="edge", trips=1, per_thread=False),
}


def features(app, p, t, cpp):
    s = APPS[app]
    w = p * t
    return np.array([s["units"] / w, s["rows"], t * s["rows"], cpp])


def predict(c, x):
    return max(c[0] * x[0] + c[1] * x[1], c[2] * x[2]) + c[3] * x[3]


def fit(rows):
    xs = [r["x"] for r in rows]
    ys = [r["y"] for r in rows]

    def resid(logc):
        c = np.exp(np.clip(logc, -60, 5))
        return [(predict(c, x) - y) / y for x, y in zip(xs, ys)]

    best = None
    for start in ([-20, -20, -20, -20], [-17, -12, -14, -8], [-16, -10, -12, -6]):
        r = least_squares(resid, np.array(start, dtype=float), method="lm" if len(ys) > 4 else "trf")
        if best is None or r.cost < best.cost:
            best = r
    return np.exp(np.clip(best.x, -60, 5))


out = {"meta": {"run": a.run, "machine": meta.get("machine"), "cores": meta.get("cores"),
                "model": __doc__.split("usage:")[0].strip(), "rtt_us": a.rtt_us, "nic_gbps": a.nic_gbps},
       "apps": {}}
csv = ["app,procs,threads,workers,measured_s,fitted_s,left_out_s,left_out_error"]
for app in APPS:
    rows = []
    for r in run["runs"]:
        if r["app"] != app or r["system"] != "ps" or not r.get("s_per_pass"):
            continue
        rows.append({"p": r["procs"], "t": r["threads"], "y": r["s_per_pass"],
                     "x": features(app, r["procs"], r["threads"], r["clocks_per_pass"]),
                     "mb": r.get("mb_per_worker_per_pass")})
    if len(rows) < 5:
        continue
    c = fit(rows)
    checks = []
    for i, r in enumerate(rows):
        ci = fit(rows[:i] + rows[i + 1:])
        lo = predict(ci, r["x"])
        checks.append({"procs": r["p"], "threads": r["t"], "measured_s": r["y"], "fitted_s": predict(c, r["x"]),
                       "left_out_s": lo, "left_out_error": lo / r["y"] - 1})
        csv.append(f"{app},{r['p']},{r['t']},{r['p'] * r['t']},{r['y']:.4f},{predict(c, r['x']):.4f},{lo:.4f},"
                   f"{lo / r['y'] - 1:+.3f}")
    s = APPS[app]
    if s["row_bytes"] is None:
        # Training bytes per worker per pass at the most processes (all traffic on sockets).
        top = max((r for r in rows if r["t"] == 1 and r["mb"]), key=lambda r: r["p"])
        s["row_bytes"] = top["mb"] * 1e6 / (s["trips"] * s["rows"])
    bw = s["trips"] * s["rows"] * s["row_bytes"]
    cpp_of = lambda w: 2 * w + 1 / 3  # rotating schedules: workers x (staleness + 1) slices a pass
    preds = []
    for nodes in (1, 16, 64):
        for layout, (p_node, t_node) in {"16 processes x 1 thread": (16, 1), "1 process x 16 threads": (1, 16)}.items():
            p, t = nodes * p_node, t_node
            w = p * t
            cpp = cpp_of(w) if app != "pagerank" else 1.1
            local = predict(c, features(app, p, t, cpp))
            remote = (nodes - 1) / nodes
            net_bytes = (p_node * t_node if s["per_thread"] else p_node) * bw * remote
            t_nic = net_bytes / (a.nic_gbps * 1.25e8)
            t_rtt = cpp * a.rtt_us * 1e-6 if nodes > 1 else 0.0
            preds.append({"nodes": nodes, "layout": layout, "workers": w, "clocks_per_pass": cpp,
                          "local_s": local, "nic_s": t_nic, "rtt_s": t_rtt,
                          "overlapped_s": max(local, t_nic) + t_rtt, "serial_s": local + t_nic + t_rtt,
                          "work_units_per_worker": s["units"] / w})
    out["apps"][app] = {
        "coefficients": {"c_u_ns_per_" + s["unit"]: c[0] * 1e9, "c_r_us_per_row": c[1] * 1e6,
                         "c_s_us_per_row_served": c[2] * 1e6, "c_k_ms_per_clock": c[3] * 1e3},
        "units": s["units"], "rows": s["rows"], "row_bytes": s["row_bytes"], "bytes_per_worker_per_pass": bw,
        "checks": checks,
        "max_left_out_error": max(abs(x["left_out_error"]) for x in checks),
        "predictions": preds,
    }

res = Path(a.results)
(res / "perf-model.json").write_text(json.dumps(out, indent=1))
(res / "perf-model.csv").write_text("\n".join(csv) + "\n")
for app, m in out["apps"].items():
    co = ", ".join(f"{k} {v:.3g}" for k, v in m["coefficients"].items())
    print(f"{app}: {co}; worst left-out error {m['max_left_out_error']:.0%}")
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
        lab = [f"{x['procs']}x{x['threads']}" for x in ch]
        xs = np.arange(len(ch))
        ax.bar(xs - 0.2, [x["measured_s"] for x in ch], 0.4, label="measured")
        ax.bar(xs + 0.2, [x["left_out_s"] for x in ch], 0.4, label="model (fitted without it)")
        ax.set_xticks(xs, lab, rotation=60, fontsize=8)
        ax.set_title(f"{app}: s/pass, worst error {m['max_left_out_error']:.0%}")
        ax.legend(fontsize=8)
    fig.suptitle(f"Time per pass, measured and modelled ({meta.get('cores')}-core run {a.run})")
    fig.tight_layout()
    fig.savefig(res / "perf-model.png", dpi=110)
except ImportError:
    print("no matplotlib: no plot")
