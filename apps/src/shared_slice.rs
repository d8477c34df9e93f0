//! A rotating model slice shared by the threads of one process (LDA's vocabulary slices, MF's
//! item slices).
//!
//! Slices rotate among *processes* (`Names::by_process`: `S = processes x (staleness + 1)`, one
//! slice, the whole model, for a single process); a process's slice is cut into
//! [`subs_per_thread`] sub-slices per thread. In a clock every thread works on its data of every
//! sub-slice, one sub-slice at a time (thread `t` its own first, then on round the cycle), and
//! each sub-slice is held by one thread at a time: its rows are changed in place, by every thread
//! in turn, as a serial pass would. A thread waits only for the thread ahead of it in the cycle
//! to be done with the sub-slice it wants next, not at a barrier after every step.
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

/// Sub-slices a thread owns (loads and sends) in a job of `processes` processes: two when the
/// one process holds the whole model, else one. A step works on one sub-slice's rows, so a
/// clock's slice is visited in parts that stay in cache; but each step also streams through the
/// thread's own rows for that part (MF's users), so parts smaller than need be cost more than
/// they save:
/// - one process, one slice (`rotation::Plan`): MF's single thread on the whole item model in
///   one step ran 10% slower on 2 cores than in two (the old two slices of one sub-slice);
/// - several processes, a slice being `1 / (P (s + 1))` of the model: two a thread made MF at
///   2 x 1 8% slower per pass (0.183 against 0.169 s, 3 rounds of the end-to-end benchmark).
///
/// Two also give a thread a step's head start on its neighbour's turn (the waits for a turn at
/// 1 x 4 on 2 cores halved). Cutting finer never lengthens a clock's critical path: a
/// sub-slice's rows are visited by every thread in turn, so a clock is at least as long as the
/// work on its busiest row (a popular item) however the rest is cut.
pub(super) fn subs_per_thread(processes: usize) -> usize {
    if processes == 1 {
        2
    } else {
        1
    }
}

/// What the threads of one process share: a slot per sub-slice (slots `t k .. (t + 1) k` loaded
/// and sent by thread `t`, for `k` sub-slices a thread) and whose turn each is. Each thread
/// sleeps on its own condition variable and is woken only by a change of the slot it waits for:
/// with one variable for all, every step of every thread woke all the others (T^2 wake-ups a
/// clock; 12,500 context switches in a 6-pass MF job at 1 x 16 on 2 cores).
pub(super) struct ProcessSlice<V> {
    turns: Mutex<Turns>,
    wake: Vec<Condvar>,
    slots: Vec<Mutex<Slot<V>>>,
    /// Sub-slices a thread owns.
    per: usize,
}

impl<V> ProcessSlice<V> {
    /// The slice of a process with `threads` threads, cut into `per` sub-slices a thread
    /// ([`subs_per_thread`]).
    pub(super) fn new(threads: usize, per: usize) -> Self {
        let (threads, per) = (threads.max(1), per.max(1));
        let n = threads * per;
        let turns =
            Turns { slots: vec![Turn::default(); n], gone: vec![false; threads], waits_for: vec![None; threads] };
        let slots = (0..n).map(|_| Mutex::new(Slot::empty())).collect();
        let wake = (0..threads).map(|_| Condvar::new()).collect();
        ProcessSlice { turns: Mutex::new(turns), wake, slots, per }
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
        self.shared.wake.len()
    }

    /// The sub-slices of the process's slice.
    pub(super) fn subs(&self) -> usize {
        self.shared.slots.len()
    }

    /// The sub-slices this thread loads and sends, ascending; its clock starts at the first.
    pub(super) fn owned(&self) -> std::ops::Range<usize> {
        self.tid * self.shared.per..(self.tid + 1) * self.shared.per
    }

    /// The order in which this thread visits the sub-slices in a clock: its own first, then on
    /// round the cycle.
    pub(super) fn visits(&self) -> impl Iterator<Item = usize> {
        let (n, first) = (self.subs(), self.owned().start);
        (0..n).map(move |u| (first + u) % n)
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

    /// Loads sub-slice `sub` (one of [`Self::owned`]) for `clock`: `rows` (ascending), each value
    /// made by `fill(row, value)` from the table (the value is the one of a previous clock, to
    /// reuse).
    pub(super) fn load(
        &self,
        sub: usize,
        rows: &[u64],
        clock: i64,
        mut fill: impl FnMut(u64, &mut V) -> Result<()>,
    ) -> Result<()> {
        debug_assert!(self.owned().contains(&sub), "thread {} loads sub-slice {sub}", self.tid);
        {
            let mut slot = self.slot(sub)?;
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
        turns.slots[sub] = Turn { clock: Some(clock), busy: false, visited: vec![false; n] };
        self.shared.changed(&turns, sub);
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
                (false, _) if t.gone[sub / self.shared.per] => Err(stopped()),
                _ => Ok(false),
            }
        })?;
        turns.slots[sub].busy = true;
        drop(turns);
        Ok(Held { slot: self.slot(sub)?, shared: &self.shared, sub, tid: self.tid })
    }

    /// Sends the changes of the clock of this thread's sub-slices, each once every thread has
    /// worked on it: `write(row, now)` for each row (the table's copy is still the row as loaded).
    pub(super) fn flush(&self, mut write: impl FnMut(u64, &V) -> Result<()>) -> Result<()> {
        for sub in self.owned() {
            let turns = self.wait_until(sub, |t| {
                let s = &t.slots[sub];
                match s.visited.iter().all(|&v| v) {
                    true => Ok(true),
                    // A thread that stopped without working on it never will.
                    false if s.visited.iter().zip(&t.gone).any(|(&v, &g)| !v && g) => Err(stopped()),
                    false => Ok(false),
                }
            })?;
            drop(turns);
            let slot = self.slot(sub)?;
            for (&r, now) in slot.rows.iter().zip(&slot.values) {
                write(r, now)?;
            }
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
        let shared = Arc::new(ProcessSlice::<Vec<f32>>::new(2, 2));
        let me = ThreadSlice::new(shared.clone(), 0, WaitMeter::default());
        me.load(0, &[7], 0, |_, v| {
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

    /// Each thread owns its sub-slices and starts its clock at its first; every thread
    /// visits every sub-slice once, and a sub-slice's visitors come in the same order as with one
    /// sub-slice a thread (its owner first, then the thread before it in the cycle, ...).
    #[test]
    fn threads_own_their_sub_slices_and_visit_all_in_a_cycle() {
        assert_eq!((subs_per_thread(1), subs_per_thread(3)), (2, 1));
        let (t, per) = (3, 2);
        let shared = Arc::new(ProcessSlice::<u8>::new(t, per));
        let threads: Vec<_> = (0..t).map(|k| ThreadSlice::new(shared.clone(), k, WaitMeter::default())).collect();
        assert_eq!(threads[0].subs(), t * per);
        let mut owner = vec![None; t * per];
        for th in &threads {
            for s in th.owned() {
                assert_eq!(owner[s].replace(th.tid), None, "sub-slice {s} owned twice");
            }
            let visits: Vec<usize> = th.visits().collect();
            assert_eq!(visits[0], th.owned().start);
            let mut sorted = visits.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..t * per).collect::<Vec<_>>());
        }
        for (s, o) in owner.iter().enumerate() {
            // The step at which each thread reaches sub-slice s.
            let step = |th: &ThreadSlice<u8>| th.visits().position(|v| v == s).unwrap();
            let mut by_step: Vec<usize> = (0..t).collect();
            by_step.sort_by_key(|&k| step(&threads[k]));
            let o = o.unwrap();
            assert_eq!(by_step, (0..t).map(|i| (o + t - i) % t).collect::<Vec<_>>(), "visitors of {s}");
        }
    }

    /// A thread that stops before loading its sub-slice is told to the one waiting for it, which
    /// fails instead of waiting forever.
    #[test]
    fn waiting_for_a_stopped_threads_slot_fails() {
        let shared = Arc::new(ProcessSlice::<Vec<f32>>::new(2, 2));
        let me = ThreadSlice::new(shared.clone(), 0, WaitMeter::default());
        let other = ThreadSlice::new(shared, 1, WaitMeter::default());
        let theirs = other.owned().start;
        let waiter = std::thread::spawn(move || me.take(theirs, 0).map(|_| ()));
        drop(other);
        assert!(waiter.join().unwrap().is_err());
    }
}
