//! A barrier for the threads of one process that can be opened for good: apps whose threads
//! share work inside a process (PageRank's shares, LDA's vocabulary slice) meet at it, and a
//! thread that stops (fails, or is done) opens it so that no other thread waits for it forever.

use ps_runtime::{PsError, Result};
use std::sync::{Condvar, Mutex};

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

    /// Waits until every thread has arrived; an error once a thread has stopped instead.
    pub(super) fn wait(&self) -> Result<()> {
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
        while s.generation == generation {
            if s.open {
                return Err(stopped());
            }
            s = self.cv.wait(s).map_err(|_| stopped())?;
        }
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

    #[test]
    fn a_gate_lets_a_round_through_and_then_tells_waiters_a_thread_stopped() {
        let g = Arc::new(Gate::new(2, "test"));
        let other = {
            let g = g.clone();
            std::thread::spawn(move || g.wait())
        };
        g.wait().unwrap();
        other.join().unwrap().unwrap();
        // One thread waits for a second round; the other stops instead of arriving.
        let waiting = {
            let g = g.clone();
            std::thread::spawn(move || g.wait())
        };
        g.open_for_good();
        assert!(waiting.join().unwrap().is_err());
        assert!(g.wait().is_err());
    }
}
