//! `pagerank`'s rank table: blocks of consecutive nodes' ranks as f32, written only by the
//! block's owner. Every other worker reads every rank block each iteration (8 bytes a node as
//! f64 was the whole of PageRank's traffic between processes), so the table keeps 4 bytes a
//! node; the owner computes in f64 and keeps a mirror of exactly what the table holds
//! (`Mirror`), so that it reads its own blocks as every other worker reads them, and the
//! iteration does not depend on how the nodes are split among workers.

use ps_runtime::Result;
use ps_runtime::TableHandle;
use ps_runtime::{DenseRow, Element};

/// What the table holds for the owned nodes (by node id; other entries stay 0).
pub(super) struct Mirror {
    held: Vec<f32>,
}

impl Mirror {
    /// `held`: the table's values of the owned nodes (those this worker pushed at start, or read
    /// from a restored table).
    pub(super) fn new(held: Vec<f32>) -> Self {
        Mirror { held }
    }

    /// The rank of owned node `v` as a reader of the table sees it.
    #[inline]
    pub(super) fn own(&self, v: usize) -> f32 {
        self.held[v]
    }

    /// Restores what the table holds for node `v` (from a checkpoint's state).
    pub(super) fn set(&mut self, v: usize, x: f32) {
        self.held[v] = x;
    }

    /// Writes the owned blocks' new ranks `mine` as one f32 delta per changed node and one row
    /// update per changed block, and adds the deltas to the mirror with the very f32 additions
    /// the server makes. With one iteration a clock (BSP) the server adds each delta alone, so
    /// the mirror is exact; with several (`--passes-per-clock`) the thread sums a clock's deltas
    /// first, and the server's sum may differ from the mirror in the last bit.
    pub(super) fn write(
        &mut self,
        rank: &mut TableHandle<DenseRow<f32>>,
        owned: &[u64],
        mine: &[f64],
        b: usize,
        n: usize,
    ) {
        let mut upd = DenseRow(vec![0f32; b]);
        for &blk in owned {
            let (start, end) = (blk as usize * b, ((blk as usize + 1) * b).min(n));
            let mut changed = false;
            for ((m, h), u) in mine[start..end].iter().zip(&mut self.held[start..end]).zip(upd.0.iter_mut()) {
                *u = *m as f32 - *h;
                changed |= *u != 0.0;
                *h += *u;
            }
            if changed {
                upd.0[end - start..].iter_mut().for_each(|x| *x = 0.0);
                rank.inc(blk, &upd);
            }
        }
    }
}

/// Adds `vals[v]` to node `v` for every node, one dense row update per block with a non-zero
/// entry, and resets `vals` to zero.
pub(super) fn push_blocks<T: Element>(
    t: &mut TableHandle<DenseRow<T>>,
    vals: &mut [T],
    b: usize,
    nonzero: impl Fn(T) -> bool,
) -> Result<()> {
    let mut upd = DenseRow(vec![T::default(); b]);
    for (blk, chunk) in vals.chunks_mut(b).enumerate() {
        if chunk.iter().any(|x| nonzero(*x)) {
            upd.0[..chunk.len()].copy_from_slice(chunk);
            upd.0[chunk.len()..].iter_mut().for_each(|x| *x = T::default());
            t.inc(blk as u64, &upd);
            chunk.iter_mut().for_each(|x| *x = T::default());
        }
    }
    Ok(())
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
