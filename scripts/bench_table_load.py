"""Loading the same ratings from text, CSV with a header and Parquet: `yarn-submit --master
local[P] --threads T mf --passes 1` on each (default settings), the stats' `load_s` (worker 0's
reading, exchange and set-up) and `wall_s`, alternating the formats run by run. The Parquet
directory is written by pyarrow as Spark writes tables (snappy, one `part-*.parquet` per text
part file, `_SUCCESS`); the CSV by pyarrow's CSV writer with a header line. Writes
results/bench-table-load.{csv,json,png}.

    usage: bench_table_load.py [--ratings N] [--runs R] [--procs P] [--threads T] [--hdfs URL]

With `--hdfs URL` (a running HDFS, e.g. scripts/hdfs-up.sh's HDFS_URL) the three inputs are copied
there with Hadoop's own shell (`FsShell -put`, from the jars scripts/hdfs-up.sh caches) and read
from HDFS as well.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

import pyarrow as pa
import pyarrow.csv as pc
import pyarrow.parquet as pq

ap = argparse.ArgumentParser()
ap.add_argument("--ratings", type=int, default=4_000_000)
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--procs", type=int, default=1)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--bin", default="target/release")
ap.add_argument("--data", default="data/bench-table-load")
ap.add_argument("--results", default="results")
ap.add_argument("--hdfs", help="also read the inputs from this HDFS URL")
ap.add_argument("--hadoop", default="data/hadoop-2.7.3", help="directory of Hadoop's jars (for FsShell)")
a = ap.parse_args()

data = a.data
text = os.path.join(data, "text")
if not os.path.isdir(text):
    os.makedirs(data, exist_ok=True)
    subprocess.run([os.path.join(a.bin, "ps-runtime"), "gen", "ratings", "--out", text, "--ratings",
                    str(a.ratings), "--users", str(a.ratings // 8), "--items", "17770", "--parts", "16"], check=True)
parquet, csv = os.path.join(data, "parquet"), os.path.join(data, "csv")
if not os.path.isdir(parquet):
    os.makedirs(parquet)
    os.makedirs(csv)
    types = {"user": pa.int64(), "item": pa.int64(), "rating": pa.float32()}
    for f in sorted(glob.glob(os.path.join(text, "part-*"))):
        t = pc.read_csv(f, read_options=pc.ReadOptions(column_names=list(types)),
                        parse_options=pc.ParseOptions(delimiter="\t"), convert_options=pc.ConvertOptions(column_types=types))
        name = os.path.basename(f).split(".")[0]
        pq.write_table(t, os.path.join(parquet, name + ".snappy.parquet"), compression="snappy")
        pc.write_csv(t, os.path.join(csv, name + ".csv"), write_options=pc.WriteOptions(quoting_style="none"))
    open(os.path.join(parquet, "_SUCCESS"), "w").close()


def size(d):
    return sum(os.path.getsize(f) for f in glob.glob(os.path.join(d, "*")))


inputs = {"text": (text, []), "csv": (csv, ["--user-col", "user", "--item-col", "item", "--rating-col", "rating"]),
          "parquet": (parquet, [])}
where = [("local", lambda fmt: inputs[fmt][0])]
if a.hdfs:
    base = a.hdfs.rstrip("/") + "/bench-table-load"
    env = dict(os.environ, HADOOP_USER_NAME=os.environ.get("HADOOP_USER_NAME", os.environ.get("USER", "root")))
    # Hadoop's shell needs a core-site.xml on its class path: scripts/hdfs-up.sh's HADOOP_CONF_DIR.
    cp = ":".join(filter(None, [os.environ.get("HADOOP_CONF_DIR"), os.path.join(a.hadoop, "*")]))
    shell = ["java", "-cp", cp, "org.apache.hadoop.fs.FsShell"]
    subprocess.run(shell + ["-rm", "-r", "-f", base], env=env, check=False, capture_output=True)
    subprocess.run(shell + ["-mkdir", "-p", base], env=env, check=True, capture_output=True)
    for fmt, (d, _) in inputs.items():
        subprocess.run(shell + ["-put", d, f"{base}/{fmt}"], env=env, check=True, capture_output=True)
    where.append(("hdfs", lambda fmt: f"{base}/{fmt}"))

rows = []
with tempfile.TemporaryDirectory() as tmp:
    for r in range(a.runs):
        for place, url in where:
            for fmt, (_, cols) in inputs.items():
                stats = os.path.join(tmp, "stats.json")
                cmd = [os.path.join(a.bin, "yarn-submit"), "--master", f"local[{a.procs}]", "--threads", str(a.threads),
                       "--stats", stats, "mf", "--input", url(fmt), *cols, "--passes", "1", "--samples", "1",
                       "--output", os.path.join(tmp, "out"), "--overwrite"]
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
                if p.returncode != 0:
                    sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr[-3000:]}")
                s = json.load(open(stats))
                rows.append(dict(run=r, where=place, format=fmt, load_s=s["load_s"], wall_s=s["wall_s"],
                                 bytes=size(inputs[fmt][0]), rmse=s["objective"][-1].get("rmse")))
                print(rows[-1], flush=True)

summary = []
for place, _ in where:
    base_load = statistics.median(x["load_s"] for x in rows if x["where"] == place and x["format"] == "text")
    for fmt in inputs:
        xs = [x for x in rows if x["where"] == place and x["format"] == fmt]
        load = statistics.median(x["load_s"] for x in xs)
        summary.append(dict(where=place, format=fmt, median_load_s=load, load_vs_text=load / base_load,
                            median_wall_s=statistics.median(x["wall_s"] for x in xs), bytes=xs[0]["bytes"],
                            rmse=xs[0]["rmse"]))
for s in summary:
    print(f"{s['where']:6} {s['format']:8} load {s['median_load_s']:.3f} s ({s['load_vs_text']:.2f}x text)  "
          f"{s['bytes'] / 1e6:.0f} MB  rmse {s['rmse']}")

os.makedirs(a.results, exist_ok=True)
out = os.path.join(a.results, "bench-table-load")
machine = f"{os.uname().nodename} ({os.cpu_count()} cores)"
json.dump(dict(machine=machine, ratings=a.ratings, procs=a.procs, threads=a.threads, runs=rows, summary=summary,
               command="yarn-submit --master local[P] --threads T mf --passes 1 (default settings)"),
          open(out + ".json", "w"), indent=1)
with open(out + ".csv", "w") as f:
    f.write("where,format,median_load_s,load_vs_text,median_wall_s,bytes,rmse\n")
    for s in summary:
        f.write(f"{s['where']},{s['format']},{s['median_load_s']},{s['load_vs_text']},{s['median_wall_s']},"
                f"{s['bytes']},{s['rmse']}\n")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 3.5))
    labels = [f"{s['where']}\n{s['format']}" for s in summary]
    ax.bar(labels, [s["median_load_s"] for s in summary], color=["#888", "#c84", "#48c"] * len(where))
    ax.set_ylabel("load_s (median)")
    ax.set_title(f"mf load, {a.ratings / 1e6:g}M ratings, local[{a.procs}] x {a.threads} threads, {machine}",
                 fontsize=8)
    fig.tight_layout()
    fig.savefig(out + ".png", dpi=120)
except ImportError:
    print("matplotlib missing: no plot")
