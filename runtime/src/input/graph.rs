//! Graphs as SNAP edge lists: `src dst` per line (tab or spaces), `#` comments.

use super::{field, on_bad, plan_splits, BadRecords, LineReader, ReadStats};
use crate::error::Result;
use crate::storage::storage_for;

/// Edges of this worker's share, as parallel arrays.
#[derive(Clone, Debug, Default)]
pub struct Edges {
    pub src: Vec<u32>,
    pub dst: Vec<u32>,
}

/// Reads worker `k`'s share (of `n`) of the edge list at `url`.
pub fn read_edges(url: &str, k: usize, n: usize, bad: BadRecords) -> Result<(Edges, ReadStats)> {
    let storage = storage_for(url)?;
    let st = storage.as_ref();
    let mut out = Edges::default();
    let mut stats = ReadStats::default();
    for split in plan_splits(&st.list(url)?, k, n) {
        let mut r = LineReader::new(st, &split)?;
        while let Some((line, at)) = r.next_line()? {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') || t.starts_with('%') {
                continue;
            }
            let mut f = t.split_whitespace();
            match field::<u32>(f.next(), "source node").and_then(|s| Ok((s, field::<u32>(f.next(), "target node")?))) {
                Ok((s, d)) => {
                    out.src.push(s);
                    out.dst.push(d);
                    stats.records += 1;
                }
                Err(why) => on_bad(bad, &mut stats, st, &split.path, at, &why)?,
            }
        }
        stats.bytes += split.end - split.start;
    }
    Ok((out, stats))
}
