//! The process clock and the local part of `global_barrier()`.
//!
//! The process clock is the minimum of the local threads' clocks: when the slowest thread moves,
//! the process has completed a clock and the communication task ships that clock's updates.

use crate::clock::{Age, Clock};
use crate::error::Result;
use crate::state::{lock, ClientCmd, Shared, Wake};
use std::sync::atomic::Ordering;
use std::sync::{Condvar, Mutex};

struct Clocks {
    threads: Vec<Clock>,
    process: Clock,
}

pub(crate) struct ClockTracker {
    clocks: Mutex<Clocks>,
}

impl ClockTracker {
    pub fn new(threads: usize, start: Clock) -> Self {
        ClockTracker { clocks: Mutex::new(Clocks { threads: vec![start; threads], process: start }) }
    }

    /// Thread `tid` is now at clock `clock` (has completed the one before). When the slowest
    /// local thread moves, the process clock moves and its updates are shipped.
    pub fn thread_clocked(&self, shared: &Shared, tid: usize, clock: Clock) {
        let mut t = lock(&self.clocks);
        t.threads[tid] = clock;
        let min = t.threads.iter().copied().min().unwrap_or(clock);
        if min > t.process {
            t.process = min;
            // For the tracker's progress: a finished process reports FINISHED, but threads that
            // end because the job failed do not make the process look done.
            if min < Clock::FINISHED || shared.check().is_ok() {
                shared.live.clock.store(min.get().min(Age::FINISHED.get()), Ordering::Relaxed);
            }
            // Sent under the lock so the task sees process clocks in order.
            shared.send(ClientCmd::ProcessClock { completed: min.completed() });
        }
    }

    /// The name node released a barrier at clock `b`: every local thread resumes at `b`.
    pub fn barrier_jump(&self, b: Clock) {
        let mut t = lock(&self.clocks);
        for c in t.threads.iter_mut() {
            *c = (*c).max(b);
        }
        t.process = t.process.max(b);
    }
}

struct BarrierState {
    epoch: u64,
    arrived: usize,
    max_clock: Option<Clock>,
    released: u64,
    release_clock: Clock,
}

/// The local part of `global_barrier()`: the last local thread to arrive tells the name node.
pub(crate) struct LocalBarrier {
    threads: usize,
    state: Mutex<BarrierState>,
    cv: Condvar,
}

impl LocalBarrier {
    pub fn new(threads: usize) -> Self {
        LocalBarrier {
            threads,
            state: Mutex::new(BarrierState {
                epoch: 0,
                arrived: 0,
                max_clock: None,
                released: 0,
                release_clock: Clock::default(),
            }),
            cv: Condvar::new(),
        }
    }

    /// Blocks until the name node releases the barrier; returns the clock every thread resumes at.
    pub fn wait(&self, shared: &Shared, clock: Clock) -> Result<Clock> {
        let mut b = lock(&self.state);
        let my_epoch = b.epoch;
        b.arrived += 1;
        let max = b.max_clock.map_or(clock, |m| m.max(clock));
        b.max_clock = Some(max);
        if b.arrived == self.threads {
            shared.send(ClientCmd::Barrier { epoch: b.epoch, clock: max });
            b.arrived = 0;
            b.max_clock = None;
            b.epoch += 1;
        }
        loop {
            shared.check()?;
            if b.released > my_epoch {
                return Ok(b.release_clock);
            }
            b = self.cv.wait(b).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub fn released(&self, epoch: u64, clock: Clock) {
        let mut b = lock(&self.state);
        b.released = b.released.max(epoch + 1);
        b.release_clock = clock;
        drop(b);
        self.cv.notify_all();
    }
}

impl Wake for LocalBarrier {
    fn wake_all(&self) {
        drop(lock(&self.state));
        self.cv.notify_all();
    }
}
