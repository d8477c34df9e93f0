#!/usr/bin/env python3
"""Scaling of the user's MF job with the data: `yarn-submit --master local[2] --threads 1 mf
--rank 100` on generated Netflix-shaped ratings (480,189 users x 17,770 items) of growing size, up
to Netflix's 100M ratings. Per size: training seconds per pass (stats `train_s` / passes), the
load and output time around it (wall - training), and the largest process's peak RSS (stats
`peak_rss_bytes`). Time per pass should grow linearly with the ratings; the plot draws the
smallest size's figure scaled linearly beside the measured ones. Writes
results/bench-scale.{csv,json,png}."""
import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ap = argparse.ArgumentParser()
ap.add_argument("--bin", default="target/release")
ap.add_argument("--results", default="results")
ap.add_argument("--sizes", default="5,25,50,100", help="millions of ratings")
ap.add_argument("--passes", type=int, default=2)
ap.add_argument("--output-format", default="binary", choices=["text", "binary"])
a = ap.parse_args()
bin_dir, res = Path(a.bin), Path(a.results)
work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
rows = []
for m in [int(x) for x in a.sizes.split(",")]:
    data = Path(f"data/bench/ratings-{m}m.tsv")
    if not data.exists():
        print(f"generating {data}", flush=True)
        tmp = data.with_suffix(".tmp")
        subprocess.run([str(bin_dir / "ps-runtime"), "gen", "ratings", "--out", str(tmp), "--ratings", str(m * 10**6)],
                       check=True)
        tmp.rename(data)
    stats, out = work / f"stats-{m}.json", work / f"out-{m}"
    cmd = [str(bin_dir / "yarn-submit"), "--master", "local[2]", "--threads", "1", "--stats", str(stats), "mf",
           "--input", str(data), "--rank", "100", "--passes", str(a.passes), "--test-fraction", "0.1",
           "--output", str(out), "--output-format", a.output_format]
    print("$", " ".join(cmd), flush=True)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    s = json.loads(stats.read_text())
    row = {"ratings_m": m, "passes": a.passes, "pass_s": s["train_s"] / a.passes, "wall_s": wall,
           "outside_training_s": wall - s["train_s"], "peak_rss_gb": s.get("peak_rss_bytes", 0) / 2**30,
           "test_rmse": s["objective"][-1].get("test_rmse")}
    rows.append(row)
    shutil.rmtree(out, ignore_errors=True)
    print(f"{m:4}M ratings: {row['pass_s']:7.2f} s/pass, wall {wall:6.1f} s ({row['outside_training_s']:.1f} s "
          f"outside training), peak RSS {row['peak_rss_gb']:.2f} GB, test RMSE {row['test_rmse']:.4f}", flush=True)
base = rows[0]
for r in rows:
    r["linear_pass_s"] = base["pass_s"] * r["ratings_m"] / base["ratings_m"]
    r["over_linear"] = r["pass_s"] / r["linear_pass_s"]
res.mkdir(parents=True, exist_ok=True)
(res / "bench-scale.json").write_text(json.dumps(rows, indent=1))
cols = ["ratings_m", "passes", "pass_s", "linear_pass_s", "over_linear", "wall_s", "outside_training_s",
        "peak_rss_gb", "test_rmse"]
with open(res / "bench-scale.csv", "w") as f:
    f.write(",".join(cols) + "\n")
    for r in rows:
        f.write(",".join(str(r[c]) for c in cols) + "\n")
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [r["ratings_m"] for r in rows]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax.plot(x, [r["pass_s"] for r in rows], "o-", label="measured")
    ax.plot(x, [r["linear_pass_s"] for r in rows], "--", label="linear from the smallest")
    ax.set_xlabel("ratings (millions)")
    ax.set_ylabel("training seconds per pass")
    ax.legend()
    ax2.plot(x, [r["peak_rss_gb"] for r in rows], "o-")
    ax2.set_xlabel("ratings (millions)")
    ax2.set_ylabel("peak RSS of the largest process (GB)")
    fig.suptitle("mf --rank 100, yarn-submit --master local[2] --threads 1")
    fig.tight_layout()
    fig.savefig(res / "bench-scale.png", dpi=110)
except ImportError:
    print("matplotlib missing: no plot", file=sys.stderr)
shutil.rmtree(work, ignore_errors=True)
print("results written to", res / "bench-scale.{csv,json,png}")
