#!/usr/bin/env python3
"""Runs the tools a user would otherwise pick on the data `ps-bench apps` generated, with 2
threads, and prints their time per pass beside ours (from results/bench-apps.json, measured in
the same `scripts/bench-peers.sh` run) as ratios. Writes results/bench-peers.{csv,json}.
Peers: PyPI libmf (SGD MF), tomotopy and lda (Gibbs LDA), scipy (sparse mat-vec PageRank),
and with --spark, pyspark ALS (the Hadoop-world choice)."""
import argparse
import json
from pathlib import Path

import peers

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


# ---- matrix factorization ----
r = peers.load_ratings(data / f"netflix-{a.mf_ratings}.tsv")
for name, f in [("libmf (PyPI)", peers.libmf)] + ([("pyspark ALS", peers.pyspark_als)] if a.spark else []):
    try:
        report("mf", name, *f(r))
    except Exception as e:  # noqa: BLE001 - report any peer failure and go on
        print(name, "unavailable:", e)

# ---- LDA ----
dw = peers.load_docword(data / f"nyt-{a.lda_docs}" / "docword.synth.txt")
try:
    report("lda", "tomotopy", *peers.tomotopy(dw)[:2])
except Exception as e:  # noqa: BLE001
    print("tomotopy unavailable:", e)
try:
    report("lda", "lda (PyPI)", *peers.lda_pkg(dw))
except Exception as e:  # noqa: BLE001
    print("lda unavailable:", e)

# ---- PageRank ----
try:
    report("pagerank", "scipy CSR", *peers.scipy_pagerank(data / f"graph-{a.pr_nodes}.tsv"))
except Exception as e:  # noqa: BLE001
    print("scipy unavailable:", e)

(res / "bench-peers.json").write_text(json.dumps(rows, indent=1))
with open(res / "bench-peers.csv", "w") as f:
    f.write("app,peer,peer_pass_s,ps_pass_s,ratio,note\n")
    for r_ in rows:
        f.write(f"{r_['app']},{r_['peer']},{r_['peer_pass_s']},{r_['ps_pass_s']},{r_['ratio']},\"{r_['note']}\"\n")
print("results written to", res / "bench-peers.{csv,json}")
