//! A barrier for the threads of one process that can be opened for good: apps whose threads
//! share work inside a process (PageRank's shares, LDA's vocabulary slice) meet at it, and a
//! thread that stops (fails, or is done) opens it so that no other thread waits for it forever.

use ps_runtime::{PsError, Result, WaitMeter};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

/// It blocks (no spinning); a generation count tells a thread that its own round completed,
/// even when the gate was opened for good just after.
pub(super) struct Gate {
    state: Mutex<GateState>,
    cv: Condvar,
    threads: usize,
    /// The app, for messages.
    app: &'static str,
}

#[derive(Default)]
struct GateState {
    arrived: usize,
    generation: u64,
    open: bool,
}

impl Gate {
    pub(super) fn new(threads: usize, app: &'static str) -> Self {
        Gate { state: Mutex::new(GateState::default()), cv: Condvar::new(), threads, app }
    }

    /// Waits until every thread has arrived; an error once a thread has stopped instead. The
    /// time blocked goes to `meter`.
    pub(super) fn wait(&self, meter: &WaitMeter) -> Result<()> {
        let stopped = || PsError::Aborted(format!("{}: another thread of this process stopped", self.app));
        let mut s = self.state.lock().map_err(|_| stopped())?;
        if s.open {
            return Err(stopped());
        }
        let generation = s.generation;
        s.arrived += 1;
        if s.arrived == self.threads {
            s.arrived = 0;
            s.generation += 1;
            self.cv.notify_all();
            return Ok(());
        }
        let t0 = Instant::now();
        while s.generation == generation {
            if s.open {
                meter.add(t0.elapsed());
                return Err(stopped());
            }
            s = self.cv.wait(s).map_err(|_| stopped())?;
        }
        meter.add(t0.elapsed());
        Ok(())
    }

    pub(super) fn open_for_good(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.open = true;
        }
        self.cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    fn arrive(g: &Arc<Gate>) -> std::thread::JoinHandle<(Result<()>, Duration)> {
        let g = g.clone();
        std::thread::spawn(move || {
            let meter = WaitMeter::default();
            (g.wait(&meter), meter.waited())
        })
    }

    #[test]
    fn a_gate_lets_a_round_through_and_then_tells_waiters_a_thread_stopped() {
        let g = Arc::new(Gate::new(2, "test"));
        let other = arrive(&g);
        g.wait(&WaitMeter::default()).unwrap();
        other.join().unwrap().0.unwrap();
        // One thread waits for a second round; the other stops instead of arriving.
        let waiting = arrive(&g);
        g.open_for_good();
        assert!(waiting.join().unwrap().0.is_err());
        assert!(g.wait(&WaitMeter::default()).is_err());
    }

    /// A thread that arrives first is charged the time until the last one arrives; the last one
    /// passes straight through and is charged nothing.
    #[test]
    fn the_time_blocked_at_a_gate_is_metered() {
        let g = Arc::new(Gate::new(2, "test"));
        let first = arrive(&g);
        // Arrived (and so timing) once the count says so.
        while g.state.lock().unwrap().arrived == 0 {
            std::thread::yield_now();
        }
        let held = Duration::from_millis(30);
        std::thread::sleep(held);
        let last = WaitMeter::default();
        g.wait(&last).unwrap();
        let (r, waited) = first.join().unwrap();
        r.unwrap();
        assert!(waited >= held, "{waited:?}");
        assert_eq!(last.waited(), Duration::ZERO);
    }
}
