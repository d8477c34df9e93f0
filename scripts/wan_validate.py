#!/usr/bin/env python3
"""Checks the WAN emulator (runtime/src/wan.rs) against the kernel's own traffic shaping.

The same two-process job runs twice per bandwidth:
  kernel:   each process in its own network namespace, joined by a veth pair whose two ends are
            shaped by Linux `tc` (tbf: rate B, burst 64 KB, like our bucket); real TCP between them.
  emulated: `yarn-submit --master local[2] --datacenters 2 --wan-mbps B` on loopback.
Both report the bytes each process sent; the comparison is wall time and the rate achieved.
Delay cannot be compared on kernels without `sch_netem` (the script says so when it is missing).
Needs root (network namespaces). Writes results/wan-validation.{csv,json}.
"""
import argparse
import csv
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ap = argparse.ArgumentParser()
ap.add_argument("--bin", default="target/release")
ap.add_argument("--results", default="results")
ap.add_argument("--mbps", default="10,40", help="bandwidths to compare, Mbit/s")
ap.add_argument("--app-args", default="--clocks 20 --shared-rows 3000")
a = ap.parse_args()
bin_dir = Path(a.bin).resolve()
NS = ("ps-wan-a", "ps-wan-b")
DEV = ("ps-wan-va", "ps-wan-vb")
ADDR = ("10.77.0.1", "10.77.0.2")


def sh(*cmd, check=True):
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def netns_down():
    for ns in NS:
        sh("ip", "netns", "del", ns, check=False)


def netns_up(mbps):
    netns_down()
    for ns in NS:
        sh("ip", "netns", "add", ns)
    sh("ip", "link", "add", DEV[0], "type", "veth", "peer", "name", DEV[1])
    for ns, dev, addr in zip(NS, DEV, ADDR):
        sh("ip", "link", "set", dev, "netns", ns)
        sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
        sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        if mbps:
            # A queue long enough that nothing is dropped: our emulator never drops either.
            sh("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "tbf",
               "rate", f"{mbps}mbit", "burst", "64kb", "latency", "5s")


def netem_available():
    netns_up(None)
    try:
        r = sh("ip", "netns", "exec", NS[0], "tc", "qdisc", "add", "dev", DEV[0], "root", "netem", "delay",
               "10ms", check=False)
        return r.returncode == 0
    finally:
        netns_down()


def job_dir(runtime, app_args):
    d = Path(tempfile.mkdtemp(prefix="ps-wan-"))
    ports = []
    for _ in ADDR:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    (d / "hostfile").write_text("".join(f"{i} {h} {p}\n" for i, (h, p) in enumerate(zip(ADDR, ports))))
    fd = os.open(d / "secret", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, secrets.token_bytes(32))
    os.close(fd)
    job = {"runtime": runtime, "app": "demo", "app_args": app_args.split(), "hostfile": str(d / "hostfile"),
           "secret_file": str(d / "secret"), "stats_dir": str(d)}
    (d / "job.json").write_text(json.dumps(job))
    return d


def stats_of(paths):
    out = []
    for p in paths:
        s = json.loads(Path(p).read_text())
        out.append(s)
    return out


def run_kernel(mbps):
    netns_up(mbps)
    try:
        d = job_dir({"threads": 1}, a.app_args)
        t = time.perf_counter()
        procs = [subprocess.Popen(["ip", "netns", "exec", ns, str(bin_dir / "ps-runtime"), "run", "--job",
                                   str(d / "job.json"), "--id", str(i)], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True) for i, ns in enumerate(NS)]
        for p in procs:
            _, err = p.communicate(timeout=600)
            if p.returncode != 0:
                sys.exit(f"kernel-shaped job failed:\n{err}")
        wall = time.perf_counter() - t
        return wall, stats_of([d / f"stats-{i}.json" for i in range(2)])
    finally:
        netns_down()


def run_emulated(mbps):
    d = Path(tempfile.mkdtemp(prefix="ps-wan-emu-"))
    cmd = [str(bin_dir / "yarn-submit"), "--master", "local[2]", "--threads", "1", "--datacenters", "2",
           "--job-dir", str(d / "job"), "--stats", str(d / "stats.json")]
    if mbps:
        cmd += ["--wan-mbps", str(mbps)]
    t = time.perf_counter()
    r = subprocess.run(cmd + ["demo"] + a.app_args.split(), capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"emulated job failed:\n{r.stderr}")
    merged = json.loads((d / "stats.json").read_text())
    return wall, merged["processes"]


if os.geteuid() != 0:
    sys.exit("wan_validate.py needs root (network namespaces and tc)")
netem = netem_available()
rows = []
for mbps in [None] + [float(x) for x in a.mbps.split(",")]:
    for mode, run in (("kernel", run_kernel), ("emulated", run_emulated)):
        wall, procs = run(mbps)
        sent = [p["bytes_sent"] for p in procs]
        # The process that sent most bounds the job: its link was the busy one.
        rate = max(s / p["wall_s"] for s, p in zip(sent, procs)) * 8 / 1e6
        rows.append({"mbps": mbps or "unshaped", "mode": mode, "wall_s": round(wall, 3),
                     "process_wall_s": round(max(p["wall_s"] for p in procs), 3),
                     "bytes_sent": sent, "achieved_mbps": round(rate, 2)})
        print(f"{str(mbps or 'unshaped'):>9} {mode:8} wall {wall:6.2f} s, process {rows[-1]['process_wall_s']:6.2f} s, "
              f"sent {sent}, {rate:7.2f} Mbit/s achieved", flush=True)
res = Path(a.results)
res.mkdir(exist_ok=True)
with open(res / "wan-validation.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["mbps", "mode", "wall_s", "process_wall_s", "bytes_sent_p0", "bytes_sent_p1", "achieved_mbps"])
    for r in rows:
        w.writerow([r["mbps"], r["mode"], r["wall_s"], r["process_wall_s"], *r["bytes_sent"], r["achieved_mbps"]])
(res / "wan-validation.json").write_text(json.dumps(
    {"app_args": a.app_args, "netem_available": netem, "kernel": os.uname().release, "runs": rows}, indent=1))
if not netem:
    print("note: this kernel has no sch_netem, so the emulated delay could not be compared with tc's")
print(f"results written to {res}/wan-validation.{{csv,json}}")
