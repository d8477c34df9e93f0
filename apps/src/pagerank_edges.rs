//! PageRank's edges in a worker: which worker owns which nodes, the exchange at load that
//! sends every edge to the owner of its destination, and the owner's in-edges grouped by
//! destination.

use super::job_totals::job_totals;
use super::pagerank_table::Owned;
use ps_runtime::input::Edges;
use ps_runtime::Worker;
use ps_runtime::{PsError, Result};
use std::sync::Arc;

/// Which worker (global thread id) owns each rank block: alone computes its nodes' ranks from
/// their in-edges and writes them. Block `k` lives on server `k mod processes`
/// (`Placement::Modulo`), so its owner is a thread of that process, which one chosen to balance
/// the threads' work (a block's in-edges plus its nodes), largest block first to the least
/// loaded thread. Taken in turn (block `k` to thread `(k / processes) mod threads`), the thread
/// holding the largest block of a power-law graph had 1.16x the mean in-edges at 16 threads (2M
/// nodes, 20M edges, one block of 1,024 nodes with 24x the mean), and the others waited for it
/// every iteration. With equal blocks the assignment is that turn. Every worker computes the
/// same assignment from the job's totals.
#[derive(Clone, Debug)]
pub(super) struct Owners {
    /// The owner of each block.
    of: Arc<[u32]>,
    /// Each block's index among its owner's blocks (ascending): where its nodes are kept.
    index: Arc<[u32]>,
    /// The most loaded thread's work against the mean.
    pub(super) imbalance: f64,
}

impl Owners {
    /// Owners of `blocks` blocks for `processes` x `threads` workers, block `k` costing `cost(k)`.
    pub(super) fn assign(processes: usize, threads: usize, blocks: usize, cost: impl Fn(u64) -> u64) -> Self {
        let (np, t) = (processes.max(1), threads.max(1));
        let mut of = vec![0u32; blocks];
        let mut load = vec![0u64; np * t];
        for p in 0..np {
            let mut mine: Vec<(u64, u64)> = (p as u64..blocks as u64).step_by(np).map(|k| (cost(k), k)).collect();
            // Largest first, ties in block order: equal blocks go round the threads in turn.
            mine.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            let threads = &mut load[p * t..(p + 1) * t];
            for (c, k) in mine {
                let least = (0..t).min_by_key(|&i| (threads[i], i)).unwrap_or(0);
                threads[least] += c;
                of[k as usize] = (p * t + least) as u32;
            }
        }
        let mut next = vec![0u32; np * t];
        let index: Vec<u32> = of
            .iter()
            .map(|&o| {
                next[o as usize] += 1;
                next[o as usize] - 1
            })
            .collect();
        let mean = load.iter().sum::<u64>() as f64 / load.len() as f64;
        let imbalance = if mean > 0.0 { load.iter().copied().max().unwrap_or(0) as f64 / mean } else { 1.0 };
        Owners { of: of.into(), index: index.into(), imbalance }
    }

    /// The owners of the rank blocks of `b` nodes (`n` in all), balanced by the job's in-edges
    /// of each block, of which `edges` are this worker's share. Collective.
    pub(super) fn balanced(w: &mut Worker, edges: &Edges, b: usize, n: usize) -> Result<Self> {
        let mut local = rustc_hash::FxHashMap::default();
        for &t in &edges.dst {
            *local.entry((t as usize / b) as u32).or_insert(0u64) += 1;
        }
        let totals = job_totals(w, "pagerank in-edge counts", local)?;
        let blocks = n.div_ceil(b);
        let mut cost: Vec<u64> = (0..blocks).map(|k| (n - k * b).min(b) as u64).collect();
        for (k, c) in totals {
            if let Some(x) = cost.get_mut(k as usize) {
                *x += c;
            }
        }
        let owners = Self::assign(w.num_processes(), w.threads_per_process(), blocks, |k| cost[k as usize]);
        if w.global_thread_id() == 0 {
            log::info!("pagerank: the most loaded worker's in-edges and nodes {:.2}x the mean", owners.imbalance);
        }
        Ok(owners)
    }

    /// The owner of block `k`.
    #[inline]
    pub(super) fn owner(&self, k: u64) -> usize {
        self.of[k as usize] as usize
    }

    /// The blocks `gid` owns, ascending.
    pub(super) fn owned_by(&self, gid: usize) -> Vec<u64> {
        (0..self.of.len() as u64).filter(|&k| self.owner(k) == gid).collect()
    }

    /// Block `k`'s index among its owner's blocks.
    #[inline]
    pub(super) fn index(&self, k: u64) -> usize {
        self.index[k as usize] as usize
    }
}

/// Sends every edge to the worker owning its destination's block; returns this worker's
/// in-edges, in input order within each sender, senders in order (so every run sums a node's
/// in-edges in the same order).
pub(super) fn exchange_by_destination(
    w: &mut Worker,
    edges: Edges,
    owners: &Owners,
    b: usize,
    n: usize,
) -> Result<Edges> {
    let nw = w.total_threads();
    let mut parts = vec![Vec::with_capacity(edges.src.len() * 8 / nw + 64); nw];
    for (&s, &t) in edges.src.iter().zip(&edges.dst) {
        let part = &mut parts[owners.owner(t as u64 / b as u64)];
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
    pub(super) fn new(edges: &Edges, n: usize, owned: &[u64], at: &Owned) -> Self {
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
        let at = Owned::new(&Owners::assign(1, 1, 2, |_| 1), 1024);
        let e = LocalEdges::new(&Edges { src, dst }, 2001, &(0..2).collect::<Vec<u64>>(), &at);
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
        let owners = Owners::assign(2, 1, 51, |_| 1);
        assert_eq!(owners.owned_by(1)[..2], owned[..]);
        let e = LocalEdges::new(&Edges { src, dst }, 201, &owned, &Owned::new(&owners, 4));
        assert_eq!(e.sources, vec![0, 63, 64, 127, 200]);
        assert_eq!(e.dsts, vec![4, 5, 13, 15]);
        assert_eq!(e.offsets, vec![0, 1, 3, 5, 6]);
        // Node 4: 0; node 5: 63 then 200; node 13: 200 then 64; node 15: 127.
        assert_eq!(e.srcs, vec![0, 1, 4, 4, 2, 3]);
    }

    /// Every block is owned by a thread of the process whose server holds it; blocks of equal
    /// cost go round the threads in turn; unequal ones are balanced, largest first.
    #[test]
    fn a_block_is_owned_by_a_thread_of_the_process_holding_it() {
        use ps_runtime::{Placement, TableConfig};
        let t = TableConfig::new(0, "rank", "dense_f64", 8).with_placement(Placement::Modulo);
        for (np, threads) in [(1, 1), (2, 1), (3, 2), (4, 3)] {
            let even = Owners::assign(np, threads, 1200, |_| 5);
            let mut per_worker = vec![0; np * threads];
            for k in 0..1200u64 {
                let owner = even.owner(k);
                assert_eq!(owner / threads, t.server_of(k, np), "block {k} with {np} x {threads}");
                assert_eq!(owner % threads, (k as usize / np) % threads, "in turn: block {k} with {np} x {threads}");
                per_worker[owner] += 1;
            }
            assert!(per_worker.iter().all(|&c| c == 1200 / (np * threads)), "{np} x {threads}: {per_worker:?}");
            assert_eq!(even.imbalance, 1.0);
            // A power law: block k costs 1 + 10,000 / (k + 1).
            let cost = |k: u64| 1 + 10_000 / (k + 1);
            let skewed = Owners::assign(np, threads, 1200, cost);
            let mut load = vec![0u64; np * threads];
            for k in 0..1200u64 {
                assert_eq!(skewed.owner(k) / threads, t.server_of(k, np));
                load[skewed.owner(k)] += cost(k);
            }
            // Largest first to the least loaded: no thread exceeds another of its process by more
            // than the largest block of the process it did not take first.
            for p in 0..np {
                let l = &load[p * threads..(p + 1) * threads];
                let spread = l.iter().max().unwrap() - l.iter().min().unwrap();
                assert!(threads == 1 || spread <= cost(p as u64), "{np} x {threads}, process {p}: {l:?}");
            }
            let mut index = vec![0; np * threads];
            for k in 0..1200u64 {
                let o = skewed.owner(k);
                assert_eq!(skewed.index(k), index[o], "blocks take their owner's places in order");
                index[o] += 1;
            }
        }
    }
}
