//! What a process shows of itself while it runs: the figures and events its reporter thread sends
//! to the job's tracker (the YARN AM or the local launcher) as [`Report`] lines.
//!
//! Everything here is off the hot path: worker threads publish their counters once per clock
//! (an atomic add each), the client task records a tick per process clock, and the objective
//! reporter and snapshot writer add an event now and then. Without a tracker (`Live::disabled`)
//! only the clock is kept and no events pile up.

use crate::report::{Report, Tick, STALENESS_BUCKETS};
use crate::stats::ThreadStats;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

/// Events queued beyond this are dropped (a tracker that stopped reading must not grow memory);
/// the reporter drains the queue every second, so a job reaches it only without one.
const MAX_QUEUED: usize = 100_000;

pub struct Live {
    enabled: bool,
    threads: usize,
    /// The process clock (the slowest local thread's), for progress.
    pub clock: AtomicI64,
    /// Sum over worker threads of time blocked in the runtime.
    wait_ns: AtomicU64,
    /// Reads by staleness (reader clock - data age), summed over threads.
    staleness: Vec<AtomicU64>,
    events: Mutex<Vec<Report>>,
}

impl Live {
    /// Figures for a tracker: events are queued for [`Live::take_events`].
    pub fn new(threads: usize) -> Live {
        Live {
            enabled: true,
            threads: threads.max(1),
            clock: AtomicI64::new(0),
            wait_ns: AtomicU64::new(0),
            staleness: (0..STALENESS_BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            events: Mutex::new(Vec::new()),
        }
    }

    /// Nobody is watching: only the clock is kept.
    pub fn disabled(threads: usize) -> Live {
        Live { enabled: false, ..Live::new(threads) }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Queues an event for the tracker.
    pub fn push(&self, r: Report) {
        if self.enabled {
            let mut q = self.events.lock().unwrap_or_else(|e| e.into_inner());
            if q.len() < MAX_QUEUED {
                q.push(r);
            }
        }
    }

    /// The events queued since the last call, oldest first.
    pub fn take_events(&self) -> Vec<Report> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Reads so far by staleness, without trailing empty buckets.
    pub fn staleness(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.staleness.iter().map(|a| a.load(Ordering::Relaxed)).collect();
        while v.last() == Some(&0) {
            v.pop();
        }
        v
    }

    /// Mean over worker threads of the seconds blocked in the runtime so far.
    pub fn wait_s(&self) -> f64 {
        self.wait_ns.load(Ordering::Relaxed) as f64 / 1e9 / self.threads as f64
    }

    /// A tick for the end of clock `clock`, `time_s` after the process started.
    pub fn tick(&self, clock: i64, time_s: f64, bytes_sent: u64, bytes_recv: u64) {
        if self.enabled {
            let wait_s = self.wait_s();
            let compute_s = (time_s - wait_s).max(0.0);
            self.push(Report::Tick(Tick { clock, time_s, compute_s, wait_s, bytes_sent, bytes_recv }));
        }
    }
}

/// One worker thread's figures as last published, so that each clock adds only what is new.
#[derive(Default)]
pub struct Published {
    wait_ns: u64,
    staleness: Vec<u64>,
}

impl Published {
    /// Adds what `now` (the thread's totals) has beyond what was published before.
    pub fn publish(&mut self, live: &Live, now: &ThreadStats) {
        if !live.enabled {
            return;
        }
        live.wait_ns.fetch_add(now.wait_ns.saturating_sub(self.wait_ns), Ordering::Relaxed);
        self.wait_ns = now.wait_ns;
        self.staleness.resize(now.staleness.len().max(self.staleness.len()), 0);
        for (d, (n, seen)) in now.staleness.iter().zip(self.staleness.iter_mut()).enumerate() {
            if *n > *seen {
                live.staleness[d.min(STALENESS_BUCKETS - 1)].fetch_add(*n - *seen, Ordering::Relaxed);
                *seen = *n;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_publish_only_what_is_new() {
        let live = Live::new(2);
        let (mut a, mut b) = (Published::default(), Published::default());
        let mut st = ThreadStats { wait_ns: 2_000_000_000, ..Default::default() };
        st.record_get(5, 4);
        st.record_get(5, 3);
        a.publish(&live, &st);
        a.publish(&live, &st);
        st.record_get(9, 8);
        st.record_get(100, 0);
        a.publish(&live, &st);
        b.publish(&live, &ThreadStats { wait_ns: 1_000_000_000, ..Default::default() });
        let mut want = vec![0; STALENESS_BUCKETS];
        (want[1], want[2], want[STALENESS_BUCKETS - 1]) = (2, 1, 1);
        assert_eq!(live.staleness(), want);
        assert!((live.wait_s() - 1.5).abs() < 1e-9);
        live.tick(3, 4.0, 10, 20);
        let t = Tick { clock: 3, time_s: 4.0, compute_s: 2.5, wait_s: 1.5, bytes_sent: 10, bytes_recv: 20 };
        assert_eq!(live.take_events(), vec![Report::Tick(t)]);
        assert!(live.take_events().is_empty());
        // Nobody watching: nothing queued.
        let off = Live::disabled(1);
        off.tick(1, 1.0, 0, 0);
        off.push(Report::Snapshot(1, crate::report::SnapshotState::Part));
        assert!(off.take_events().is_empty());
    }
}
