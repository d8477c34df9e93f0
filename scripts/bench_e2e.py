#!/usr/bin/env python3
"""End-to-end benchmark of what a user runs: `yarn-submit --master local[2] --threads 1 APP ...`
(separate OS processes over TCP, default consistency, staleness and clocks per pass, load and
output included), beside the app's plain single-thread loop (`ps-bench plain`) and the peer a
user would otherwise pick (PyPI libmf, tomotopy, scipy), all on the same inputs in the same run.

Each app runs `--repeat` rounds (default 3) of PS job, plain loop and peer back to back, and the
figures are medians over the rounds (ratios: the median of each round's own ratio), because this
machine's speed drifts by 2-3x between minutes. Per app it reports training seconds per pass (from the job's stats: `train_s` over the passes
trained), the ratios PS/plain and PS/peer, the job's wall time and its non-training share,
quality (MF held-out RMSE, LDA log-likelihood per token, PageRank L1 change) and, for LDA, the
quality-per-second curves of ours and tomotopy. Writes results/bench-e2e.{csv,json,png}."""
import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import peers

ap = argparse.ArgumentParser()
ap.add_argument("--bin", default="target/release")
ap.add_argument("--results", default="results")
ap.add_argument("--ratings", default="data/bench/ratings-5m.tsv")
ap.add_argument("--corpus", default="data/bench/nyt-10000/docword.synth.txt")
ap.add_argument("--graph", default="data/bench/graph-1000000.tsv")
ap.add_argument("--mf-passes", type=int, default=3)
ap.add_argument("--lda-passes", type=int, default=5)
ap.add_argument("--pr-passes", type=int, default=10)
ap.add_argument("--job-passes", type=int, default=10, help="passes of the whole-job MF runs")
ap.add_argument("--only", default="mf,lda,pagerank")
ap.add_argument("--repeat", type=int, default=3,
                help="rounds of (PS job, plain loop, peer) per app, interleaved; medians are reported")
ap.add_argument("--output-format", default="text", choices=["text", "binary"])
a = ap.parse_args()
bin_dir, res = Path(a.bin), Path(a.results)
work = Path(tempfile.mkdtemp(prefix="bench-e2e-"))
# Default clocks per pass of each app (CommonArgs::validate): per-pass time = train_s / passes.
APPS = {
    "mf": (a.ratings, a.mf_passes, ["--rank", "100", "--test-fraction", "0.1"]),
    "lda": (a.corpus, a.lda_passes, ["--topics", "100"]),
    "pagerank": (a.graph, a.pr_passes, []),
}


def ps_job(app, inp, passes, extra, fmt=None, tag=""):
    """Runs the user's command; returns (wall seconds, job stats)."""
    stats, out = work / f"{app}{tag}-stats.json", work / f"{app}{tag}-out"
    shutil.rmtree(out, ignore_errors=True)  # the previous round's (a job refuses an existing output)
    cmd = [str(bin_dir / "yarn-submit"), "--master", "local[2]", "--threads", "1", "--stats", str(stats),
           app, "--input", inp, "--passes", str(passes), "--output", str(out),
           "--output-format", fmt or a.output_format] + extra
    print("$", " ".join(cmd), flush=True)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    return wall, json.loads(stats.read_text())


def plain(app, inp, passes):
    cmd = [str(bin_dir / "ps-bench"), "plain", app, "--input", inp, "--passes", str(passes)]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def peer_input(app, inp):
    """The peer's input, loaded once (None if the peer is not installed)."""
    try:
        if app == "mf":
            return peers.load_ratings(inp)
        if app == "lda":
            return peers.load_docword(inp)
        return peers.load_graph(inp)
    except ImportError as e:
        print(f"{app}: peer unavailable ({e})")
        return None


def peer(app, data):
    """(name, seconds per pass, note, curve or None); None if the peer is not installed."""
    if data is None:
        return None
    try:
        if app == "mf":
            return ("libmf (PyPI)", *peers.libmf(data), None)
        if app == "lda":
            return ("tomotopy", *peers.tomotopy(data, sweeps=a.lda_passes))
        return ("scipy CSR", *peers.scipy_pagerank(data, a.pr_passes), None)
    except ImportError as e:
        print(f"{app}: peer unavailable ({e})")
        return None


def quality(app, stats, plain_run):
    objective = stats.get("objective") or [{}]
    last = objective[-1]
    if app == "mf":
        return {"test_rmse": last.get("test_rmse"), "train_rmse": last.get("rmse"),
                "plain_train_rmse": plain_run["objective"][-1]}
    if app == "lda":
        tokens = plain_run["size"]["tokens"]
        return {"loglik_per_token": last.get("loglik_per_token"),
                "plain_loglik_per_token": plain_run["objective"][-1] / tokens,
                "curve": [[r["time_s"], r["loglik_per_token"]] for r in objective if "loglik_per_token" in r]}
    return {"l1_delta": last.get("l1_delta"), "plain_l1_delta": plain_run["objective"][-1]}


# Worker 0's seconds around training (stats keys): where the time outside training goes.
PHASES = ["load_s", "eval_s", "output_s"]
rows = []
def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


# This machine's speed drifts (up to 2-3x between minutes), so each app runs `--repeat` rounds of
# PS job, plain loop and peer back to back; the figures are the medians, and each ratio is the
# median of the rounds' ratios (each taken within one round).
for app in a.only.split(","):
    inp, passes, extra = APPS[app]
    data = peer_input(app, inp)
    rounds = []
    for i in range(a.repeat):
        wall, stats = ps_job(app, inp, passes, extra)
        base = plain(app, inp, passes)
        rounds.append((wall, stats, base, peer(app, data)))
        ps_pass = stats.get("train_s", float("nan")) / passes
        print(f"  round {i + 1}: PS {ps_pass:.3f}, plain {base['pass_s']:.3f}"
              + (f", peer {rounds[-1][3][1]:.3f}" if rounds[-1][3] else ""), flush=True)
    # The round whose PS time is the median supplies the stats, quality and curves.
    ps_passes = [r[1].get("train_s", float("nan")) / passes for r in rounds]
    wall, stats, base, p = rounds[sorted(range(len(rounds)), key=lambda i: ps_passes[i])[len(rounds) // 2]]
    train_s = stats.get("train_s", float("nan"))
    ps_pass = median(ps_passes)
    plain_pass = median([r[2]["pass_s"] for r in rounds])
    row = {
        "app": app, "input": inp, "passes": passes, "command": "yarn-submit --master local[2] --threads 1",
        "rounds": len(rounds), "ps_pass_s": ps_pass, "plain_pass_s": plain_pass,
        "ps_over_plain": median([x / r[2]["pass_s"] for x, r in zip(ps_passes, rounds)]),
        "ps_pass_s_all": ps_passes, "plain_pass_s_all": [r[2]["pass_s"] for r in rounds],
        "wall_s": wall, "train_s": train_s, "non_training_share": (wall - train_s) / wall,
        **{k: stats.get(k) for k in PHASES},
        "peak_rss_mb": stats.get("peak_rss_bytes", 0) / 2**20, "quality": quality(app, stats, base), "size": base["size"],
    }
    if p:
        peer_all = [r[3][1] for r in rounds]
        row.update({"peer": p[0], "peer_pass_s": median(peer_all), "peer_pass_s_all": peer_all, "peer_note": p[2],
                    "ps_over_peer": median([x / y for x, y in zip(ps_passes, peer_all)])})
        if p[3]:
            row["peer_curve"] = p[3]
    rows.append(row)
    print(f"{app:9} PS {ps_pass:7.3f} s/pass | plain {plain_pass:7.3f} ({row['ps_over_plain']:.2f}x)"
          + (f" | {p[0]} {row['peer_pass_s']:7.3f} ({row['ps_over_peer']:.2f}x)" if p else "")
          + f" | wall {wall:6.1f} s, {100 * row['non_training_share']:.0f}% not training"
          + f" (medians of {len(rounds)} rounds)", flush=True)

# Issue 11's whole-job measure: a 10-pass MF job on the ratings, in both output formats.
jobs = []
if "mf" in a.only.split(","):
    inp, _, extra = APPS["mf"]
    for fmt in ["text", "binary"]:
        wall, stats = ps_job("mf", inp, a.job_passes, extra, fmt, f"-job-{fmt}")
        job = {"app": "mf", "passes": a.job_passes, "output_format": fmt, "wall_s": wall,
               "train_s": stats["train_s"], **{k: stats.get(k) for k in PHASES}}
        job["non_training_share"] = (wall - job["train_s"]) / wall
        # Worker 0's output rate: the bytes of its part files (part-00000*) over its output_s
        # (formatting, writing, fsync and the commit barrier).
        out = work / f"mf-job-{fmt}-out"
        mine = sum(f.stat().st_size for f in out.rglob("part-00000*"))
        job["output_mb"] = sum(f.stat().st_size for f in out.rglob("part-*")) / 1e6
        job["output_mb_per_s_per_process"] = mine / 1e6 / job["output_s"]
        # The disk's own rate for the same bytes in the same minute: two writers in parallel (as
        # the job's two processes), each as many bytes as worker 0 wrote, flushed with fsync.
        blocks = max(1, mine // (4 << 20))
        t = time.perf_counter()
        dds = [subprocess.Popen(["dd", "if=/dev/zero", f"of={work}/dd-{i}", "bs=4M", f"count={blocks}", "conv=fsync"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for i in range(2)]
        for d in dds:
            d.wait()
        job["disk_mb_per_s_per_process"] = blocks * (4 << 20) / 1e6 / (time.perf_counter() - t)
        for i in range(2):
            (work / f"dd-{i}").unlink(missing_ok=True)
        jobs.append(job)
        print(f"mf {a.job_passes} passes, {fmt:6} output: wall {wall:5.1f} s, training {job['train_s']:5.1f} s, "
              + ", ".join(f"{k} {job[k]:.2f}" for k in PHASES)
              + f": {100 * job['non_training_share']:.0f}% not training; {job['output_mb']:.0f} MB written, "
              + f"{job['output_mb_per_s_per_process']:.0f} MB/s per process (dd with fsync, 2 in parallel: "
              + f"{job['disk_mb_per_s_per_process']:.0f})", flush=True)

res.mkdir(parents=True, exist_ok=True)
(res / "bench-e2e.json").write_text(json.dumps(rows, indent=1))
cols = ["app", "ps_pass_s", "plain_pass_s", "ps_over_plain", "peer", "peer_pass_s", "ps_over_peer", "wall_s",
        "train_s", "non_training_share", "peak_rss_mb"] + PHASES
job_cols = ["app", "passes", "output_format", "wall_s", "train_s"] + PHASES + ["non_training_share", "output_mb",
                                                                               "output_mb_per_s_per_process",
                                                                               "disk_mb_per_s_per_process"]
if jobs:
    (res / "bench-e2e-job.json").write_text(json.dumps(jobs, indent=1))
for name, table, columns in [("bench-e2e.csv", rows, cols), ("bench-e2e-job.csv", jobs, job_cols)]:
    if not table:
        continue
    with open(res / name, "w") as f:
        f.write(",".join(columns) + "\n")
        for r in table:
            f.write(",".join(str(r.get(c, "")) for c in columns) + "\n")
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    names = [r["app"] for r in rows]
    for i, (key, label) in enumerate([("ps_pass_s", "through the PS (2 processes)"),
                                      ("plain_pass_s", "plain loop (1 thread)"), ("peer_pass_s", "peer")]):
        ax.bar([j + 0.27 * (i - 1) for j in range(len(rows))], [r.get(key, 0) for r in rows], 0.27, label=label)
    ax.set_xticks(range(len(rows)), names)
    ax.set_yscale("log")
    ax.set_ylabel("seconds per pass")
    ax.legend()
    for r in rows:
        if r["app"] == "lda":
            c = r["quality"]["curve"]
            ax2.plot([x for x, _ in c], [y for _, y in c], "o-", label="ours (log-lik/token vs job time)")
            if "peer_curve" in r:
                ax2.plot(*zip(*r["peer_curve"]), "s-", label="tomotopy (ll_per_word vs train time)")
            ax2.set_xlabel("seconds")
            ax2.set_ylabel("log-likelihood per token")
            ax2.legend()
    fig.tight_layout()
    fig.savefig(res / "bench-e2e.png", dpi=110)
except ImportError:
    print("matplotlib missing: no plot", file=sys.stderr)
shutil.rmtree(work, ignore_errors=True)
print("results written to", res / "bench-e2e.{csv,json,png}")
