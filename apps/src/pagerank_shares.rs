//! PageRank's sources' shares, computed once per process. Every in-edge of a worker's nodes adds
//! its source's share (d × rank / out-degree). With one array per worker, each of a process's T
//! threads computed the share of nearly every node (with ten edges per node, a quarter of the
//! destinations already touch 94% of the sources) and kept its own copy in cache, so a second
//! thread removed only the per-edge half of the work (1 × 2 ran at 1.01× of 1 × 1, using 1.5×
//! the CPU). Here the threads of a process share one array over the process's sources (as
//! GAP's threads share one rank vector): each thread fills the blocks it owns from its own ranks
//! and a 1/T share of the other processes' blocks from the table, then a process barrier, then
//! every thread sums its in-edges from the one array. Two arrays alternate by iteration, so a
//! thread that finishes its sums early fills the next iteration's array while the others still
//! read this one; it cannot get two iterations ahead, because it would have to pass the next
//! barrier first.

use super::gate::Gate;
use super::pagerank_edges::Owners;
use ps_runtime::DenseRow;
use ps_runtime::TableHandle;
use ps_runtime::{PsError, Result, WaitMeter};
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// What the threads of one process share.
pub(super) struct ProcessShares {
    threads: usize,
    gate: Gate,
    /// Each thread's sources, until the union is built.
    deposits: Mutex<Vec<Vec<u32>>>,
    /// The process's sources (the union of its threads' sources), ascending.
    union: OnceLock<Vec<u32>>,
    /// The shares of `union`'s nodes (f32 bits), for even and odd iterations. As f32 (the
    /// precision the ranks have in the table) the array takes half the cache: summing in-edges
    /// is a gather from it, 4-5 ns an edge while it lived in L3.
    bufs: OnceLock<[Vec<AtomicU32>; 2]>,
}

impl ProcessShares {
    pub(super) fn new(threads: usize) -> Self {
        ProcessShares {
            threads,
            gate: Gate::new(threads, "pagerank"),
            deposits: Mutex::new(vec![Vec::new(); threads]),
            union: OnceLock::new(),
            bufs: OnceLock::new(),
        }
    }
}

/// A block a thread fills: the block, whether this thread owns it, and its nodes' range in the
/// process's sources.
type Task = (u64, bool, std::ops::Range<usize>);

/// A thread's part in [`ProcessShares`]. Dropping it (the thread failed, or is done) opens the
/// process barrier for good, so that no other thread waits for it forever; a thread that has
/// passed every barrier it will meet is never told.
pub(super) struct ThreadShares {
    shared: Arc<ProcessShares>,
    /// Blocks this thread fills, ascending.
    tasks: Vec<Task>,
    /// d / out-degree of every node of the tasks' ranges, concatenated (0 for a dangling node).
    scale: Vec<f64>,
    /// The tasks' blocks that come from the table.
    remote: Vec<u64>,
    iteration: usize,
    /// This thread's time at the process barrier (the stats' `handoff_wait_s`).
    meter: WaitMeter,
}

impl Drop for ThreadShares {
    fn drop(&mut self) {
        self.shared.gate.open_for_good();
    }
}

/// Where a thread stands: process `pid`, thread `tid`, rank blocks of `b` nodes owned by
/// `owners`.
pub(super) struct Place {
    pub pid: usize,
    pub tid: usize,
    pub b: usize,
    pub owners: Owners,
}

impl ThreadShares {
    /// A thread's part, taken before anything that may fail: if this thread stops early, the
    /// others are told instead of waiting for it.
    pub(super) fn new(shared: Arc<ProcessShares>, meter: WaitMeter) -> Self {
        ThreadShares { shared, tasks: Vec::new(), scale: Vec::new(), remote: Vec::new(), iteration: 0, meter }
    }

    /// Joins the process's array with this thread's `sources` (ascending); returns the map from
    /// an index into `sources` to an index into the shared array. Every thread of the process
    /// must call it (it waits for them).
    pub(super) fn join(&mut self, sources: &[u32], at: &Place) -> Result<Vec<u32>> {
        let shared = self.shared.clone();
        lock(&shared.deposits)?[at.tid] = sources.to_vec();
        shared.gate.wait(&self.meter)?;
        let union = shared.union.get_or_init(|| {
            let mut all: Vec<u32> = match shared.deposits.lock() {
                Ok(mut d) => d.drain(..).flatten().collect(),
                Err(_) => Vec::new(),
            };
            all.sort_unstable();
            all.dedup();
            all
        });
        shared.bufs.get_or_init(|| [0, 1].map(|_| (0..union.len()).map(|_| AtomicU32::new(0)).collect()));
        // Indexes of this thread's sources in the union (both ascending).
        let mut map = Vec::with_capacity(sources.len());
        let mut i = 0;
        for &v in sources {
            i += union[i..].partition_point(|&u| u < v);
            if union.get(i) != Some(&v) {
                return Err(PsError::Aborted("pagerank: another thread of this process failed at load".into()));
            }
            map.push(i as u32);
        }
        let t = shared.threads;
        let mut remote_seen = 0;
        let mut lo = 0;
        while lo < union.len() {
            let blk = union[lo] as u64 / at.b as u64;
            let hi = lo + union[lo..].partition_point(|&u| (u as u64 / at.b as u64) == blk);
            let owner = at.owners.owner(blk);
            if owner / t == at.pid {
                if owner % t == at.tid {
                    self.tasks.push((blk, true, lo..hi));
                }
            } else {
                if remote_seen % t == at.tid {
                    self.tasks.push((blk, false, lo..hi));
                    self.remote.push(blk);
                }
                remote_seen += 1;
            }
            lo = hi;
        }
        Ok(map)
    }

    /// The nodes this thread fills, in order (for [`ThreadShares::set_scale`]).
    pub(super) fn nodes(&self) -> impl Iterator<Item = u32> + '_ {
        let union = self.shared.union.get().map(Vec::as_slice).unwrap_or(&[]);
        self.tasks.iter().flat_map(move |(_, _, r)| union[r.clone()].iter().copied())
    }

    /// The blocks whose out-degrees `set_scale` needs.
    pub(super) fn blocks(&self) -> impl Iterator<Item = u64> + '_ {
        self.tasks.iter().map(|t| t.0)
    }

    pub(super) fn set_scale(&mut self, scale: Vec<f64>) {
        self.scale = scale;
    }

    /// Fills this iteration's shares of this thread's blocks, `previous(x) × scale` of each node's
    /// rank `x` (an owned block's ranks from `own(block)`; the others from the table), then waits
    /// for the process's other threads and returns the array to sum from.
    pub(super) fn fill<'a>(
        &mut self,
        rank: &mut TableHandle<DenseRow<f32>>,
        own: impl Fn(u64) -> &'a [f32],
        previous: impl Fn(f64) -> f64,
        b: usize,
    ) -> Result<&[AtomicU32]> {
        rank.refresh_rows(self.remote.iter().copied());
        let shared = &*self.shared;
        let (union, bufs) = match (shared.union.get(), shared.bufs.get()) {
            (Some(u), Some(b)) => (u, b),
            _ => return Err(PsError::Usage("pagerank: shares used before they were set up".into())),
        };
        let buf = &bufs[self.iteration % 2];
        let mut k = 0;
        for (blk, owned, range) in &self.tasks {
            let (nodes, out) = (&union[range.clone()], &buf[range.clone()]);
            let scale = &self.scale[k..k + nodes.len()];
            k += nodes.len();
            let start = *blk as usize * b;
            if *owned {
                let held = own(*blk);
                for ((&v, s), o) in nodes.iter().zip(scale).zip(out) {
                    o.store(((previous(held[v as usize - start] as f64) * s) as f32).to_bits(), Relaxed);
                }
                continue;
            }
            let row = rank.get(*blk)?;
            for ((&v, s), o) in nodes.iter().zip(scale).zip(out) {
                let x = row
                    .get(v as usize - start)
                    .copied()
                    .ok_or_else(|| PsError::Usage(format!("pagerank: node {v} is past the end of rank block {blk}")))?;
                o.store(((previous(x as f64) * s) as f32).to_bits(), Relaxed);
            }
        }
        shared.gate.wait(&self.meter)?;
        self.iteration += 1;
        Ok(buf)
    }
}

/// The share at `i` of an array [`ThreadShares::fill`] returned.
#[inline]
pub(super) fn share(buf: &[AtomicU32], i: u32) -> f64 {
    f32::from_bits(buf[i as usize].load(Relaxed)) as f64
}

fn lock<T>(m: &Mutex<T>) -> Result<MutexGuard<'_, T>> {
    m.lock().map_err(|_| PsError::Aborted("pagerank: a thread of this process panicked".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_fill_disjoint_blocks_covering_the_union() {
        // 2 processes x 2 threads, blocks of 4 nodes; process 0's threads. Block 2 is the
        // heaviest, so thread 0 takes it and thread 1 the other three of process 0.
        let owners = Owners::assign(2, 2, 8, |k| if k == 2 { 10 } else { 1 });
        assert_eq!([0, 2, 4, 6].map(|k| owners.owner(k)), [1, 0, 1, 1]);
        let shared = Arc::new(ProcessShares::new(2));
        let sources = [vec![0u32, 1, 5, 9, 17, 30], vec![1u32, 4, 9, 22, 31]];
        let parts: Vec<(Vec<Task>, Vec<u32>)> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..2)
                .map(|tid| {
                    let shared = shared.clone();
                    let (src, owners) = (&sources[tid], owners.clone());
                    s.spawn(move || {
                        let mut me = ThreadShares::new(shared, WaitMeter::default());
                        let map = me.join(src, &Place { pid: 0, tid, b: 4, owners }).unwrap();
                        (me.tasks.clone(), map)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let union = shared.union.get().unwrap();
        assert_eq!(union, &vec![0, 1, 4, 5, 9, 17, 22, 30, 31]);
        for (tid, (_, map)) in parts.iter().enumerate() {
            let back: Vec<u32> = map.iter().map(|&i| union[i as usize]).collect();
            assert_eq!(back, sources[tid]);
        }
        // Every block of the union is filled by exactly one thread; owned blocks by their owner.
        let mut filled: Vec<u64> = parts.iter().flat_map(|(t, _)| t.iter().map(|x| x.0)).collect();
        filled.sort_unstable();
        assert_eq!(filled, vec![0, 1, 2, 4, 5, 7]);
        for (tid, (tasks, _)) in parts.iter().enumerate() {
            for (blk, owned, _) in tasks {
                let owner = owners.owner(*blk);
                assert_eq!(*owned, owner / 2 == 0, "block {blk}");
                if *owned {
                    assert_eq!(owner % 2, tid, "block {blk}");
                }
            }
        }
    }
}
