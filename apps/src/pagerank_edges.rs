//! PageRank's edges in a worker: which worker owns which nodes, the exchange at load that
//! sends every edge to the owner of its destination, and the owner's in-edges grouped by
//! destination.

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
    /// Groups the edges with counting sorts over the node ids (`n` = largest id + 1): linear in
    /// edges and nodes, where sorting (and a binary search per edge for the source's index) cost
    /// a third of PageRank's load time. A destination's edges keep input order, so its sum adds
    /// the same terms in the same order in every run.
    pub(super) fn new(edges: &Edges, n: usize) -> Self {
        let mut out = vec![0u32; n];
        let mut into = vec![0usize; n + 1];
        for (&s, &t) in edges.src.iter().zip(&edges.dst) {
            out[s as usize] += 1;
            into[t as usize + 1] += 1;
        }
        // out[v] becomes the index of source v among this worker's sources.
        let mut sources = Vec::new();
        for (v, o) in out.iter_mut().enumerate() {
            if *o > 0 {
                *o = sources.len() as u32;
                sources.push(v as u32);
            }
        }
        let dsts: Vec<u32> = (0..n).filter(|&v| into[v + 1] > 0).map(|v| v as u32).collect();
        for v in 0..n {
            into[v + 1] += into[v];
        }
        let mut offsets: Vec<usize> = dsts.iter().map(|&v| into[v as usize]).collect();
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
            let at = &mut bucket[(t >> SHIFT) as usize];
            by_bucket[*at] = (out[s as usize], t);
            *at += 1;
        }
        let mut srcs = vec![0u32; edges.src.len()];
        for &(si, t) in &by_bucket {
            let at = &mut into[t as usize];
            srcs[*at] = si;
            *at += 1;
        }
        LocalEdges { sources, dsts, offsets, srcs }
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
        let e = LocalEdges::new(&Edges { src, dst }, 2001);
        assert_eq!(e.sources, vec![3, 7, 9, 2000]);
        assert_eq!(e.dsts, vec![5, 1023, 1500]);
        assert_eq!(e.offsets, vec![0, 3, 4, 5]);
        // Source indexes: node 7 is index 1, 2000 is 3, 9 is 2, 3 is 0.
        assert_eq!(e.srcs, vec![1, 3, 2, 0, 0]);
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
