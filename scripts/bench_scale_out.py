#!/usr/bin/env python3
"""Scale-out of the user's job with workers on one machine: `yarn-submit --master local[P]
--threads T APP` at default settings for P x T configurations up to --max-workers (default: the
machine's cores), for mf, lda and pagerank on one set of generated inputs, beside the peers on the
same cores: LIBMF (its own AVX + OpenMP build, scripts/peers/libmf_driver.cpp) at the same thread
counts, tomotopy at 1 and the most threads, scipy's single-thread CSR PageRank.

Per run: seconds per pass (stats `train_s` / passes), the speed-up over 1 x 1, CPU seconds per pass
(stats `train_cpu_s`: user + system of every process while training) and its ratio to 1 x 1, bytes
sent per worker per pass, and the final objective after the same passes (held-out RMSE, log-
likelihood per token, PageRank's change in the last iteration). Writes
<results>/bench-scale-out.{csv,json} after every run (so a run cut short keeps what it measured)
and a plot (.png) when matplotlib is there.

    bench_scale_out.py [--max-workers N] [--bin target/release] [--data DIR] [--results DIR]
                       [--size small|full] [--apps mf,lda,pagerank] [--libmf PATH] [--machine TEXT]
    bench_scale_out.py --plot-only --results DIR
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ap = argparse.ArgumentParser()
ap.add_argument("--max-workers", type=int, default=os.cpu_count())
ap.add_argument("--bin", default="target/release")
ap.add_argument("--data", default="data/bench-scale-out")
ap.add_argument("--results", default="results")
ap.add_argument("--size", default="full", choices=["tiny", "small", "full"])
ap.add_argument("--apps", default="mf,lda,pagerank")
ap.add_argument("--libmf", help="the LIBMF driver binary (scripts/bench-scale-out.sh builds it)")
ap.add_argument("--no-peers", action="store_true")
ap.add_argument("--machine", default="", help="what to call this machine in the results")
ap.add_argument("--timeout", type=int, default=240, help="seconds before one run is given up")
ap.add_argument("--plot-only", action="store_true",
                help="only draw the plot of the runs in <results>/bench-scale-out.json (e.g. from another machine)")
ap.add_argument("--huge-pages-off", action="store_true",
                help="also run 1 x 1 and 1 x N with PS_HUGE_PAGES=0 (the huge-page hint's cost or gain, load included)")
ap.add_argument("--comm-threads", type=int, default=0,
                help="also run the many-thread shapes with this many communication threads per process")
a = ap.parse_args()
a.cores = None
BIN, DATA, RES = Path(a.bin), Path(a.data), Path(a.results)
RES.mkdir(parents=True, exist_ok=True)
DATA.mkdir(parents=True, exist_ok=True)

# Input sizes: `full` is what a 16-core machine runs in a few minutes; `small` fits 2 cores.
SIZES = {
    "tiny": dict(ratings=300_000, users=20_000, items=2_000, docs=2_000, vocab=5_000, nodes=100_000),
    "small": dict(ratings=4_000_000, users=480_189, items=17_770, docs=12_000, vocab=50_000, nodes=500_000),
    "full": dict(ratings=25_000_000, users=480_189, items=17_770, docs=30_000, vocab=100_000, nodes=2_000_000),
}[a.size]
# PageRank's iterations take 10-20 ms at the small size, where 10 of them moved its speed-ups by
# +-0.3 from run to run; the full size keeps 10 (a lent machine's minutes are few).
PASSES = {"mf": 3, "lda": 3, "pagerank": 10 if a.size == "full" else 40}
# Words follow Zipf's law in text; with stop words removed the head is flatter than exponent 1.
# (Runs before this setting used a corpus without skew: every word about as frequent.)
WORD_SKEW = 0.8
MF_RANK, LDA_K, TEST_FRACTION = 100, 100, 0.1


def log(*x):
    print(*x, flush=True)


def shapes(n):
    """P x T: 1 x 1, then W x 1 and 1 x W for W = 2, 4, ... <= n, and 2 x n/2 (and n itself)."""
    ws, w = [], 2
    while w <= n:
        ws.append(w)
        w *= 2
    if n > 1 and n not in ws:
        ws.append(n)
    out = [(1, 1)]
    for w in ws:
        out += [(w, 1), (1, w)]
    if n >= 4:
        out.append((2, n // 2))
    return out


CORPUS = DATA / ("corpus-zipf" + str(WORD_SKEW).replace(".", "_"))


def generate():
    """The three inputs, generated in parallel once into --data."""
    g = [str(BIN / "ps-runtime"), "gen"]
    s = SIZES
    jobs = {
        DATA / "ratings": g + ["ratings", "--out", str(DATA / "ratings.tmp"), "--ratings", str(s["ratings"]),
                               "--users", str(s["users"]), "--items", str(s["items"]), "--parts", "16"],
        CORPUS: g + ["corpus", "--out", str(CORPUS.with_suffix(".tmp")), "--docs", str(s["docs"]), "--vocab",
                     str(s["vocab"]), "--topics", "100", "--doc-len", "330", "--word-skew", str(WORD_SKEW)],
        DATA / "graph.txt": g + ["graph", "--out", str(DATA / "graph.tmp"), "--nodes", str(s["nodes"]), "--degree", "10"],
    }
    procs = {}
    for out, cmd in jobs.items():
        if not out.exists():
            log("generating", out)
            procs[out] = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    for out, p in procs.items():
        if p.wait() != 0:
            sys.exit(f"generating {out} failed")
        out.with_suffix(".tmp").rename(out)


INPUTS = {"mf": DATA / "ratings", "lda": CORPUS / "docword.synth.txt", "pagerank": DATA / "graph.txt"}
QUALITY = {"mf": "test_rmse", "lda": "loglik_per_token", "pagerank": "l1_delta"}


def app_args(app):
    base = ["--input", str(INPUTS[app]), "--passes", str(PASSES[app]), "--samples", "1"]
    return {
        "mf": ["mf", "--rank", str(MF_RANK), "--test-fraction", str(TEST_FRACTION)],
        "lda": ["lda", "--topics", str(LDA_K)],
        "pagerank": ["pagerank"],
    }[app] + base


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


ROWS = []


def save():
    import csv

    keys = ["app", "system", "procs", "threads", "workers", "s_per_pass", "speedup", "cpu_s_per_pass", "cpu_ratio",
            "mb_per_worker_per_pass", "quality_key", "quality", "passes", "wall_s", "load_s", "clocks_per_pass",
            "compute_s", "wait_s", "handoff_wait_s", "peak_rss_mb", "thread_cache_mb", "note"]
    with open(RES / "bench-scale-out.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        for r in ROWS:
            w.writerow(r)
    meta = {"machine": a.machine, "cores": os.cpu_count(), "max_workers": a.max_workers, "size": a.size,
            "inputs": SIZES, "passes": PASSES, "mf_rank": MF_RANK, "lda_topics": LDA_K,
            "lda_word_skew": WORD_SKEW,
            "command": "yarn-submit --master local[P] --threads T APP (default settings) --samples 1"}
    (RES / "bench-scale-out.json").write_text(json.dumps({"meta": meta, "runs": ROWS}, indent=1))


def ps_run(app, p, t, work, conf=(), env=None):
    stats = work / f"{app}-{p}x{t}.json"
    cmd = [str(BIN / "yarn-submit"), "--master", f"local[{p}]", "--threads", str(t), "--stats", str(stats),
           *conf, *app_args(app)]
    c0, t0 = children_cpu(), time.time()
    try:
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=a.timeout,
                           env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired:
        return {"note": f"timed out after {a.timeout}s"}
    wall = time.time() - t0
    if r.returncode != 0:
        return {"note": "failed: " + r.stderr.strip().splitlines()[-1][:300] if r.stderr.strip() else "failed"}
    s = json.loads(stats.read_text())
    passes = PASSES[app]
    q = s["objective"][-1].get(QUALITY[app])
    cpp = s["train_clocks"] / passes if s.get("train_clocks") else None
    return {
        "s_per_pass": s["train_s"] / passes,
        "cpu_s_per_pass": s.get("train_cpu_s", float("nan")) / passes,
        "job_cpu_s": children_cpu() - c0,
        # Training's own bytes (the load-time exchanges are not per pass) where the stats have them.
        "mb_per_worker_per_pass": s.get("train_bytes_sent", s["bytes_sent"]) / 1e6 / (p * t) / passes,
        "quality_key": QUALITY[app],
        "quality": q,
        "passes": passes,
        "wall_s": wall,
        "load_s": s.get("load_s"),
        "clocks_per_pass": cpp,
        # Per worker thread: time computing and time blocked (reads, barriers, hand-offs).
        "compute_s": s.get("compute_s"),
        "wait_s": s.get("wait_s"),
        # Of which waiting for another thread of the process (turns at a shared slice, PageRank's
        # per-iteration meeting): idle time of a 1 x T run that no CPU figure shows.
        "handoff_wait_s": s.get("handoff_wait_s"),
        # The largest process's peak RSS: a process's memory should not grow by a copy of the
        # model (or the graph) per thread.
        "peak_rss_mb": s.get("peak_rss_bytes", 0) / 2**20,
        # Of which the thread caches at their fullest (the largest process's, all its threads).
        "thread_cache_mb": s.get("thread_cache_peak_bytes", 0) / 2**20,
    }


def add(row):
    ROWS.append(row)
    system = row["system"].split(" ")[0]
    base = next((r for r in ROWS if r["app"] == row["app"] and r["system"] == system and r["workers"] == 1
                 and r.get("s_per_pass")), None)
    if base and row.get("s_per_pass"):
        row["speedup"] = base["s_per_pass"] / row["s_per_pass"]
        if base.get("cpu_s_per_pass") and row.get("cpu_s_per_pass"):
            row["cpu_ratio"] = row["cpu_s_per_pass"] / base["cpu_s_per_pass"]
    save()
    keys = ("s_per_pass", "speedup", "cpu_ratio", "mb_per_worker_per_pass", "quality")
    log(f"{row['app']:9} {row['system']:9} {row['procs']}x{row['threads']:<3}",
        " ".join(f"{k}={row[k]:.4g}" for k in keys if isinstance(row.get(k), float)), row.get("note", ""))


def libmf(threads):
    cmd = [a.libmf, str(INPUTS["mf"]), str(threads), str(PASSES["mf"]), str(MF_RANK), "0.05", "0.05",
           str(TEST_FRACTION), "1"]
    if (INPUTS["mf"]).is_dir():
        # The driver reads one file: the parts concatenated once.
        whole = DATA / "ratings-all.tsv"
        if not whole.exists():
            with open(whole, "wb") as out:
                for part in sorted(INPUTS["mf"].glob("part-*")):
                    with open(part, "rb") as f:
                        shutil.copyfileobj(f, out)
        cmd[1] = str(whole)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    if r.returncode != 0:
        return {"note": "libmf failed: " + r.stderr[-300:]}
    v = json.loads(r.stdout.strip().splitlines()[-1])
    return {"s_per_pass": v["s_per_pass"], "quality_key": "test_rmse", "quality": v["test_rmse"],
            "passes": v["passes"], "load_s": v["load_s"], "note": "LIBMF -O3 -fopenmp -DUSEOMP -DUSEAVX"}


def load_docword(path):
    """UCI docword: D, W, NNZ header lines, then `doc word count` triples (1-based)."""
    import numpy as np

    with open(path) as f:
        d, _, _ = (int(next(f)) for _ in range(3))
    try:
        import pandas as pd

        trip = pd.read_csv(path, sep=" ", skiprows=3, header=None, dtype=np.int64).to_numpy()
    except ImportError:
        trip = np.loadtxt(path, dtype=np.int64, skiprows=3)
    return d, trip


def tomotopy_runs(thread_counts):
    """Seconds per sweep at each thread count, on one model (loaded once; a warm-up sweep each)."""
    import tomotopy as tp

    d, trip = load_docword(INPUTS["lda"])
    mdl = tp.LDAModel(k=LDA_K, alpha=0.1, eta=0.01, seed=1)
    docs = [[] for _ in range(d)]
    for doc, w, c in trip:
        docs[doc - 1].extend([str(w)] * int(c))
    for doc in docs:
        if doc:
            mdl.add_doc(doc)
    del docs
    mdl.train(0)
    out = []
    for t in thread_counts:
        mdl.train(1, workers=t)
        t0 = time.perf_counter()
        mdl.train(PASSES["lda"], workers=t)
        per = (time.perf_counter() - t0) / PASSES["lda"]
        out.append((t, {"s_per_pass": per, "quality_key": "ll_per_word", "quality": mdl.ll_per_word,
                        "passes": None, "note": f"tomotopy {tp.__version__}, {tp.isa}, after {mdl.global_step} sweeps"}))
    return out


def scipy_pagerank():
    import numpy as np
    import scipy.sparse as sp

    try:
        import pandas as pd

        e = pd.read_csv(INPUTS["pagerank"], sep=r"\s+", comment="#", header=None, dtype=np.int64).to_numpy()
    except ImportError:
        e = np.loadtxt(INPUTS["pagerank"], dtype=np.int64, comments="#")
    n = int(e.max()) + 1
    outdeg = np.bincount(e[:, 0], minlength=n).astype(np.float64)
    p = sp.csr_matrix((1.0 / outdeg[e[:, 0]], (e[:, 1], e[:, 0])), shape=(n, n))
    dangling = outdeg == 0
    x = np.full(n, 1.0 / n)

    def step(x):
        return 0.15 / n + 0.85 * (p @ x + x[dangling].sum() / n)

    x = step(x)
    t0 = time.perf_counter()
    for _ in range(PASSES["pagerank"]):
        prev, x = x, step(x)
    per = (time.perf_counter() - t0) / PASSES["pagerank"]
    return {"s_per_pass": per, "quality_key": "l1_delta", "quality": float(np.abs(x - prev).sum()),
            "passes": PASSES["pagerank"] + 1, "note": f"scipy {__import__('scipy').__version__} CSR mat-vec, 1 thread"}


def plot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("no matplotlib: no plot")
        return
    apps = [x for x in a.apps.split(",")]
    fig, axes = plt.subplots(2, len(apps), figsize=(5 * len(apps), 8), squeeze=False)
    for j, app in enumerate(apps):
        ax, bx = axes[0][j], axes[1][j]
        rows = [r for r in ROWS if r["app"] == app and r.get("s_per_pass")]
        ps = [r for r in rows if r["system"] == "ps"]
        top = max([r["workers"] for r in ps] or [1])
        ax.plot([1, top], [1, top], "k:", label="linear")
        for label, pick in [("P x 1 (processes)", lambda r: r["threads"] == 1),
                            ("1 x T (threads)", lambda r: r["procs"] == 1),
                            ("2 x T", lambda r: r["procs"] == 2 and r["threads"] > 1)]:
            pts = sorted((r["workers"], r["speedup"]) for r in ps if pick(r) and r.get("speedup"))
            if pts:
                ax.plot(*zip(*pts), "o-", label=label)
        base = next((r for r in ps if r["workers"] == 1), None)
        for r in rows:
            if r["system"] != "ps" and base:
                ax.plot(r["workers"], base["s_per_pass"] / r["s_per_pass"], "s", ms=9,
                        label=f"{r['system']} {r['workers']}T (vs PS 1x1)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_title(f"{app}: speed-up over 1 x 1")
        ax.set_xlabel("workers")
        ax.legend(fontsize=7)
        pts = sorted((r["workers"], r.get("cpu_ratio", float("nan")), r["procs"]) for r in ps)
        for label, pick in [("P x 1", lambda w, p: p == w), ("1 x T", lambda w, p: p == 1)]:
            xs = [(w, c) for w, c, p in pts if pick(w, p)]
            if xs:
                bx.plot(*zip(*xs), "o-", label=label)
        bx.axhline(1.25, color="r", ls=":", label="goal 1.25x")
        bx.set_xscale("log", base=2)
        bx.set_title(f"{app}: CPU s per pass / 1 x 1's")
        bx.set_xlabel("workers")
        bx.legend(fontsize=7)
    import textwrap

    title = f"yarn-submit local[P] --threads T, {a.machine or os.uname().nodename} ({a.cores or os.cpu_count()} cores)"
    fig.suptitle("\n".join(textwrap.wrap(title, 150)), fontsize=10)
    fig.tight_layout()
    fig.savefig(RES / "bench-scale-out.png", dpi=90)
    log("wrote", RES / "bench-scale-out.png")


def main():
    if a.plot_only:
        run = json.loads((RES / "bench-scale-out.json").read_text())
        ROWS.extend(run["runs"])
        a.machine, a.cores = run["meta"].get("machine", ""), run["meta"].get("cores")
        a.apps = ",".join(dict.fromkeys(r["app"] for r in ROWS))
        plot()
        return
    apps = a.apps.split(",")
    generate()
    work = Path(tempfile.mkdtemp(prefix="bench-scale-out-"))
    n = max(1, a.max_workers)
    for app in apps:
        for p, t in shapes(n):
            r = {"app": app, "system": "ps", "procs": p, "threads": t, "workers": p * t}
            r.update(ps_run(app, p, t, work))
            add(r)
        # Many threads in one process share its communication threads (1 by default).
        for p, t in [s for s in shapes(n) if s[1] >= 8] if a.comm_threads > 1 else []:
            r = {"app": app, "system": f"ps comm_threads={a.comm_threads}", "procs": p, "threads": t, "workers": p * t}
            r.update(ps_run(app, p, t, work, ["--conf", f"comm_threads={a.comm_threads}"]))
            add(r)
        # The huge-page hint saved loading time on one VM and cost it on another (docs/GUIDE.md):
        # one thread and all threads of one process without it, to decide the default.
        for p, t in [(1, 1), (1, n)] if a.huge_pages_off else []:
            r = {"app": app, "system": "ps PS_HUGE_PAGES=0", "procs": p, "threads": t, "workers": p * t}
            r.update(ps_run(app, p, t, work, env={"PS_HUGE_PAGES": "0"}))
            add(r)
        if a.no_peers:
            continue
        try:
            if app == "mf" and a.libmf:
                for t in sorted({1, *(w for w in (2, 4, 8, 16, n) if w <= n)}):
                    r = {"app": app, "system": "libmf", "procs": 1, "threads": t, "workers": t}
                    r.update(libmf(t))
                    add(r)
            elif app == "lda":
                for t, v in tomotopy_runs(sorted({1, n})):
                    r = {"app": app, "system": "tomotopy", "procs": 1, "threads": t, "workers": t}
                    r.update(v)
                    add(r)
            elif app == "pagerank":
                r = {"app": app, "system": "scipy", "procs": 1, "threads": 1, "workers": 1}
                r.update(scipy_pagerank())
                add(r)
        except ImportError as e:
            log(f"{app}: peer skipped ({e})")
        except Exception as e:  # a peer's failure must not lose the runs already measured
            log(f"{app}: peer failed: {e!r}")
    shutil.rmtree(work, ignore_errors=True)
    plot()


main()
