#!/usr/bin/env python3
"""Geo-distributed MF: what the WAN costs the user's job (Gaia §2.3, Figure 3), per consistency
model, measured with the user's command:
  yarn-submit --master local[2] --threads 1 [--datacenters 2 --wan-mbps B --wan-delay-ms L] mf ...
Each process is one data center. `LAN` is one data center, unshaped; across the WAN, Gaia's
Baseline (`--inter-dc ssp`: one parameter server over both data centers) and Gaia itself
(`--inter-dc asp`, default significance and DS). Both factor tables go through the parameter server
(`--user-factors table`), so no rating crosses data centers. Reports wall and training time,
held-out RMSE and the bytes that crossed; the ratio to LAN is per consistency model, same run.
Writes results/bench-gaia.{csv,json,png}."""
import argparse
import csv
import json
import subprocess
import tempfile
import time
from pathlib import Path

ap = argparse.ArgumentParser()
ap.add_argument("--bin", default="target/release")
ap.add_argument("--results", default="results")
ap.add_argument("--ratings", type=int, default=2_000_000, help="generated Netflix-shaped ratings")
ap.add_argument("--rank", type=int, default=50)
ap.add_argument("--passes", type=int, default=4)
ap.add_argument("--wan", default="200,50,10", help="WAN bandwidths, Mbit/s per link and direction")
ap.add_argument("--delay-ms", type=float, default=36.0,
                help="one-way WAN delay (36 ms: half the published Virginia-California EC2 round trip)")
ap.add_argument("--consistency", default="bsp,ssp,essp")
ap.add_argument("--modes", default="ssp,asp", help="inter-DC modes to run across the WAN")
a = ap.parse_args()
bin_dir, res = Path(a.bin), Path(a.results)

data = Path(f"data/bench/ratings-{a.ratings // 10**6}m.tsv")
if not data.exists():
    data.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(bin_dir / "ps-runtime"), "gen", "ratings", "--out", str(data), "--ratings", str(a.ratings)],
                   check=True)
work = Path(tempfile.mkdtemp(prefix="bench-gaia-"))
rows = []
runs = [(None, "lan")] + [(float(b), m) for b in a.wan.split(",") for m in a.modes.split(",")]
for cons in a.consistency.split(","):
    for wan, mode in runs:
        tag = f"{cons}-{wan or 'lan'}-{mode}"
        stats = work / f"{tag}.json"
        cmd = [str(bin_dir / "yarn-submit"), "--master", "local[2]", "--threads", "1", "--consistency", cons,
               "--stats", str(stats)]
        if wan:
            cmd += ["--datacenters", "2", "--inter-dc", mode, "--wan-mbps", str(wan), "--wan-delay-ms", str(a.delay_ms)]
        cmd += ["mf", "--input", str(data), "--rank", str(a.rank), "--passes", str(a.passes), "--test-fraction", "0.1",
                "--user-factors", "table"]
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - t
        s = json.loads(stats.read_text())
        last = s["objective"][-1]
        row = {"consistency": cons, "wan_mbps": wan or "LAN", "wan_delay_ms": a.delay_ms if wan else 0,
               "mode": {"lan": "lan", "ssp": "baseline", "asp": "gaia"}[mode], "wall_s": round(wall, 3), "train_s": round(s["train_s"], 3),
               "test_rmse": last.get("test_rmse"), "wan_bytes_sent": s["wan_bytes_sent"]}
        rows.append(row)
        print(f"{cons:5} {str(wan or 'LAN'):>6} Mbit/s {row['mode']:8}: wall {wall:7.2f} s, training {s['train_s']:7.2f} s, "
              f"test RMSE {row['test_rmse']:.5f}, {s['wan_bytes_sent'] / 1e6:8.1f} MB across", flush=True)
for r in rows:
    lan = next(x for x in rows if x["consistency"] == r["consistency"] and x["mode"] == "lan")
    r["train_over_lan"] = round(r["train_s"] / lan["train_s"], 3)
res.mkdir(exist_ok=True)
with open(res / "bench-gaia.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)
(res / "bench-gaia.json").write_text(json.dumps(
    {"ratings": a.ratings, "rank": a.rank, "passes": a.passes, "command": "yarn-submit --master local[2] --threads 1",
     "runs": rows}, indent=1))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for cons in a.consistency.split(","):
        for mode, style in (("baseline", "-"), ("gaia", "--")):
            pts = [(r["wan_mbps"], r["train_over_lan"]) for r in rows if r["consistency"] == cons and r["mode"] == mode]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", label=f"{cons} {mode}")
    ax.set_xscale("log")
    ax.set_xlabel("WAN bandwidth per link, Mbit/s (one-way delay %.0f ms)" % a.delay_ms)
    ax.set_ylabel("training time / LAN")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.legend()
    ax.set_title(f"MF, {a.ratings / 1e6:.0f}M ratings, rank {a.rank}, 2 data centers")
    fig.tight_layout()
    fig.savefig(res / "bench-gaia.png", dpi=120)
except ImportError:
    print("matplotlib missing: no plot")
print(f"results written to {res}/bench-gaia.{{csv,json,png}}")
