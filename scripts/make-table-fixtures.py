"""Writes the table inputs the tests read (runtime/tests/data/tables/), with pyarrow, the reader
and writer most Hadoop-side Python uses, so the tests read files that our own code did not write:

- ratings/: a Spark-style table directory (`part-*.parquet` in snappy, zstd and gzip, `_SUCCESS`,
  and a hidden `.crc` file as Hadoop's local file system leaves), 1000 rows of `user` (int64),
  `item` (int32), `rating` (float64, 3 nulls), `note` (string) and `tags` (list<string>), in row
  groups of 64 rows;
- ratings.tsv: the same rows without the nulls, as the text format (`user item rating`);
- ratings.csv: the same rows with a header line, quoted notes holding commas, empty ratings;
- edges.parquet: 300 edges `src`, `dst` (uint32) of a small graph, and edges.txt the same list.

Run with a Python that has pyarrow: `data/.venv-peers/bin/python scripts/make-table-fixtures.py`.
"""
import os
import random

import pyarrow as pa
import pyarrow.csv as pc
import pyarrow.parquet as pq

OUT = os.path.join(os.path.dirname(__file__), "..", "runtime", "tests", "data", "tables")
rng = random.Random(7)
N = 1000
users = [rng.randrange(0, 50) for _ in range(N)]
items = [rng.randrange(0, 80) for _ in range(N)]
ratings = [float(rng.randrange(1, 11)) / 2 for _ in range(N)]
nulls = {17, 500, 999}
rating_col = [None if i in nulls else r for i, r in enumerate(ratings)]
notes = [f"row {i}, user {u}" for i, u in enumerate(users)]
tags = [["a", "b"][: i % 3] for i in range(N)]
table = pa.table({
    "user": pa.array(users, pa.int64()),
    "item": pa.array(items, pa.int32()),
    "rating": pa.array(rating_col, pa.float64()),
    "note": pa.array(notes, pa.string()),
    "tags": pa.array(tags, pa.list_(pa.string())),
})

d = os.path.join(OUT, "ratings")
os.makedirs(d, exist_ok=True)
for f in os.listdir(d):
    os.remove(os.path.join(d, f))
cuts = [0, 400, 700, N]
for k, codec in enumerate(["snappy", "zstd", "gzip"]):
    part = table.slice(cuts[k], cuts[k + 1] - cuts[k])
    pq.write_table(part, os.path.join(d, f"part-0000{k}-5f1c.c000.{codec}.parquet"), compression=codec,
                   row_group_size=64)
open(os.path.join(d, "_SUCCESS"), "w").close()
with open(os.path.join(d, ".part-00000-5f1c.c000.snappy.parquet.crc"), "wb") as f:
    f.write(b"crc\0")

with open(os.path.join(OUT, "ratings.tsv"), "w") as f:
    for i in range(N):
        if i not in nulls:
            f.write(f"{users[i]}\t{items[i]}\t{ratings[i]}\n")
pc.write_csv(table.drop_columns(["tags"]), os.path.join(OUT, "ratings.csv"))

src = [rng.randrange(0, 60) for _ in range(300)]
dst = [rng.randrange(0, 60) for _ in range(300)]
pq.write_table(pa.table({"src": pa.array(src, pa.uint32()), "dst": pa.array(dst, pa.uint32())}),
               os.path.join(OUT, "edges.parquet"), row_group_size=100)
with open(os.path.join(OUT, "edges.txt"), "w") as f:
    f.writelines(f"{s}\t{t}\n" for s, t in zip(src, dst))
