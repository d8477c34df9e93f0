//! `pagerank`'s rank table: blocks of consecutive nodes' ranks as f32, written only by the
//! block's owner. Every other worker reads every rank block each iteration (8 bytes a node as
//! f64 was the whole of PageRank's traffic between processes), so the table keeps 4 bytes a
//! node; the owner computes in f64 and keeps a mirror of exactly what the table holds
//! (`Mirror`), so that it reads its own blocks as every other worker reads them, and the
//! iteration does not depend on how the nodes are split among workers.

use super::pagerank_edges::Owners;
use ps_runtime::Result;
use ps_runtime::TableHandle;
use ps_runtime::{DenseRow, Element};

/// Where a worker keeps its owned nodes' values: its `i`-th owned block (ascending) at `i b`
/// ([`Owners::index`]), so these places are `0..owned blocks x b`. Arrays indexed by node id took
/// 12 bytes a node of the whole graph in every worker thread (1 x 16 on a 500K-node graph: 96 MB
/// more than 1 x 1).
#[derive(Clone)]
pub(super) struct Owned {
    owners: Owners,
    pub(super) b: usize,
}

impl Owned {
    pub(super) fn new(owners: &Owners, b: usize) -> Self {
        Owned { owners: owners.clone(), b }
    }

    /// The place of owned node `v`.
    #[inline]
    pub(super) fn at(&self, v: usize) -> usize {
        self.owners.index((v / self.b) as u64) * self.b + v % self.b
    }

    /// The places of owned block `blk`'s nodes (`n` nodes in all).
    pub(super) fn block(&self, blk: u64, n: usize) -> std::ops::Range<usize> {
        let start = blk as usize * self.b;
        let at = self.at(start);
        at..at + n.saturating_sub(start).min(self.b)
    }
}

/// What the table holds for the owned nodes, at their places ([`Owned`]).
pub(super) struct Mirror {
    held: Vec<f32>,
    at: Owned,
}

impl Mirror {
    /// `held`: the table's values of the owned nodes (those this worker pushed at start, or read
    /// from a restored table), at their places.
    pub(super) fn new(held: Vec<f32>, at: Owned) -> Self {
        Mirror { held, at }
    }

    /// The rank of owned node `v` as a reader of the table sees it.
    #[inline]
    pub(super) fn own(&self, v: usize) -> f32 {
        self.held[self.at.at(v)]
    }

    /// What the table holds for the owned node at place `p`.
    #[inline]
    pub(super) fn at_place(&self, p: usize) -> f32 {
        self.held[p]
    }

    /// What the table holds for owned block `blk`'s nodes (`n` nodes in all).
    pub(super) fn block(&self, blk: u64, n: usize) -> &[f32] {
        &self.held[self.at.block(blk, n)]
    }

    /// Restores what the table holds for node `v` (from a checkpoint's state).
    pub(super) fn set(&mut self, v: usize, x: f32) {
        self.held[self.at.at(v)] = x;
    }

    /// Writes the owned blocks' new ranks `mine` (at their places) as one f32 delta per changed
    /// node and one row update per changed block, and adds the deltas to the mirror with the
    /// very f32 additions the server makes. With one iteration a clock (BSP) the server adds
    /// each delta alone, so the mirror is exact; with several (`--passes-per-clock`) the thread
    /// sums a clock's deltas first, and the server's sum may differ from the mirror in the last
    /// bit.
    pub(super) fn write(&mut self, rank: &mut TableHandle<DenseRow<f32>>, owned: &[u64], mine: &[f64], n: usize) {
        let mut upd = DenseRow(vec![0f32; self.at.b]);
        for &blk in owned {
            let places = self.at.block(blk, n);
            let len = places.len();
            let mut changed = false;
            for ((m, h), u) in mine[places.clone()].iter().zip(&mut self.held[places]).zip(upd.0.iter_mut()) {
                *u = *m as f32 - *h;
                changed |= *u != 0.0;
                *h += *u;
            }
            if changed {
                upd.0[len..].iter_mut().for_each(|x| *x = 0.0);
                rank.inc(blk, &upd);
            }
        }
    }
}

/// Adds `vals`, `b` values a block, to the blocks `blocks` (in order), one dense row update per
/// block with a non-zero entry, and resets `vals` to zero.
pub(super) fn push_blocks<T: Element>(
    t: &mut TableHandle<DenseRow<T>>,
    vals: &mut [T],
    blocks: impl Iterator<Item = u64>,
    b: usize,
    nonzero: impl Fn(T) -> bool,
) -> Result<()> {
    let mut upd = DenseRow(vec![T::default(); b]);
    for (blk, chunk) in blocks.zip(vals.chunks_mut(b)) {
        if chunk.iter().any(|x| nonzero(*x)) {
            fill_update(&mut upd.0, chunk, |x| x);
            t.inc(blk, &upd);
            chunk.iter_mut().for_each(|x| *x = T::default());
        }
    }
    Ok(())
}

/// Adds `counts[v]` to node `v` of an i64 table, one dense row update per block with a count.
pub(super) fn push_counts(t: &mut TableHandle<DenseRow<i64>>, counts: &[u32], b: usize) -> Result<()> {
    let mut upd = DenseRow(vec![0i64; b]);
    for (blk, chunk) in counts.chunks(b).enumerate() {
        if chunk.iter().any(|&c| c != 0) {
            fill_update(&mut upd.0, chunk, |c| c as i64);
            t.inc(blk as u64, &upd);
        }
    }
    Ok(())
}

/// A block's update: `chunk` converted by `to`, then zeros (the graph's last block is short).
fn fill_update<S: Copy, T: Default + Copy>(upd: &mut [T], chunk: &[S], to: impl Fn(S) -> T) {
    let (head, tail) = upd.split_at_mut(chunk.len());
    head.iter_mut().zip(chunk).for_each(|(u, &x)| *u = to(x));
    tail.fill(T::default());
}

/// Reads the given blocks (the table's ones prefetched together) and calls `f(node, value)` for
/// each node in ascending order. Blocks in `owned` come from `own` instead: a worker alone writes
/// its rank blocks and knows what they hold. That saves copying those rows into the thread
/// cache, and a row not read in a clock is then written as a plain delta instead of as the
/// difference from a copy of the row taken at its first write.
pub(super) fn read_blocks<T: Element>(
    t: &mut TableHandle<DenseRow<T>>,
    owned: &[u64],
    own: impl Fn(usize) -> T,
    blocks: &[u64],
    b: usize,
    n: usize,
    mut f: impl FnMut(usize, T),
) -> Result<()> {
    t.refresh_rows(blocks.iter().copied().filter(|blk| owned.binary_search(blk).is_err()));
    let mut mine = owned.iter().peekable();
    for &blk in blocks {
        let start = blk as usize * b;
        let len = n.saturating_sub(start).min(b);
        while mine.next_if(|&&o| o < blk).is_some() {}
        if mine.peek() == Some(&&blk) {
            (start..start + len).for_each(|i| f(i, own(i)));
        } else {
            let row = t.get(blk)?;
            row.iter().take(len).enumerate().for_each(|(j, x)| f(start + j, *x));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker's owned nodes take the places `0..owned blocks x b`, in node order, each once.
    #[test]
    fn owned_nodes_fill_their_places_in_order() {
        let (b, n) = (4usize, 203usize);
        for (np, threads) in [(1, 1), (2, 1), (3, 2), (4, 3)] {
            let owners = Owners::assign(np, threads, n.div_ceil(b), |k| 1 + 100 / (k + 1));
            let at = Owned::new(&owners, b);
            for gid in 0..np * threads {
                let owned = owners.owned_by(gid);
                let places: Vec<usize> = owned.iter().flat_map(|&k| at.block(k, n)).collect();
                let nodes = owned.iter().flat_map(|&k| k as usize * b..((k as usize + 1) * b).min(n));
                assert_eq!(nodes.map(|v| at.at(v)).collect::<Vec<_>>(), places, "{np} x {threads}, worker {gid}");
                assert!(places.windows(2).all(|p| p[0] < p[1]));
                assert!(places.last().is_none_or(|&p| p < owned.len() * b));
            }
        }
    }
}
