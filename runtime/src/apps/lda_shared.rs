//! LDA's vocabulary slice, shared by the threads of one process under the rotating schedule.
//!
//! Slices rotate among *processes* (`S = processes x (staleness + 1)`); a process's slice is cut
//! into one sub-slice per thread. In a clock every thread samples its documents' tokens of every
//! sub-slice, one sub-slice at a time (thread `t` its own, then `t + 1`, ... mod `T`), and each
//! sub-slice is held by one thread at a time: its counts are changed in place, by every thread
//! in turn, as serial sampling would. A thread waits only for the thread before it in the cycle
//! to be done with the sub-slice it wants next, not at a barrier after every step. (Taking any
//! free sub-slice instead, in no fixed order, ran as fast but ended 0.2-0.4% lower in
//! log-likelihood per token at 1 x 3 to 1 x 8 on 2 cores. Likely why, not verified: a thread
//! could then finish a clock well ahead of the others, and the topic totals it reads at its next
//! clock miss their whole last clock; the cycle keeps the threads within a step of each other.)
//!
//! When each thread rotated on its own (slices = workers x (staleness + 1)), every thread
//! fetched, copied, diffed and sent every word row once a pass, so the row work of a pass grew
//! with the threads while the sampling did not: at 1 x 8 on 2 cores, two thirds of the CPU was
//! row movement inside one process. Here a row is loaded from the table and its change sent
//! back once per process and clock, by the thread that owns its sub-slice ([`ThreadSlice::load`],
//! [`ThreadSlice::flush`]); between, the threads merge their changes into the process's copy.

use super::lda_rows::{RowChanges, WordRows};
use super::lda_sampler::{CountsFn, WordTopics};
use crate::error::{PsError, Result};
use crate::hash::mix64;
use crate::row::{Row, SparseRow};
use crate::TableHandle;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// What the threads of one process share: a slot per sub-slice (slot `t` loaded and sent by
/// thread `t`) and whose turn each is.
pub(super) struct ProcessSlice {
    turns: Mutex<Turns>,
    cv: Condvar,
    slots: Vec<Mutex<Slot>>,
}

impl ProcessSlice {
    pub(super) fn new(threads: usize) -> Self {
        let turns = Turns { slots: vec![Turn::default(); threads], gone: vec![false; threads] };
        ProcessSlice {
            turns: Mutex::new(turns),
            cv: Condvar::new(),
            slots: (0..threads).map(|_| Mutex::default()).collect(),
        }
    }
}

/// The slots' states, and the threads that have stopped (failed, or finished the job).
struct Turns {
    slots: Vec<Turn>,
    gone: Vec<bool>,
}

/// A slot's state: the clock it is loaded for, whether a thread holds it, and which threads
/// have sampled it in that clock.
#[derive(Clone, Default)]
struct Turn {
    clock: Option<i64>,
    busy: bool,
    visited: Vec<bool>,
}

/// One sub-slice's word rows during a clock: the table rows (ascending) and their counts as
/// the threads change them. The rows as loaded stay in the owner's thread cache, unchanged until
/// it sends the clock's changes, and are read there again to compute them.
#[derive(Default)]
struct Slot {
    rows: Vec<u64>,
    counts: Vec<SparseRow<i32>>,
}

/// The sub-slice of table row `row`, among `threads`: a hash independent of the row's slice
/// (`Plan::hashed_slice` uses the same hash's remainder by the slice count).
pub(super) fn sub_slice(row: u64, threads: usize) -> usize {
    (mix64(row ^ 0x5bd1_e995_0000_0001) % threads.max(1) as u64) as usize
}

fn stopped() -> PsError {
    PsError::Aborted("lda: another thread of this process stopped".into())
}

/// A thread's part in [`ProcessSlice`]. Dropping it (the thread failed, or is done) is told to
/// the others: one that waits for this thread's slot or visit stops instead of waiting forever.
pub(super) struct ThreadSlice {
    shared: Arc<ProcessSlice>,
    tid: usize,
    layout: WordRows,
}

impl Drop for ThreadSlice {
    fn drop(&mut self) {
        if let Ok(mut t) = self.shared.turns.lock() {
            t.gone[self.tid] = true;
        }
        self.shared.cv.notify_all();
    }
}

impl ThreadSlice {
    pub(super) fn new(shared: Arc<ProcessSlice>, tid: usize, layout: WordRows) -> Self {
        ThreadSlice { shared, tid, layout }
    }

    pub(super) fn threads(&self) -> usize {
        self.shared.slots.len()
    }

    fn turns(&self) -> Result<MutexGuard<'_, Turns>> {
        self.shared.turns.lock().map_err(|_| stopped())
    }

    /// Waits until `ready` says so (or fails), holding the turns' lock when it returns.
    fn wait_until(&self, mut ready: impl FnMut(&Turns) -> Result<bool>) -> Result<MutexGuard<'_, Turns>> {
        let mut turns = self.turns()?;
        while !ready(&turns)? {
            turns = self.shared.cv.wait(turns).map_err(|_| stopped())?;
        }
        Ok(turns)
    }

    fn slot(&self, sub: usize) -> Result<MutexGuard<'_, Slot>> {
        self.shared.slots[sub].lock().map_err(|_| stopped())
    }

    /// Loads this thread's sub-slice for `clock`: `rows` (ascending) as the table has them.
    pub(super) fn load(&self, rows: &[u64], wt: &mut TableHandle<SparseRow<i32>>, clock: i64) -> Result<()> {
        {
            let mut slot = self.slot(self.tid)?;
            let Slot { rows: held, counts } = &mut *slot;
            held.clear();
            held.extend_from_slice(rows);
            counts.resize_with(rows.len(), SparseRow::new);
            for (r, c) in rows.iter().zip(counts.iter_mut()) {
                c.clone_from(&*wt.get(*r)?);
            }
        }
        let n = self.threads();
        self.turns()?.slots[self.tid] = Turn { clock: Some(clock), busy: false, visited: vec![false; n] };
        self.shared.cv.notify_all();
        Ok(())
    }

    /// Takes sub-slice `sub` once it is loaded for `clock` and free (the thread before this one
    /// in the cycle is done with it). The counts are given back when the returned value is
    /// dropped.
    pub(super) fn take(&self, sub: usize, clock: i64) -> Result<SlotCounts<'_>> {
        let mut turns = self.wait_until(|t| {
            let s = &t.slots[sub];
            // A slot whose owner has stopped before loading it will never be loaded.
            match (s.clock == Some(clock), s.busy) {
                (true, false) => Ok(true),
                (false, _) if t.gone[sub] => Err(stopped()),
                _ => Ok(false),
            }
        })?;
        turns.slots[sub].busy = true;
        drop(turns);
        Ok(SlotCounts {
            slot: self.slot(sub)?,
            layout: self.layout,
            last: None,
            held: RowChanges::default(),
            give_back: (&self.shared, sub, self.tid),
        })
    }

    /// Sends this thread's sub-slice's changes of the clock to the table, once every thread has
    /// sampled it: each row's counts less the row as loaded.
    pub(super) fn flush(&self, wt: &mut TableHandle<SparseRow<i32>>) -> Result<()> {
        let turns = self.wait_until(|t| {
            let s = &t.slots[self.tid];
            match s.visited.iter().all(|&v| v) {
                true => Ok(true),
                // A thread that stopped without sampling it never will.
                false if s.visited.iter().zip(&t.gone).any(|(&v, &g)| !v && g) => Err(stopped()),
                false => Ok(false),
            }
        })?;
        drop(turns);
        let slot = self.slot(self.tid)?;
        for (&r, now) in slot.rows.iter().zip(&slot.counts) {
            let delta = now.difference(&*wt.get(r)?);
            if let Some(d) = delta.filter(|d| d.nnz() > 0) {
                wt.inc(r, &d);
            }
        }
        Ok(())
    }
}

/// One sub-slice's counts, held for a step: the sampler reads them and its changes are merged
/// in, a row at a time (`RowChanges`).
pub(super) struct SlotCounts<'a> {
    slot: MutexGuard<'a, Slot>,
    layout: WordRows,
    /// The last row looked up and its index.
    last: Option<(u64, usize)>,
    held: RowChanges,
    /// Where to say, when dropped, that thread `.2` is done with sub-slice `.1`.
    give_back: (&'a Arc<ProcessSlice>, usize, usize),
}

impl Drop for SlotCounts<'_> {
    fn drop(&mut self) {
        let (shared, sub, tid) = self.give_back;
        if let Ok(mut t) = shared.turns.lock() {
            t.slots[sub].busy = false;
            if let Some(v) = t.slots[sub].visited.get_mut(tid) {
                *v = true;
            }
        }
        shared.cv.notify_all();
    }
}

impl SlotCounts<'_> {
    fn index(&mut self, row: u64) -> Result<usize> {
        if let Some((r, i)) = self.last {
            if r == row {
                return Ok(i);
            }
        }
        let i = self.slot.rows.binary_search(&row).map_err(|_| {
            PsError::Usage(format!("lda: table row {row} is not in the vocabulary slice its block was made for"))
        })?;
        self.last = Some((row, i));
        Ok(i)
    }

    fn apply(&mut self) -> Result<()> {
        let Some(row) = self.held.row() else { return Ok(()) };
        let i = self.index(row)?;
        let counts = &mut self.slot.counts[i];
        self.held.flush(|_, d| counts.apply(d));
        Ok(())
    }
}

impl WordTopics for SlotCounts<'_> {
    fn with_row(&mut self, word: u32, f: &mut CountsFn<'_>) -> Result<()> {
        if self.held.holds(word) {
            self.apply()?;
        }
        let i = self.index(self.layout.row(word as u64))?;
        f(&mut self.layout.counts(&self.slot.counts[i], word as u64));
        Ok(())
    }

    fn add(&mut self, word: u32, changes: &[(u32, i32)]) -> Result<()> {
        if self.held.row().is_some_and(|r| r != self.layout.row(word as u64)) {
            self.apply()?;
        }
        self.held.add(self.layout, word, changes, |_, _| {});
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.apply()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread that stops before loading its sub-slice is told to the one waiting for it, which
    /// fails instead of waiting forever.
    #[test]
    fn waiting_for_a_stopped_threads_slot_fails() {
        let shared = Arc::new(ProcessSlice::new(2));
        let layout = WordRows { per_row: 16, topics: 4 };
        let me = ThreadSlice::new(shared.clone(), 0, layout);
        let other = ThreadSlice::new(shared, 1, layout);
        let waiter = std::thread::spawn(move || me.take(1, 0).map(|_| ()));
        drop(other);
        assert!(waiter.join().unwrap().is_err());
    }

    #[test]
    fn sub_slices_spread_rows_over_every_thread() {
        let mut per = [0usize; 3];
        (0..3000u64).for_each(|r| per[sub_slice(r, 3)] += 1);
        assert!(per.iter().all(|&n| (900..1100).contains(&n)), "{per:?}");
        assert!((0..100u64).all(|r| sub_slice(r, 1) == 0));
    }
}
