#!/usr/bin/env python3
"""Implicit feedback: `yarn-submit mf --implicit --recommend 10` against the `implicit` package's
BPR and ALS (its defaults, the same rank and threads) and a most-popular list, on the same split
of the same interactions, each system's top-10 lists scored here by one piece of code
(precision, recall and NDCG at 10, binary relevance: a held-out item of the user).

Datasets: MovieLens 100K with ratings of 4 and 5 as interactions (scripts/fetch-data.sh
ml-100k), and generated Netflix-shaped ratings (`ps-runtime gen ratings`) thresholded the same
way. 20% of the interactions, picked by a seeded draw, are held out. Our job runs at several shapes (P processes x T threads) with its default settings, so the
table shows what the number of workers does to the lists; its wall time is the whole command
(load and output included), the peers' is fit plus recommend.

    data/.venv-peers/bin/python scripts/bench_implicit.py [--shapes 1x1,2x1,4x2] [--generated N]

Writes results/bench-implicit.{csv,json,png}. Needs numpy, scipy, implicit (and matplotlib for
the plot) in the venv; scripts/bench-implicit.sh installs them.
"""
import argparse
import collections
import csv
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

ap = argparse.ArgumentParser()
ap.add_argument("--shapes", default="1x1,2x1,1x2,4x2")
ap.add_argument("--rank", type=int, default=32)
ap.add_argument("--passes", type=int, default=20)
ap.add_argument("--threads", type=int, default=2, help="threads of the peers")
ap.add_argument("--generated", type=int, default=2_000_000, help="generated ratings (0: none)")
ap.add_argument("--bin", default="target/release")
ap.add_argument("--data", default="data/bench-implicit")
ap.add_argument("--results", default="results")
a = ap.parse_args()

BIN, DATA, RES = Path(a.bin), Path(a.data), Path(a.results)
DATA.mkdir(parents=True, exist_ok=True)
RES.mkdir(parents=True, exist_ok=True)
K = 10


def log(*x):
    print(*x, file=sys.stderr, flush=True)


def positives(src, dst):
    """Lines `user item` of the ratings of 4 or more in `src`."""
    with open(src) as f, open(dst, "w") as out:
        for line in f:
            p = line.split()
            if len(p) >= 3 and float(p[2]) >= 4:
                out.write(f"{p[0]}\t{p[1]}\n")


def split(path, seed=1, fraction=0.2):
    rng = random.Random(seed)
    train, test = [], []
    for line in open(path):
        u, i = line.split()[:2]
        (test if rng.random() < fraction else train).append((u, i))
    return train, test


def measures(lists, train, test):
    seen, held = collections.defaultdict(set), collections.defaultdict(set)
    for u, i in train:
        seen[u].add(i)
    for u, i in test:
        held[u].add(i)
    gain = [1 / math.log2(r + 2) for r in range(K)]
    p = r = n = users = 0
    for u, h in held.items():
        h = h - seen[u]
        if not h:
            continue
        hit = [i in h for i in lists.get(u, [])[:K]]
        p += sum(hit) / K
        r += sum(hit) / len(h)
        n += sum(g for g, x in zip(gain, hit) if x) / sum(gain[: min(K, len(h))])
        users += 1
    return {"precision_at_10": p / users, "recall_at_10": r / users, "ndcg_at_10": n / users, "users": users}


def ours(name, train_path, procs, threads):
    out = DATA / f"{name}-out-{procs}x{threads}"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [str(BIN / "yarn-submit"), "--master", f"local[{procs}]", "--threads", str(threads),
           "mf", "--implicit", "--input", str(train_path), "--output", str(out),
           "--rank", str(a.rank), "--passes", str(a.passes), "--recommend", str(K)]
    t = time.time()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.time() - t
    lists = collections.defaultdict(list)
    for f in sorted((out / "recommendations").glob("part-*")):
        for line in open(f):
            u, i, _ = line.split("\t")
            lists[u].append(i)
    return lists, wall


def peers(train, threads):
    import numpy as np
    import scipy.sparse as sp
    from implicit.cpu.als import AlternatingLeastSquares
    from implicit.cpu.bpr import BayesianPersonalizedRanking
    users = sorted({u for u, _ in train})
    items = sorted({i for _, i in train})
    ui, ii = {u: k for k, u in enumerate(users)}, {i: k for k, i in enumerate(items)}
    rows = np.array([ui[u] for u, _ in train])
    cols = np.array([ii[i] for _, i in train])
    m = sp.csr_matrix((np.ones(len(train), dtype=np.float32), (rows, cols)), shape=(len(users), len(items)))
    m.sum_duplicates()
    m.data[:] = 1.0
    out = {}
    for name, model in [("implicit BPR", BayesianPersonalizedRanking(factors=a.rank, num_threads=threads,
                                                                      random_state=1)),
                        ("implicit ALS", AlternatingLeastSquares(factors=a.rank, num_threads=threads,
                                                                  random_state=1))]:
        t = time.time()
        model.fit(m, show_progress=False)
        ids, _ = model.recommend(np.arange(len(users)), m, N=K, filter_already_liked_items=True)
        wall = time.time() - t
        out[name] = ({users[k]: [items[j] for j in row if j >= 0] for k, row in enumerate(ids)}, wall)
    return out


def popular(train):
    count = collections.Counter(i for _, i in train)
    top = [i for i, _ in count.most_common(K + 200)]
    seen = collections.defaultdict(set)
    for u, i in train:
        seen[u].add(i)
    return {u: [i for i in top if i not in s][:K] for u, s in seen.items()}


def datasets():
    ml = Path("data/ml-100k/ratings.tsv")
    if ml.exists():
        positives(ml, DATA / "ml-100k.tsv")
        yield "ml-100k (ratings >= 4)", DATA / "ml-100k.tsv"
    else:
        log("bench_implicit: data/ml-100k/ratings.tsv missing (scripts/fetch-data.sh ml-100k): skipped")
    if a.generated:
        gen = DATA / f"gen-{a.generated}.tsv"
        if not gen.exists():
            subprocess.run([str(BIN / "ps-runtime"), "gen", "ratings", "--out", str(gen), "--ratings",
                            str(a.generated), "--users", str(a.generated // 40), "--items", "5000"],
                           check=True, stdout=subprocess.DEVNULL)
        positives(gen, DATA / "gen.tsv")
        yield f"generated {a.generated // 1_000_000}M ratings (>= 4)", DATA / "gen.tsv"


def main():
    rows = []
    for name, path in datasets():
        train, test = split(path)
        tag = "ml" if name.startswith("ml") else "gen"
        train_path = DATA / f"{tag}-train.tsv"
        with open(train_path, "w") as f:
            f.writelines(f"{u}\t{i}\n" for u, i in train)
        log(f"{name}: {len(train)} training, {len(test)} held-out interactions")
        runs = [("most popular", popular(train), 0.0)]
        for shape in a.shapes.split(","):
            p, t = (int(x) for x in shape.split("x"))
            lists, wall = ours(tag, train_path, p, t)
            runs.append((f"ps {p}x{t}", lists, wall))
        runs += [(k, v[0], v[1]) for k, v in peers(train, a.threads).items()]
        for system, lists, wall in runs:
            m = measures(lists, train, test)
            rows.append({"dataset": name, "system": system, "wall_s": round(wall, 2), **m})
            log(f"  {system:14s} ndcg@10 {m['ndcg_at_10']:.4f} precision@10 {m['precision_at_10']:.4f} "
                f"recall@10 {m['recall_at_10']:.4f} ({wall:.1f}s)")
    with open(RES / "bench-implicit.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    meta = {"rank": a.rank, "passes": a.passes, "k": K, "held_out": 0.2, "peer_threads": a.threads,
            "machine": f"{os.uname().nodename} ({os.cpu_count()} cores)",
            "command": "yarn-submit --master local[P] --threads T mf --implicit --rank R --passes N --recommend 10"}
    json.dump({"settings": meta, "rows": rows}, open(RES / "bench-implicit.json", "w"), indent=1)
    plot(rows)


def plot(rows):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("bench_implicit: no matplotlib, no plot")
        return
    sets = list(dict.fromkeys(r["dataset"] for r in rows))
    fig, axes = plt.subplots(1, len(sets), figsize=(6 * len(sets), 4), squeeze=False)
    for ax, s in zip(axes[0], sets):
        rs = [r for r in rows if r["dataset"] == s]
        ax.barh([r["system"] for r in rs], [r["ndcg_at_10"] for r in rs],
                color=["#888" if not r["system"].startswith("ps") else "#36c" for r in rs])
        ax.set_title(s)
        ax.set_xlabel("held-out NDCG@10")
        ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(RES / "bench-implicit.png", dpi=110)


main()
