#!/usr/bin/env python3
"""What numbering ids costs: the same ratings as a Parquet table three times, with int ids that
fit u32 (no dictionary), with 64-bit ids (user + 10^12, item + 10^12) and with string ids
("user-N", "item-N"), each trained by the user's command (`yarn-submit --master local[P] mf`,
one pass) and compared on peak RSS per process (the stats' `peak_rss_bytes`, the largest of the
job's processes) and load time (`load_s`), medians of --repeat runs (peak RSS varies by tens of
MB from run to run with the allocator's per-thread arenas). The issue's bound: the dictionary may raise peak RSS
by at most 30%.

    data/.venv-peers/bin/python scripts/bench_ids.py [--ratings N] [--procs P]

Writes results/bench-ids.{csv,json}. Needs pyarrow (data/.venv-peers).
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ap = argparse.ArgumentParser()
ap.add_argument("--ratings", type=int, default=20_000_000)
ap.add_argument("--procs", type=int, default=2)
ap.add_argument("--parts", type=int, default=8)
ap.add_argument("--repeat", type=int, default=3, help="runs per variant; medians are reported")
ap.add_argument("--bin", default="target/release")
ap.add_argument("--data", default="data/bench-ids")
ap.add_argument("--results", default="results")
a = ap.parse_args()

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

BIN, DATA, RES = Path(a.bin), Path(a.data), Path(a.results)
DATA.mkdir(parents=True, exist_ok=True)
RES.mkdir(parents=True, exist_ok=True)
tsv = DATA / f"ratings-{a.ratings}.tsv"
if not tsv.exists():
    subprocess.run([str(BIN / "ps-runtime"), "gen", "ratings", "--ratings", str(a.ratings), "--out", str(tsv)],
                   check=True)

VARIANTS = {
    "int ids (u32)": lambda c: c,
    "64-bit ids": lambda c: pc.add(c.cast(pa.int64()), pa.scalar(10**12, pa.int64())),
    "string ids": None,
}


def table(kind):
    out = DATA / f"{a.ratings}-{kind.split()[0]}"
    if (out / "_SUCCESS").exists():
        return out
    opts = pcsv.ReadOptions(column_names=["user", "item", "rating"])
    t = pcsv.read_csv(tsv, read_options=opts, parse_options=pcsv.ParseOptions(delimiter="\t"))
    cols = {}
    for name in ("user", "item"):
        c = t.column(name)
        if kind == "string ids":
            cols[name] = pc.binary_join_element_wise(pa.scalar(f"{name}-"), c.cast(pa.string()), "")
        else:
            cols[name] = VARIANTS[kind](c)
    cols["rating"] = t.column("rating").cast(pa.float32())
    t = pa.table(cols)
    out.mkdir(parents=True, exist_ok=True)
    rows = t.num_rows
    for p in range(a.parts):
        lo, hi = p * rows // a.parts, (p + 1) * rows // a.parts
        pq.write_table(t.slice(lo, hi - lo), out / f"part-{p:05d}.snappy.parquet", compression="snappy")
    (out / "_SUCCESS").touch()
    return out


rows = []
with tempfile.TemporaryDirectory() as tmp:
    for kind in VARIANTS:
        inp = table(kind)
        stats = Path(tmp) / "stats.json"
        cmd = [str(BIN / "yarn-submit"), "--master", f"local[{a.procs}]", "--stats", str(stats), "mf", "--input",
               str(inp), "--rank", "10", "--passes", "1", "--samples", "1", "--output", str(Path(tmp) / "out")]
        runs = []
        for _ in range(a.repeat):
            print("$", " ".join(cmd), flush=True)
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"{kind}: job failed:\n{r.stderr[-3000:]}")
            runs.append(json.loads(stats.read_text()))
            subprocess.run(["rm", "-rf", str(Path(tmp) / "out")])
        med = lambda k: sorted(x[k] for x in runs)[len(runs) // 2]
        row = {"ids": kind, "ratings": a.ratings, "processes": a.procs,
               "peak_rss_mb": round(med("peak_rss_bytes") / 2**20, 1), "load_s": round(med("load_s"), 2),
               "wall_s": round(med("wall_s"), 2), "rss_mb_runs": [round(x["peak_rss_bytes"] / 2**20) for x in runs]}
        rows.append(row)
        print(row, flush=True)

base = rows[0]
for r in rows:
    r["rss_ratio"] = round(r["peak_rss_mb"] / base["peak_rss_mb"], 3)
    r["load_ratio"] = round(r["load_s"] / base["load_s"], 3)
with open(RES / "bench-ids.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)
(RES / "bench-ids.json").write_text(json.dumps({"command": "yarn-submit --master local[P] mf --rank 10 --passes 1",
                                                "cores": os.cpu_count(), "runs": rows}, indent=1))
for r in rows:
    print(f"{r['ids']:>14}: peak RSS {r['peak_rss_mb']:8.1f} MB ({r['rss_ratio']:.2f}x), load {r['load_s']:.2f} s "
          f"({r['load_ratio']:.2f}x)")
