#!/usr/bin/env python3
"""Scaling of the user's job with the data: `yarn-submit --master local[2] --threads 1` on
generated inputs of growing size. `--app mf` (rank 100): Netflix-shaped ratings (480,189 users x
17,770 items) up to Netflix's 100M ratings; `--app lda` (K = 100): NYTimes-shaped corpora
(102,660 words, 330 tokens per document) up to NYTimes' ~100M tokens. Per size: training seconds
per pass (stats `train_s` / passes), the load and output time around it (wall - training), and
the largest process's peak RSS (stats `peak_rss_bytes`). Time per pass should grow linearly with
the data; the plot draws the smallest size's figure scaled linearly beside the measured ones.
Writes results/bench-scale.{csv,json,png} (mf) or results/bench-scale-lda.{csv,json,png}."""
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
ap.add_argument("--app", default="mf", choices=["mf", "lda"])
ap.add_argument("--sizes", help="millions of ratings (mf; default 5,25,50,100) or tokens (lda; default 3,25,50,100)")
ap.add_argument("--passes", type=int, default=2)
ap.add_argument("--output-format", default="binary", choices=["text", "binary"])
a = ap.parse_args()
bin_dir, res = Path(a.bin), Path(a.results)
MF = a.app == "mf"
unit = "ratings" if MF else "tokens"
sizes = a.sizes or ("5,25,50,100" if MF else "3,25,50,100")
suffix = "" if MF else "-lda"
qkey = "test_rmse" if MF else "loglik_per_token"


def generate(m):
    """The input of m million ratings or tokens, generated once into data/bench."""
    data = Path(f"data/bench/ratings-{m}m.tsv") if MF else Path(f"data/bench/nyt-{m}m/docword.synth.txt")
    if data.exists():
        return data
    print(f"generating {data}", flush=True)
    gen = [str(bin_dir / "ps-runtime"), "gen"]
    if MF:
        tmp = data.with_suffix(".tmp")
        subprocess.run(gen + ["ratings", "--out", str(tmp), "--ratings", str(m * 10**6)], check=True)
        tmp.rename(data)
    else:
        tmp = data.parent.with_suffix(".tmp")
        subprocess.run(gen + ["corpus", "--out", str(tmp), "--docs", str(m * 10**6 // 330), "--vocab", "102660",
                              "--topics", "100", "--doc-len", "330"], check=True)
        tmp.rename(data.parent)
    return data

work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
rows = []
for m in [int(x) for x in sizes.split(",")]:
    data = generate(m)
    stats, out = work / f"stats-{m}.json", work / f"out-{m}"
    app = ["mf", "--rank", "100", "--test-fraction", "0.1"] if MF else ["lda", "--topics", "100"]
    cmd = [str(bin_dir / "yarn-submit"), "--master", "local[2]", "--threads", "1", "--stats", str(stats), *app,
           "--input", str(data), "--passes", str(a.passes), "--output", str(out), "--output-format", a.output_format]
    print("$", " ".join(cmd), flush=True)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    s = json.loads(stats.read_text())
    last = s["objective"][-1]
    row = {f"{unit}_m": m, "passes": a.passes, "pass_s": s["train_s"] / a.passes, "wall_s": wall,
           "outside_training_s": wall - s["train_s"], "peak_rss_gb": s.get("peak_rss_bytes", 0) / 2**30,
           qkey: last.get(qkey)}
    rows.append(row)
    shutil.rmtree(out, ignore_errors=True)
    print(f"{m:4}M {unit}: {row['pass_s']:7.2f} s/pass, wall {wall:6.1f} s ({row['outside_training_s']:.1f} s "
          f"outside training), peak RSS {row['peak_rss_gb']:.2f} GB, "
          f"{qkey} {row[qkey]:.4f}", flush=True)
base = rows[0]
for r in rows:
    r["linear_pass_s"] = base["pass_s"] * r[f"{unit}_m"] / base[f"{unit}_m"]
    r["over_linear"] = r["pass_s"] / r["linear_pass_s"]
res.mkdir(parents=True, exist_ok=True)
(res / f"bench-scale{suffix}.json").write_text(json.dumps(rows, indent=1))
cols = [f"{unit}_m", "passes", "pass_s", "linear_pass_s", "over_linear", "wall_s", "outside_training_s",
        "peak_rss_gb", qkey]
with open(res / f"bench-scale{suffix}.csv", "w") as f:
    f.write(",".join(cols) + "\n")
    for r in rows:
        f.write(",".join(str(r[c]) for c in cols) + "\n")
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [r[f"{unit}_m"] for r in rows]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax.plot(x, [r["pass_s"] for r in rows], "o-", label="measured")
    ax.plot(x, [r["linear_pass_s"] for r in rows], "--", label="linear from the smallest")
    ax.set_xlabel(f"{unit} (millions)")
    ax.set_ylabel("training seconds per pass")
    ax.legend()
    ax2.plot(x, [r["peak_rss_gb"] for r in rows], "o-")
    ax2.set_xlabel(f"{unit} (millions)")
    ax2.set_ylabel("peak RSS of the largest process (GB)")
    fig.suptitle(f"{'mf --rank 100' if MF else 'lda --topics 100'}, yarn-submit --master local[2] --threads 1")
    fig.tight_layout()
    fig.savefig(res / f"bench-scale{suffix}.png", dpi=110)
except ImportError:
    print("matplotlib missing: no plot", file=sys.stderr)
shutil.rmtree(work, ignore_errors=True)
print("results written to", res / f"bench-scale{suffix}.{{csv,json,png}}")
