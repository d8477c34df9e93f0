//! PageRank's edges in a worker: which worker owns which nodes, the exchange at load that
//! sends every edge to the owner of its destination, and the owner's in-edges grouped by
//! destination.

use super::pagerank_table::Owned;
use ps_runtime::input::Edges;
use ps_runtime::Worker;
use ps_runtime::{PsError, Result};

/// The worker (global thread id) that owns rank block `k`: a thread of process `k mod
/// processes`, which is the process whose server holds the block under `Placement::Modulo`.
pub fn owner_of_block(k: u64, processes: usize, threads: usize) -> usize {
    let (np, t) = (processes as u64, threads as u64);
    ((k % np) * t + (k / np) % t) as usize
}

/// Sends every edge to the worker owning its destination's block; returns this worker's
/// in-edges, in input order within each sender, senders in order (so every run sums a node's
/// in-edges in the same order).
pub(super) fn exchange_by_destination(w: &mut Worker, edges: Edges, b: usize, n: usize) -> Result<Edges> {
    let (np, threads) = (w.num_processes(), w.threads_per_process());
    let nw = np * threads;
    let mut parts = vec![Vec::with_capacity(edges.src.len() * 8 / nw + 64); nw];
    for (&s, &t) in edges.src.iter().zip(&edges.dst) {
        let part = &mut parts[owner_of_block(t as u64 / b as u64, np, threads)];
        part.extend_from_slice(&s.to_le_bytes());
        part.extend_from_slice(&t.to_le_bytes());
    }
    drop(edges);
    let got = w.exchange(parts)?;
    let total = got.iter().map(|p| p.len() / 8).sum();
    let mut out = Edges { src: Vec::with_capacity(total), dst: Vec::with_capacity(total) };
    for (from, part) in got.iter().enumerate() {
        if part.len() % 8 != 0 {
            return Err(PsError::codec(format!("pagerank: worker {from} sent {} bytes of edges", part.len())));
        }
        for e in part.chunks_exact(8) {
            let word = |i: usize| u32::from_le_bytes(e[i..i + 4].try_into().expect("4 bytes"));
            let (s, t) = (word(0), word(4));
            if s as usize >= n || t as usize >= n {
                return Err(PsError::codec(format!("pagerank: worker {from} sent edge {s} -> {t} beyond {n} nodes")));
            }
            out.src.push(s);
            out.dst.push(t);
        }
    }
    Ok(out)
}

/// A worker's edges (the in-edges of its owned nodes) grouped by destination (pull form): each
/// destination's sum gathers its sources' shares and is written once.
pub(super) struct LocalEdges {
    /// This worker's source nodes (sorted).
    pub(super) sources: Vec<u32>,
    /// This worker's destination nodes (sorted); the in-edges of `dsts[j]` are
    /// `srcs[offsets[j]..offsets[j + 1]]`, as indexes into `sources`.
    pub(super) dsts: Vec<u32>,
    pub(super) offsets: Vec<usize>,
    pub(super) srcs: Vec<u32>,
}

impl LocalEdges {
    /// Groups the edges with counting sorts: linear in edges and nodes, where sorting (and a
    /// binary search per edge for the source's index) cost a third of PageRank's load time. A
    /// destination's edges keep input order, so its sum adds the same terms in the same order in
    /// every run. Every destination is an owned node (`owned`, ascending, at places `at`); the
    /// work arrays hold a bit per node of the graph and a count per owned node, not a word per
    /// node of the graph (in every worker thread at once, that was 12 bytes a node per thread).
    pub(super) fn new(edges: &Edges, n: usize, owned: &[u64], at: Owned) -> Self {
        let marks = SourceMarks::new(&edges.src, n);
        let sources = marks.sources();
        let b = at.b;
        let mut into = vec![0usize; owned.len() * b + 1];
        for &t in &edges.dst {
            into[at.at(t as usize) + 1] += 1;
        }
        let owned_nodes = owned.iter().flat_map(|&k| k as usize * b..((k as usize + 1) * b).min(n));
        let dsts: Vec<u32> = owned_nodes.filter(|&v| into[at.at(v) + 1] > 0).map(|v| v as u32).collect();
        for p in 1..into.len() {
            into[p] += into[p - 1];
        }
        let mut offsets: Vec<usize> = dsts.iter().map(|&v| into[at.at(v as usize)]).collect();
        offsets.push(edges.dst.len());
        // Placing each edge straight at its destination's slot scatters writes over the whole
        // array (a cache miss per edge: 8x the load time of grouping by source). So first into
        // buckets of 1024 destinations (a thousand sequential write streams), then within each
        // bucket, whose slots are close together. Both passes are stable.
        const SHIFT: u32 = 10;
        let mut bucket = vec![0usize; (n >> SHIFT) + 2];
        for &t in &edges.dst {
            bucket[(t >> SHIFT) as usize + 1] += 1;
        }
        for i in 1..bucket.len() {
            bucket[i] += bucket[i - 1];
        }
        let mut by_bucket = vec![(0u32, 0u32); edges.src.len()];
        for (&s, &t) in edges.src.iter().zip(&edges.dst) {
            let slot = &mut bucket[(t >> SHIFT) as usize];
            by_bucket[*slot] = (marks.index(s), t);
            *slot += 1;
        }
        let mut srcs = vec![0u32; edges.src.len()];
        for &(si, t) in &by_bucket {
            let slot = &mut into[at.at(t as usize)];
            srcs[*slot] = si;
            *slot += 1;
        }
        LocalEdges { sources, dsts, offsets, srcs }
    }
}

/// Which nodes are sources, a bit per node, and a source's index among them (the set bits
/// before it: a count per 64 nodes plus a popcount).
struct SourceMarks {
    bits: Vec<u64>,
    before: Vec<u32>,
}

impl SourceMarks {
    fn new(src: &[u32], n: usize) -> Self {
        let mut bits = vec![0u64; n.div_ceil(64)];
        src.iter().for_each(|&s| bits[s as usize / 64] |= 1 << (s % 64));
        let mut count = 0;
        let before = bits
            .iter()
            .map(|w| {
                let c = count;
                count += w.count_ones();
                c
            })
            .collect();
        SourceMarks { bits, before }
    }

    /// The index of source `s` among the sources.
    #[inline]
    fn index(&self, s: u32) -> u32 {
        let (w, bit) = (s as usize / 64, s % 64);
        self.before[w] + (self.bits[w] & ((1u64 << bit) - 1)).count_ones()
    }

    /// The sources, ascending.
    fn sources(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.before.last().copied().unwrap_or(0) as usize + 64);
        for (i, &w) in self.bits.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                out.push(i as u32 * 64 + w.trailing_zeros());
                w &= w - 1;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_edges_group_by_destination_in_input_order() {
        // Destinations on both sides of a 1024-node bucket boundary; node 5 has two in-edges.
        let src = vec![7, 3, 2000, 3, 9];
        let dst = vec![5, 1500, 5, 1023, 5];
        // One worker: it owns every block.
        let e = LocalEdges::new(&Edges { src, dst }, 2001, &(0..2).collect::<Vec<u64>>(), Owned::new(1, 1024));
        assert_eq!(e.sources, vec![3, 7, 9, 2000]);
        assert_eq!(e.dsts, vec![5, 1023, 1500]);
        assert_eq!(e.offsets, vec![0, 3, 4, 5]);
        // Source indexes: node 7 is index 1, 2000 is 3, 9 is 2, 3 is 0.
        assert_eq!(e.srcs, vec![1, 3, 2, 0, 0]);
    }

    /// With several workers a worker's destinations are its own blocks' nodes, held at their
    /// places; sources anywhere in the graph (across the 64-node words of the marks) keep their
    /// order and indexes.
    #[test]
    fn local_edges_of_one_of_several_workers() {
        // 2 processes x 1 thread, blocks of 4: worker 1 owns the odd blocks (nodes 4-7, 12-15).
        let owned = vec![1u64, 3];
        let src = vec![200, 63, 64, 0, 200, 127];
        let dst = vec![13, 5, 13, 4, 5, 15];
        let e = LocalEdges::new(&Edges { src, dst }, 201, &owned, Owned::new(2, 4));
        assert_eq!(e.sources, vec![0, 63, 64, 127, 200]);
        assert_eq!(e.dsts, vec![4, 5, 13, 15]);
        assert_eq!(e.offsets, vec![0, 1, 3, 5, 6]);
        // Node 4: 0; node 5: 63 then 200; node 13: 200 then 64; node 15: 127.
        assert_eq!(e.srcs, vec![0, 1, 4, 4, 2, 3]);
    }

    #[test]
    fn a_block_is_owned_by_a_thread_of_the_process_holding_it() {
        use ps_runtime::{Placement, TableConfig};
        let t = TableConfig::new(0, "rank", "dense_f64", 8).with_placement(Placement::Modulo);
        for (np, threads) in [(1, 1), (2, 1), (3, 2), (4, 3)] {
            let mut per_worker = vec![0; np * threads];
            for k in 0..1200u64 {
                let owner = owner_of_block(k, np, threads);
                assert_eq!(owner / threads, t.server_of(k, np), "block {k} with {np} x {threads}");
                per_worker[owner] += 1;
            }
            assert!(per_worker.iter().all(|&c| c == 1200 / (np * threads)), "{np} x {threads}: {per_worker:?}");
        }
    }
}
