"""What checkpoints cost on HDFS against local disk: `yarn-submit --master local[P] mf` with
checkpoints every E clocks to a local directory, to HDFS (the default `checkpoint.when_busy=skip`:
a checkpoint due while the one before is still being written is skipped), to HDFS waiting for
every one (`when_busy=wait`), and none, alternating run by run (the stats' `wall_s`, the workers'
`wait_s` and `snapshots_skipped`). Beside it, Hadoop's own client writing the same bytes:
`FsShell -put` of one checkpoint's directory (its JVM start, measured with `-mkdir`, taken off).
Writes results/bench-checkpoint.{csv,json} (and a .png with matplotlib).

    usage: bench_checkpoint.py --hdfs URL [--ratings N] [--passes K] [--every E] [--runs R]

Needs a running HDFS (scripts/hdfs-up.sh prints HDFS_URL and HADOOP_CONF_DIR) and Hadoop's jars
(data/hadoop-2.7.3, cached by scripts/hdfs-up.sh).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--hdfs", default=os.environ.get("HDFS_URL"), help="HDFS URL (default $HDFS_URL)")
ap.add_argument("--ratings", type=int, default=100_000, help="generated ratings (MovieLens-small shape)")
ap.add_argument("--passes", type=int, default=100)
ap.add_argument("--every", type=int, default=10, help="clocks between checkpoints")
ap.add_argument("--procs", type=int, default=2)
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--bin", default="target/release")
ap.add_argument("--data", default="data/bench-checkpoint")
ap.add_argument("--results", default="results")
ap.add_argument("--hadoop", default="data/hadoop-2.7.3", help="directory of Hadoop's jars (for FsShell)")
a = ap.parse_args()
assert a.hdfs, "--hdfs or HDFS_URL (scripts/hdfs-up.sh)"

ratings = os.path.join(a.data, f"ratings-{a.ratings}.tsv")
if not os.path.exists(ratings):
    os.makedirs(a.data, exist_ok=True)
    users, items = max(a.ratings // 160, 10), max(a.ratings // 10, 10)
    subprocess.run([os.path.join(a.bin, "ps-runtime"), "gen", "ratings", "--out", ratings, "--ratings",
                    str(a.ratings), "--users", str(users), "--items", str(items)], check=True)

env = dict(os.environ, HADOOP_USER_NAME=os.environ.get("HADOOP_USER_NAME", os.environ.get("USER", "root")))
cp = ":".join(filter(None, [os.environ.get("HADOOP_CONF_DIR"), os.path.join(a.hadoop, "*")]))
shell = ["java", "-cp", cp, "org.apache.hadoop.fs.FsShell"]
base = a.hdfs.rstrip("/") + "/bench-checkpoint"


WHERE = ["none", "local", "hdfs", "hdfs-wait"]


def job(tmp, where, run):
    """One job; returns (stats, checkpoint url or None)."""
    stats = os.path.join(tmp, "stats.json")
    cmd = [os.path.join(a.bin, "yarn-submit"), "--master", f"local[{a.procs}]", "--stats", stats]
    url = None
    if where != "none":
        url = os.path.join(tmp, f"ck-{run}") if where == "local" else f"{base}/{where}-{run}"
        cmd += ["--checkpoint", url, "--checkpoint-every", str(a.every)]
        if where == "hdfs-wait":
            cmd += ["--conf", "checkpoint.when_busy=wait"]
    cmd += ["mf", "--input", ratings, "--passes", str(a.passes)]
    subprocess.run(cmd, check=True, capture_output=True)
    with open(stats) as f:
        return json.load(f), url


def timed(args):
    t0 = time.perf_counter()
    subprocess.run(shell + args, env=env, check=True, capture_output=True)
    return time.perf_counter() - t0


rows, kept = [], None
subprocess.run(shell + ["-rm", "-r", "-f", base], env=env, capture_output=True)
with tempfile.TemporaryDirectory() as tmp:
    for run in range(a.runs):
        for where in WHERE:
            s, url = job(tmp, where, run)
            rows.append({"run": run, "where": where, "wall_s": s["wall_s"], "wait_s": s["wait_s"],
                         "clocks": s["clocks"], "skipped": s.get("snapshots_skipped", 0)})
            print(f"run {run} {where:9}: {s['wall_s']:.2f} s wall, workers waited {s['wait_s']:.2f} s, "
                  f"{s.get('snapshots_skipped', 0)} checkpoints skipped", flush=True)
            if where == "local":
                dirs = sorted(d for d in os.listdir(url) if d.startswith("clock-"))
                kept = os.path.join(tmp, "one-checkpoint")
                shutil.rmtree(kept, ignore_errors=True)
                shutil.copytree(os.path.join(url, dirs[-1]), kept)
    # Hadoop's own client writing one checkpoint's files (the JVM's start taken off).
    files = os.listdir(kept)
    ck_bytes = sum(os.path.getsize(os.path.join(kept, f)) for f in files)
    jvm = min(timed(["-mkdir", "-p", f"{base}/jvm-{i}"]) for i in range(2))
    put = min(timed(["-put", kept, f"{base}/put-{i}"]) for i in range(2)) - jvm

clocks = rows[0]["clocks"]
checkpoints = -(-clocks // a.every)
wall = {w: statistics.median(r["wall_s"] for r in rows if r["where"] == w) for w in WHERE}
skipped = {w: statistics.median(r["skipped"] for r in rows if r["where"] == w) for w in WHERE}
# What one checkpoint costs when every one is written.
per_ck = (wall["hdfs-wait"] - wall["none"]) / checkpoints
summary = {
    "ratings": a.ratings, "passes": a.passes, "every": a.every, "processes": a.procs, "clocks": clocks,
    "checkpoints": checkpoints, "checkpoint_bytes": ck_bytes, "checkpoint_files": len(files),
    "wall_s": wall, "skipped": skipped, "hdfs_over_local": wall["hdfs"] / wall["local"],
    "hdfs_wait_over_local": wall["hdfs-wait"] / wall["local"],
    "hdfs_s_per_checkpoint": per_ck, "hdfs_mb_s": ck_bytes / 1e6 / per_ck if per_ck > 0 else None,
    "hadoop_put_s_per_checkpoint": put, "hadoop_put_mb_s": ck_bytes / 1e6 / put,
    "runs": rows,
}
print(f"{checkpoints} checkpoints of {ck_bytes / 1e6:.2f} MB ({len(files)} files): wall none {wall['none']:.2f} s, "
      f"local {wall['local']:.2f} s ({skipped['local']:.0f} skipped), HDFS {wall['hdfs']:.2f} s = "
      f"{summary['hdfs_over_local']:.1f}x local ({skipped['hdfs']:.0f} skipped), HDFS waiting for every one "
      f"{wall['hdfs-wait']:.2f} s = {summary['hdfs_wait_over_local']:.1f}x local; "
      f"{per_ck:.3f} s per HDFS checkpoint against {put:.3f} s for Hadoop's FsShell -put of the same files")
os.makedirs(a.results, exist_ok=True)
tag = f"bench-checkpoint-{a.ratings}"
with open(os.path.join(a.results, f"{tag}.json"), "w") as f:
    json.dump(summary, f, indent=1)
with open(os.path.join(a.results, f"{tag}.csv"), "w") as f:
    f.write("run,where,wall_s,wait_s,clocks,skipped\n")
    for r in rows:
        f.write(f"{r['run']},{r['where']},{r['wall_s']:.3f},{r['wait_s']:.3f},{r['clocks']},{r['skipped']}\n")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.bar(["none", "local disk", "HDFS\nskip if busy", "HDFS\nwait for each"], [wall[w] for w in WHERE])
    ax.set_ylabel("wall seconds (median)")
    ax.set_title(f"MF, {checkpoints} checkpoints of {ck_bytes / 1e6:.1f} MB")
    fig.tight_layout()
    fig.savefig(os.path.join(a.results, f"{tag}.png"), dpi=100)
except ImportError:
    print("(no matplotlib: no plot)")
