"""The tools a user would otherwise pick, timed on our inputs: PyPI libmf (SGD MF), tomotopy and
lda (Gibbs LDA), scipy (sparse mat-vec PageRank), pyspark ALS. Each function returns seconds per
pass (per sweep, per iteration) and a short note, measured after a warm-up so that loading and
set-up are not counted; a missing package raises ImportError. Used by bench_peers.py and
bench_e2e.py."""
import time

import numpy as np
from pathlib import Path


def timed(f):
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def load_ratings(path):
    r = np.loadtxt(path, dtype=np.float32)
    r[:, :2] -= 1  # 0-based ids
    return r


def libmf(ratings, rank=100, threads=2):
    from libmf import mf

    def fit(iters):
        m = mf.MF(k=rank, nr_threads=threads, nr_iters=iters, eta=0.05, lambda_p2=0.05, lambda_q2=0.05, quiet=True)
        return m.fit(ratings)

    t1, _ = timed(lambda: fit(1))
    t4, _ = timed(lambda: fit(4))
    return (t4 - t1) / 3, f"rank {rank}, {threads} threads"


def pyspark_als(ratings, rank=100):
    from pyspark.ml.recommendation import ALS
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[2]").config("spark.driver.memory", "8g").getOrCreate()
    df = spark.createDataFrame([(int(u), int(i), float(v)) for u, i, v in ratings], ["u", "i", "v"]).cache()
    df.count()

    def als(iters):
        return ALS(rank=rank, maxIter=iters, regParam=0.05, userCol="u", itemCol="i", ratingCol="v").fit(df)

    t1, _ = timed(lambda: als(1))
    t3, _ = timed(lambda: als(3))
    return (t3 - t1) / 2, f"rank {rank}, local[2]"


def load_docword(path):
    """UCI docword: D, W, NNZ header lines, then `doc word count` triples (1-based)."""
    with open(path) as f:
        d, w, _ = (int(next(f)) for _ in range(3))
        trip = np.loadtxt(f, dtype=np.int64)
    return d, w, trip


def tomotopy(docword, k=100, workers=2, sweeps=5):
    """Seconds per sweep, note, and the per-sweep log-likelihood per token tomotopy reports."""
    import tomotopy as tp

    d, _, trip = docword
    tokens = int(trip[:, 2].sum())
    mdl = tp.LDAModel(k=k, alpha=0.1, eta=0.01, seed=1)
    docs = [[] for _ in range(d)]
    for doc, w, c in trip:
        docs[doc - 1].extend([f"w{w}"] * int(c))
    for doc in docs:
        if doc:
            mdl.add_doc(doc)
    mdl.train(0, workers=workers)
    curve, total = [], 0.0
    for _ in range(sweeps):
        t, _ = timed(lambda: mdl.train(1, workers=workers))
        total += t
        curve.append((total, mdl.ll_per_word))
    per = total / sweeps
    return per, f"{tokens / per / 1e6:.1f} M tokens/s, {workers} workers", curve


def lda_pkg(docword, k=100):
    import lda
    import scipy.sparse as sp

    d, w, trip = docword
    tokens = int(trip[:, 2].sum())
    x = sp.csr_matrix((trip[:, 2], (trip[:, 0] - 1, trip[:, 1] - 1)), shape=(d, w)).astype(np.int64)
    t1, _ = timed(lambda: lda.LDA(n_topics=k, n_iter=1, alpha=0.1, eta=0.01, random_state=1).fit(x))
    t3, _ = timed(lambda: lda.LDA(n_topics=k, n_iter=3, alpha=0.1, eta=0.01, random_state=1).fit(x))
    per = (t3 - t1) / 2
    return per, f"{tokens / per / 1e6:.1f} M tokens/s, 1 thread"


def load_graph(graph_path):
    return np.loadtxt(graph_path, dtype=np.int64, comments="#")


def scipy_pagerank(graph, iters=10):
    """Seconds per iteration of scipy's CSR mat-vec; `graph`: a path or `load_graph`'s edges."""
    import scipy.sparse as sp

    e = load_graph(graph) if isinstance(graph, (str, Path)) else graph
    n = int(e.max()) + 1
    outdeg = np.bincount(e[:, 0], minlength=n).astype(np.float64)
    p = sp.csr_matrix((1.0 / outdeg[e[:, 0]], (e[:, 1], e[:, 0])), shape=(n, n))
    x = np.full(n, 1.0 / n)
    dangling = outdeg == 0

    def step(x):
        return 0.15 / n + 0.85 * (p @ x + x[dangling].sum() / n)

    def run(x):
        for _ in range(iters):
            x = step(x)
        return x

    step(x)
    t, _ = timed(lambda: run(x))
    return t / iters, f"{n} nodes, {len(e)} edges"
