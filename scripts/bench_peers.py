#!/usr/bin/env python3
"""Runs the tools a user would otherwise pick on the data `ps-bench apps` generated, with 2
threads, and prints their time per pass beside ours (from results/bench-apps.json, measured in
the same `scripts/bench-peers.sh` run) as ratios. Writes results/bench-peers.{csv,json}.
Peers: PyPI libmf (SGD MF), tomotopy and lda (Gibbs LDA), scipy (sparse mat-vec PageRank),
and with --spark, pyspark ALS (the Hadoop-world choice)."""
import argparse
import json
import time
from pathlib import Path

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--data", default="data/bench")
ap.add_argument("--results", default="results")
ap.add_argument("--mf-ratings", type=int, default=5_000_000)
ap.add_argument("--lda-docs", type=int, default=10_000)
ap.add_argument("--pr-nodes", type=int, default=1_000_000)
ap.add_argument("--spark", action="store_true")
a = ap.parse_args()
data, res = Path(a.data), Path(a.results)
ours = {r["app"]: r for r in json.loads((res / "bench-apps.json").read_text())}
rows = []


def report(app, peer, pass_s, note=""):
    mine = ours.get(app, {}).get("ps_pass_s")
    ratio = mine / pass_s if mine and pass_s else float("nan")
    print(f"{app:9} {peer:14} {pass_s:8.3f} s/pass | ours {mine if mine is None else round(mine, 3)} s/pass | ours/peer {ratio:.2f} {note}")
    rows.append({"app": app, "peer": peer, "peer_pass_s": pass_s, "ps_pass_s": mine, "ratio": ratio, "note": note})


def timed(f):
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


# ---- matrix factorization ----
r = np.loadtxt(data / f"netflix-{a.mf_ratings}.tsv", dtype=np.float32)
r[:, :2] -= 1  # 0-based ids
try:
    from libmf import mf

    def fit(iters):
        m = mf.MF(k=100, nr_threads=2, nr_iters=iters, eta=0.05, lambda_p2=0.05, lambda_q2=0.05, quiet=True)
        return m.fit(r)

    t1, _ = timed(lambda: fit(1))
    t4, _ = timed(lambda: fit(4))
    report("mf", "libmf (PyPI)", (t4 - t1) / 3, "rank 100, 2 threads")
except Exception as e:  # noqa: BLE001 - report any peer failure and go on
    print("libmf unavailable:", e)

if a.spark:
    try:
        from pyspark.ml.recommendation import ALS
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.master("local[2]").config("spark.driver.memory", "8g").getOrCreate()
        df = spark.createDataFrame([(int(u), int(i), float(v)) for u, i, v in r], ["u", "i", "v"]).cache()
        df.count()

        def als(iters):
            return ALS(rank=100, maxIter=iters, regParam=0.05, userCol="u", itemCol="i", ratingCol="v").fit(df)

        t1, _ = timed(lambda: als(1))
        t3, _ = timed(lambda: als(3))
        report("mf", "pyspark ALS", (t3 - t1) / 2, "rank 100, local[2]")
    except Exception as e:  # noqa: BLE001
        print("pyspark unavailable:", e)

# ---- LDA ----
corpus = data / f"nyt-{a.lda_docs}" / "docword.synth.txt"
with open(corpus) as f:
    D, W, _ = (int(next(f)) for _ in range(3))
    trip = np.loadtxt(f, dtype=np.int64)
tokens = int(trip[:, 2].sum())
try:
    import tomotopy as tp

    mdl = tp.LDAModel(k=100, alpha=0.1, eta=0.01, seed=1)
    docs = [[] for _ in range(D)]
    for d, w, c in trip:
        docs[d - 1].extend([f"w{w}"] * int(c))
    for doc in docs:
        if doc:
            mdl.add_doc(doc)
    mdl.train(0, workers=2)
    t, _ = timed(lambda: mdl.train(5, workers=2))
    report("lda", "tomotopy", t / 5, f"{tokens / (t / 5) / 1e6:.1f} M tokens/s")
except Exception as e:  # noqa: BLE001
    print("tomotopy unavailable:", e)
try:
    import lda as lda_pkg
    import scipy.sparse as sp

    X = sp.csr_matrix((trip[:, 2], (trip[:, 0] - 1, trip[:, 1] - 1)), shape=(D, W)).astype(np.int64)
    t1, _ = timed(lambda: lda_pkg.LDA(n_topics=100, n_iter=1, alpha=0.1, eta=0.01, random_state=1).fit(X))
    t3, _ = timed(lambda: lda_pkg.LDA(n_topics=100, n_iter=3, alpha=0.1, eta=0.01, random_state=1).fit(X))
    report("lda", "lda (PyPI)", (t3 - t1) / 2, f"{tokens / ((t3 - t1) / 2) / 1e6:.1f} M tokens/s, 1 thread")
except Exception as e:  # noqa: BLE001
    print("lda unavailable:", e)

# ---- PageRank ----
try:
    import scipy.sparse as sp

    e = np.loadtxt(data / f"graph-{a.pr_nodes}.tsv", dtype=np.int64, comments="#")
    n = int(e.max()) + 1
    outdeg = np.bincount(e[:, 0], minlength=n).astype(np.float64)
    P = sp.csr_matrix((1.0 / outdeg[e[:, 0]], (e[:, 1], e[:, 0])), shape=(n, n))
    x = np.full(n, 1.0 / n)
    dangling = outdeg == 0

    def step(x):
        return 0.15 / n + 0.85 * (P @ x + x[dangling].sum() / n)

    def ten(x):
        for _ in range(10):
            x = step(x)
        return x

    step(x)
    t, _ = timed(lambda: ten(x))
    report("pagerank", "scipy CSR", t / 10, f"{n} nodes, {len(e)} edges")
except Exception as e:  # noqa: BLE001
    print("scipy unavailable:", e)

(res / "bench-peers.json").write_text(json.dumps(rows, indent=1))
with open(res / "bench-peers.csv", "w") as f:
    f.write("app,peer,peer_pass_s,ps_pass_s,ratio,note\n")
    for r_ in rows:
        f.write(f"{r_['app']},{r_['peer']},{r_['peer_pass_s']},{r_['ps_pass_s']},{r_['ratio']},\"{r_['note']}\"\n")
print("results written to", res / "bench-peers.{csv,json}")
