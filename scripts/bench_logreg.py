"""examples/logreg against scikit-learn on the same splits (see scripts/bench-logreg.sh)."""
import argparse, csv, json, os, random, subprocess, tempfile, time

import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import LogisticRegression, SGDClassifier

BIN = "target/release"


def ours(train, test, passes, extra):
    with tempfile.TemporaryDirectory() as d:
        stats = os.path.join(d, "s.json")
        cmd = [f"{BIN}/yarn-submit", "--runtime-bin", f"{BIN}/logreg-runtime", "--master", "local[2]",
               "--stats", stats, "logreg", "--input", train, "--test-input", test, "--passes", str(passes)] + extra
        t = time.time()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.time() - t
        last = json.load(open(stats))["objective"][-1]
        return last["test_accuracy"], wall


def peers(train, test, dims):
    xtr, ytr = load_svmlight_file(train, n_features=dims)
    xte, yte = load_svmlight_file(test, n_features=dims)
    for x in (xtr, xte):  # scikit-learn's solvers take 32-bit sparse indices only
        x.indices, x.indptr = x.indices.astype(np.int32), x.indptr.astype(np.int32)
    out = {}
    for name, model in [("sklearn-lbfgs", LogisticRegression(max_iter=2000)),
                        ("sklearn-sgd", SGDClassifier(loss="log_loss", random_state=0))]:
        t = time.time()
        model.fit(xtr, ytr)
        acc = model.score(xte, yte)
        out[name] = (acc, time.time() - t)
    return out


def folds(path, k, seed):
    lines = [l for l in open(path) if l.strip()]
    random.Random(seed).shuffle(lines)
    for i in range(k):
        yield [l for j, l in enumerate(lines) if j % k != i], [l for j, l in enumerate(lines) if j % k == i]


def generate(d, n, dims, seed):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=dims + 1)
    paths = []
    for name, m in [("train", int(n * 0.8)), ("test", n - int(n * 0.8))]:
        p = os.path.join(d, f"{name}.svm")
        with open(p, "w") as f:
            for _ in range(m):
                feats = np.unique(rng.integers(1, dims + 1, size=15))
                y = 1 if w[feats].sum() + 0.5 * rng.normal() > 0 else -1
                f.write(f"{y:+d} " + " ".join(f"{j}:1" for j in feats) + "\n")
        paths.append(p)
    return paths


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="results/bench-logreg")
    ap.add_argument("--passes", type=int, default=30)
    ap.add_argument("--examples", type=int, default=100_000)
    ap.add_argument("--dims", type=int, default=20_000)
    ap.add_argument("--logreg-args", default="", help="more logreg options, e.g. '--lr 0.3'")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        # heart_scale: 5 folds; accuracy over all 270 held-out predictions.
        agg = {}
        for i, (tr, te) in enumerate(folds("data/heart/heart_scale", 5, 1)):
            ptr, pte = os.path.join(d, f"h{i}.tr"), os.path.join(d, f"h{i}.te")
            open(ptr, "w").writelines(tr)
            open(pte, "w").writelines(te)
            res = {"ps-logreg": ours(ptr, pte, a.passes * 4, a.logreg_args.split())}
            res.update(peers(ptr, pte, 13))
            for k, (acc, t) in res.items():
                s = agg.setdefault(k, [0.0, 0.0, 0])
                s[0] += acc * len(te); s[1] += t; s[2] += len(te)
        for k, (c, t, n) in agg.items():
            rows.append({"dataset": "heart_scale (5-fold)", "system": k, "test_accuracy": c / n, "seconds": t})
        tr, te = generate(d, a.examples, a.dims, 3)
        res = {"ps-logreg": ours(tr, te, a.passes, a.logreg_args.split())}
        res.update(peers(tr, te, a.dims))
        for k, (acc, t) in res.items():
            rows.append({"dataset": f"generated ({a.examples} x {a.dims})", "system": k, "test_accuracy": acc, "seconds": t})
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader(); w.writerows(rows)
    json.dump({"passes": a.passes, "logreg_args": a.logreg_args, "rows": rows}, open(a.out + ".json", "w"), indent=1)
    for ds in dict.fromkeys(r["dataset"] for r in rows):
        base = next(r for r in rows if r["dataset"] == ds and r["system"] == "sklearn-lbfgs")
        for r in (r for r in rows if r["dataset"] == ds):
            print(f"{ds:32s} {r['system']:14s} accuracy {r['test_accuracy']:.4f} "
                  f"({r['test_accuracy'] - base['test_accuracy']:+.4f} vs lbfgs)  {r['seconds']:.2f}s "
                  f"({r['seconds'] / base['seconds']:.2f}x lbfgs)")


if __name__ == "__main__":
    main()
