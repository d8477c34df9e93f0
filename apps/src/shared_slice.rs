//! A rotating model slice shared by the threads of one process (LDA's vocabulary slices, MF's
//! item slices).
//!
//! Slices rotate among *processes* (`Names::by_process`: `S = processes x (staleness + 1)`); a
//! process's slice is cut into one sub-slice per thread. In a clock every thread works on its
//! data of every sub-slice, one sub-slice at a time (thread `t` its own, then `t + 1`, ... mod
//! `T`), and each sub-slice is held by one thread at a time: its rows are changed in place, by
//! every thread in turn, as a serial pass would. A thread waits only for the thread before it in
//! the cycle to be done with the sub-slice it wants next, not at a barrier after every step.
//! (Taking any free sub-slice instead, in no fixed order, ran as fast for LDA but ended 0.2-0.4%
//! lower in log-likelihood per token at 1 x 3 to 1 x 8 on 2 cores. Likely why, not verified: a
//! thread could then finish a clock well ahead of the others, and the totals it reads at its next
//! clock miss their whole last clock; the cycle keeps the threads within a step of each other.)
//!
//! When each thread rotated on its own (slices = workers x (staleness + 1)), every thread
//! fetched, copied, diffed and sent every row of the model once a pass, so the row work of a
//! pass grew with the threads while the real work did not: at 1 x 8 on 2 cores, two thirds of
//! LDA's CPU was row movement inside one process. Here a row is loaded from the table and its
//! change sent back once per process and clock, by the thread that owns its sub-slice
//! ([`ThreadSlice::load`], [`ThreadSlice::flush`]); between, the threads change the process's
//! one copy.

use ps_runtime::{PsError, Result, WaitMeter};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// What the threads of one process share: a slot per sub-slice (slot `t` loaded and sent by
/// thread `t`) and whose turn each is. Each thread sleeps on its own condition variable and is
/// woken only by a change of the slot it waits for: with one variable for all, every step of
/// every thread woke all the others (T^2 wake-ups a clock; 12,500 context switches in a 6-pass
/// MF job at 1 x 16 on 2 cores).
pub(super) struct ProcessSlice<V> {
    turns: Mutex<Turns>,
    wake: Vec<Condvar>,
    slots: Vec<Mutex<Slot<V>>>,
}

impl<V> ProcessSlice<V> {
    pub(super) fn new(threads: usize) -> Self {
        let turns =
            Turns { slots: vec![Turn::default(); threads], gone: vec![false; threads], waits_for: vec![None; threads] };
        let slots = (0..threads).map(|_| Mutex::new(Slot::empty())).collect();
        ProcessSlice { turns: Mutex::new(turns), wake: (0..threads).map(|_| Condvar::new()).collect(), slots }
    }

    /// Wakes the threads waiting for a change of slot `sub` (`turns` is the locked state).
    fn changed(&self, turns: &Turns, sub: usize) {
        for (t, w) in turns.waits_for.iter().enumerate() {
            if *w == Some(sub) {
                self.wake[t].notify_one();
            }
        }
    }

    fn wake_all(&self) {
        self.wake.iter().for_each(Condvar::notify_one);
    }
}

/// The slots' states, the threads that have stopped (failed, or finished the job), and the slot
/// each sleeping thread waits for.
struct Turns {
    slots: Vec<Turn>,
    gone: Vec<bool>,
    waits_for: Vec<Option<usize>>,
}

/// A slot's state: the clock it is loaded for, whether a thread holds it, and which threads
/// have worked on it in that clock.
#[derive(Clone, Default)]
struct Turn {
    clock: Option<i64>,
    busy: bool,
    visited: Vec<bool>,
}

/// One sub-slice's rows during a clock: the table rows (ascending) and their values as the
/// threads change them, in whatever form the app works on them (`V`). The rows as loaded stay in
/// the owner's thread cache, unchanged until it sends the clock's changes, and are read there
/// again to compute them.
pub(super) struct Slot<V> {
    rows: Vec<u64>,
    /// `values[i]` is row `rows[i]`'s; any past the rows are spare, kept for reuse.
    pub(super) values: Vec<V>,
    /// `at[row - rows[0]]` is row's place in `rows` (`u32::MAX` for none), when the rows' span is
    /// at most a few times their number: a training loop looks a row up for nearly every rating
    /// or token, and a binary search there cost MF's 1-thread loop a tenth of its time.
    at: Vec<u32>,
}

impl<V> Slot<V> {
    fn empty() -> Self {
        Slot { rows: Vec::new(), values: Vec::new(), at: Vec::new() }
    }

    /// Where table row `row` is in `values`.
    #[inline]
    pub(super) fn index(&self, row: u64) -> Result<usize> {
        if self.at.is_empty() {
            return self.rows.binary_search(&row).map_err(|_| not_in_slice(row));
        }
        // `at` is not empty, so neither are the rows.
        match row.checked_sub(self.rows[0]).and_then(|k| self.at.get(k as usize)) {
            Some(&i) if i != u32::MAX => Ok(i as usize),
            _ => Err(not_in_slice(row)),
        }
    }

    /// Sets the rows (ascending) and their places.
    fn set_rows(&mut self, rows: &[u64]) {
        self.rows.clear();
        self.rows.extend_from_slice(rows);
        self.at.clear();
        if let (Some(&lo), Some(&hi)) = (rows.first(), rows.last()) {
            let span = (hi - lo) as usize + 1;
            if span <= 4 * rows.len() + 1024 {
                self.at.resize(span, u32::MAX);
                for (i, &r) in rows.iter().enumerate() {
                    self.at[(r - lo) as usize] = i as u32;
                }
            }
        }
    }
}

fn not_in_slice(row: u64) -> PsError {
    PsError::Usage(format!("table row {row} is not in the model slice its block of the data was made for"))
}

fn stopped() -> PsError {
    PsError::Aborted("another thread of this process stopped".into())
}

/// A thread's part in [`ProcessSlice`]. Dropping it (the thread failed, or is done) is told to
/// the others: one that waits for this thread's slot or visit stops instead of waiting forever.
/// Time spent waiting for a turn goes to the thread's `meter` (the stats' `handoff_wait_s`).
pub(super) struct ThreadSlice<V> {
    shared: Arc<ProcessSlice<V>>,
    tid: usize,
    meter: WaitMeter,
}

impl<V> Drop for ThreadSlice<V> {
    fn drop(&mut self) {
        if let Ok(mut t) = self.shared.turns.lock() {
            t.gone[self.tid] = true;
        }
        self.shared.wake_all();
    }
}

impl<V: Default> ThreadSlice<V> {
    pub(super) fn new(shared: Arc<ProcessSlice<V>>, tid: usize, meter: WaitMeter) -> Self {
        ThreadSlice { shared, tid, meter }
    }

    pub(super) fn threads(&self) -> usize {
        self.shared.slots.len()
    }

    /// This thread's place among its process's threads (the sub-slice it loads and sends).
    pub(super) fn tid(&self) -> usize {
        self.tid
    }

    fn turns(&self) -> Result<MutexGuard<'_, Turns>> {
        self.shared.turns.lock().map_err(|_| stopped())
    }

    /// Waits until `ready` says so (or fails), holding the turns' lock when it returns; `sub`:
    /// the slot whose changes can make it so.
    fn wait_until(&self, sub: usize, mut ready: impl FnMut(&Turns) -> Result<bool>) -> Result<MutexGuard<'_, Turns>> {
        let mut turns = self.turns()?;
        // Timed only when it blocks: the clock is not read on the way through.
        let mut blocked = None;
        while !ready(&turns)? {
            blocked.get_or_insert_with(Instant::now);
            turns.waits_for[self.tid] = Some(sub);
            let woken = self.shared.wake[self.tid].wait(turns);
            turns = woken.map_err(|_| stopped())?;
            turns.waits_for[self.tid] = None;
        }
        if let Some(t0) = blocked {
            self.meter.add(t0.elapsed());
        }
        Ok(turns)
    }

    fn slot(&self, sub: usize) -> Result<MutexGuard<'_, Slot<V>>> {
        self.shared.slots[sub].lock().map_err(|_| stopped())
    }

    /// Loads this thread's sub-slice for `clock`: `rows` (ascending), each value made by
    /// `fill(row, value)` from the table (the value is the one of a previous clock, to reuse).
    pub(super) fn load(&self, rows: &[u64], clock: i64, mut fill: impl FnMut(u64, &mut V) -> Result<()>) -> Result<()> {
        {
            let mut slot = self.slot(self.tid)?;
            slot.set_rows(rows);
            let values = &mut slot.values;
            // Values past the rows are kept for later clocks: slices differ in their number of
            // rows, and dropping and remaking values (LDA's lists) each clock had the threads
            // queue on the allocator's lock.
            if values.len() < rows.len() {
                values.resize_with(rows.len(), V::default);
            }
            for (&r, v) in rows.iter().zip(values.iter_mut()) {
                fill(r, v)?;
            }
        }
        let n = self.threads();
        let mut turns = self.turns()?;
        turns.slots[self.tid] = Turn { clock: Some(clock), busy: false, visited: vec![false; n] };
        self.shared.changed(&turns, self.tid);
        Ok(())
    }

    /// Takes sub-slice `sub` once it is loaded for `clock` and free (the thread before this one
    /// in the cycle is done with it). It is given back when the returned value is dropped.
    pub(super) fn take(&self, sub: usize, clock: i64) -> Result<Held<'_, V>> {
        let mut turns = self.wait_until(sub, |t| {
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
        Ok(Held { slot: self.slot(sub)?, shared: &self.shared, sub, tid: self.tid })
    }

    /// Sends this thread's sub-slice's changes of the clock once every thread has worked on it:
    /// `write(row, now)` for each row (the table's copy is still the row as loaded).
    pub(super) fn flush(&self, mut write: impl FnMut(u64, &V) -> Result<()>) -> Result<()> {
        let turns = self.wait_until(self.tid, |t| {
            let s = &t.slots[self.tid];
            match s.visited.iter().all(|&v| v) {
                true => Ok(true),
                // A thread that stopped without working on it never will.
                false if s.visited.iter().zip(&t.gone).any(|(&v, &g)| !v && g) => Err(stopped()),
                false => Ok(false),
            }
        })?;
        drop(turns);
        let slot = self.slot(self.tid)?;
        for (&r, now) in slot.rows.iter().zip(&slot.values) {
            write(r, now)?;
        }
        Ok(())
    }
}

/// A sub-slice held by one thread for a step; given back (and the step counted) when dropped.
pub(super) struct Held<'a, V> {
    slot: MutexGuard<'a, Slot<V>>,
    shared: &'a Arc<ProcessSlice<V>>,
    sub: usize,
    tid: usize,
}

impl<V> std::ops::Deref for Held<'_, V> {
    type Target = Slot<V>;
    fn deref(&self) -> &Slot<V> {
        &self.slot
    }
}

impl<V> std::ops::DerefMut for Held<'_, V> {
    fn deref_mut(&mut self) -> &mut Slot<V> {
        &mut self.slot
    }
}

impl<V> Drop for Held<'_, V> {
    fn drop(&mut self) {
        match self.shared.turns.lock() {
            Ok(mut t) => {
                t.slots[self.sub].busy = false;
                if let Some(v) = t.slots[self.sub].visited.get_mut(self.tid) {
                    *v = true;
                }
                self.shared.changed(&t, self.sub);
            }
            // Poisoned: a thread panicked; every waiter fails on its next look.
            Err(_) => self.shared.wake_all(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row's place is found through the direct table when the rows are dense enough, by binary
    /// search otherwise, and a row not in the slot is an error either way.
    #[test]
    fn rows_are_found_in_their_slot() {
        for rows in [vec![3u64, 4, 7, 9, 10], vec![5, 100_000, 9_000_000]] {
            let mut slot = Slot::<u8>::empty();
            slot.set_rows(&rows);
            assert_eq!(slot.at.is_empty(), rows.len() == 3, "direct table only for dense rows");
            for (i, &r) in rows.iter().enumerate() {
                assert_eq!(slot.index(r).unwrap(), i);
            }
            for missing in [0, 6, 8, 11, 99_999, u64::MAX] {
                assert!(slot.index(missing).is_err(), "{missing} in {rows:?}");
            }
        }
        let mut slot = Slot::<u8>::empty();
        slot.set_rows(&[]);
        assert!(slot.index(0).is_err());
    }

    /// A thread waiting for its turn at a sub-slice is charged the time until the holder gives
    /// it back.
    #[test]
    fn the_wait_for_a_turn_is_metered() {
        let shared = Arc::new(ProcessSlice::<Vec<f32>>::new(2));
        let me = ThreadSlice::new(shared.clone(), 0, WaitMeter::default());
        me.load(&[7], 0, |_, v| {
            v.push(1.0);
            Ok(())
        })
        .unwrap();
        let held = me.take(0, 0).unwrap();
        let meter = WaitMeter::default();
        let waiter = {
            let (shared, meter) = (shared.clone(), meter.clone());
            std::thread::spawn(move || ThreadSlice::new(shared, 1, meter).take(0, 0).map(|h| h.values[0].clone()))
        };
        // Waiting (and so timing) once its turn state says so.
        while shared.turns.lock().unwrap().waits_for[1].is_none() {
            std::thread::yield_now();
        }
        let hold = std::time::Duration::from_millis(30);
        std::thread::sleep(hold);
        drop(held);
        assert_eq!(waiter.join().unwrap().unwrap(), vec![1.0]);
        assert!(meter.waited() >= hold, "{:?}", meter.waited());
        assert_eq!(me.meter.waited(), std::time::Duration::ZERO, "the holder never waited");
    }

    /// A thread that stops before loading its sub-slice is told to the one waiting for it, which
    /// fails instead of waiting forever.
    #[test]
    fn waiting_for_a_stopped_threads_slot_fails() {
        let shared = Arc::new(ProcessSlice::<Vec<f32>>::new(2));
        let me = ThreadSlice::new(shared.clone(), 0, WaitMeter::default());
        let other = ThreadSlice::new(shared, 1, WaitMeter::default());
        let waiter = std::thread::spawn(move || me.take(1, 0).map(|_| ()));
        drop(other);
        assert!(waiter.join().unwrap().is_err());
    }
}
