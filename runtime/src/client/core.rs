//! State shared by all threads of one process: failure flag, control state (ready, barrier,
//! shutdown), the process clock tracker, table registry and network counters. Application threads
//! talk to the communication task only through the `ClientCmd` channel.

use crate::config::{RuntimeConfig, TableConfig};
use crate::error::{PsError, Result};
use crate::row::ProcessTableOps;
use crate::wire::{FetchReq, CLOCK_FINISHED};
use rustc_hash::FxHashMap;
use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedSender;

/// Commands from application threads to the client communication task.
#[derive(Debug)]
pub(crate) enum ClientCmd {
    Fetch {
        server: usize,
        req: FetchReq,
    },
    /// Every local thread completed clock `completed`: send the oplog and a clock message.
    ProcessClock {
        completed: i64,
    },
    Barrier {
        epoch: u64,
        clock: i64,
    },
    Register {
        fingerprint: u64,
    },
    Done,
    /// Ask the name node to abort the whole job with this reason.
    Abort(String),
    /// This process's part of the snapshot at `clock` is stored (JSON `ProcessPart`).
    SnapshotDone {
        clock: i64,
        info: String,
    },
}

pub(crate) struct TableSlot {
    pub cfg: TableConfig,
    pub ops: Arc<dyn ProcessTableOps>,
    pub any: Arc<dyn Any + Send + Sync>,
}

/// Byte and row counters of the process (sockets only count remote traffic).
#[derive(Default)]
pub(crate) struct NetStats {
    pub bytes_sent: AtomicU64,
    pub bytes_recv: AtomicU64,
    pub rows_recv: AtomicU64,
    /// Rows received from other processes' servers (over the network).
    pub rows_recv_remote: AtomicU64,
    pub updates_sent: AtomicU64,
    pub fetches_sent: AtomicU64,
}

#[derive(Default)]
pub(crate) struct Ctl {
    pub ready: bool,
    pub final_acks: usize,
    pub shutdown: bool,
    pub exit: bool,
    /// Peers whose connection closed after shutdown began.
    pub closed_peers: usize,
    /// Snapshot writes queued or running on the writer thread.
    pub snap_jobs: usize,
    /// The local server has seen every client finish (and queued its final snapshot).
    pub server_finished: bool,
}

struct Tracker {
    clocks: Vec<i64>,
    proc_clock: i64,
}

struct LocalBarrier {
    epoch: u64,
    arrived: usize,
    max_clock: i64,
    released: u64,
    release_clock: i64,
}

pub(crate) struct Core {
    pub pid: usize,
    pub nprocs: usize,
    pub cfg: RuntimeConfig,
    pub cmd: UnboundedSender<ClientCmd>,
    /// Per server: every subscribed row of that server is at least this fresh (ESSP).
    pub push_clock: Vec<AtomicI64>,
    pub tables: RwLock<FxHashMap<u32, TableSlot>>,
    pub net: NetStats,
    pub closing: AtomicBool,
    pub start: Instant,
    /// Messages queued to links and not yet written (see `flush_outgoing`).
    pub queued: AtomicI64,
    failed: AtomicBool,
    failure: Mutex<Option<PsError>>,
    pub ctl: Mutex<Ctl>,
    pub ctl_cv: Condvar,
    /// Snapshot and checkpoint support (`checkpoint.url` set).
    pub snaps: Option<crate::snapshot::Snapshots>,
    /// First clock of this run: 0, or the clock of the checkpoint it resumed from.
    pub start_clock: i64,
    /// The process clock, for an observer outside the runtime (YARN progress).
    progress: Option<Arc<AtomicI64>>,
    tracker: Mutex<Tracker>,
    barrier: Mutex<LocalBarrier>,
    barrier_cv: Condvar,
}

/// Sentinel data age of a row that holds no data yet.
pub(crate) const NO_AGE: i64 = i64::MIN / 4;

impl Core {
    pub fn new(
        pid: usize,
        nprocs: usize,
        cfg: RuntimeConfig,
        cmd: UnboundedSender<ClientCmd>,
        snaps: Option<crate::snapshot::Snapshots>,
        progress: Option<Arc<AtomicI64>>,
    ) -> Self {
        let threads = cfg.threads;
        let start_clock = snaps.as_ref().map_or(0, |s| s.start_clock());
        Core {
            pid,
            nprocs,
            cfg,
            cmd,
            push_clock: (0..nprocs).map(|_| AtomicI64::new(NO_AGE)).collect(),
            tables: RwLock::new(FxHashMap::default()),
            net: NetStats::default(),
            closing: AtomicBool::new(false),
            start: Instant::now(),
            queued: AtomicI64::new(0),
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
            ctl: Mutex::new(Ctl::default()),
            ctl_cv: Condvar::new(),
            snaps,
            progress,
            start_clock,
            tracker: Mutex::new(Tracker { clocks: vec![start_clock; threads], proc_clock: start_clock }),
            barrier: Mutex::new(LocalBarrier {
                epoch: 0,
                arrived: 0,
                max_clock: i64::MIN,
                released: 0,
                release_clock: 0,
            }),
            barrier_cv: Condvar::new(),
        }
    }

    /// A queued message was written (or dropped with its link).
    pub fn message_done(&self) {
        if self.queued.fetch_sub(1, Ordering::SeqCst) <= 1 {
            drop(lock(&self.ctl));
            self.ctl_cv.notify_all();
        }
    }

    /// Waits (at most `limit`) until every queued message has been written, so that a failing
    /// process's last words (an abort) reach its peers before its sockets close.
    pub fn flush_outgoing(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        let mut g = lock(&self.ctl);
        while self.queued.load(Ordering::SeqCst) > 0 {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            g = self.ctl_cv.wait_timeout(g, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// Records the first failure of the process and wakes every blocked thread.
    pub fn fail(&self, err: PsError) {
        {
            // The reason is stored before the flag is raised, so `check` always finds it.
            let mut f = lock(&self.failure);
            if f.is_none() {
                log::error!("{err}");
                *f = Some(err);
            }
        }
        self.failed.store(true, Ordering::SeqCst);
        drop(lock(&self.ctl));
        self.ctl_cv.notify_all();
        drop(lock(&self.barrier));
        self.barrier_cv.notify_all();
        if let Ok(tables) = self.tables.read() {
            for t in tables.values() {
                t.ops.wake_all();
            }
        }
    }

    #[inline]
    pub fn check(&self) -> Result<()> {
        if self.failed.load(Ordering::Relaxed) {
            return Err(self.failure().unwrap_or_else(|| PsError::Aborted("unknown failure".into())));
        }
        Ok(())
    }

    pub fn failure(&self) -> Option<PsError> {
        lock(&self.failure).clone()
    }

    pub fn send(&self, cmd: ClientCmd) {
        // The receiver only goes away when the process is being torn down.
        let _ = self.cmd.send(cmd);
    }

    /// Blocks until `done(ctl)` holds, the process fails, or `timeout` passes (`what` names the wait).
    pub fn wait_ctl(&self, what: &str, timeout: Option<Duration>, done: impl Fn(&Ctl) -> bool) -> Result<()> {
        let timeout = timeout.unwrap_or(Duration::from_secs(10 * 365 * 86400));
        let deadline =
            Instant::now().checked_add(timeout).unwrap_or_else(|| Instant::now() + Duration::from_secs(86400));
        let mut g = lock(&self.ctl);
        loop {
            self.check()?;
            if done(&g) {
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(PsError::Aborted(format!("timed out after {:?} waiting for {what}", timeout)));
            }
            g = self.ctl_cv.wait_timeout(g, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    pub fn update_ctl(&self, f: impl FnOnce(&mut Ctl)) {
        f(&mut lock(&self.ctl));
        self.ctl_cv.notify_all();
    }

    /// Thread `tid` is now at clock `clock` (has completed `clock - 1`). When the slowest local
    /// thread moves, the process clock moves and the communication task ships that clock's updates.
    pub fn thread_clocked(&self, tid: usize, clock: i64) {
        let mut t = lock(&self.tracker);
        t.clocks[tid] = clock;
        let min = t.clocks.iter().copied().min().unwrap_or(clock);
        if min > t.proc_clock {
            t.proc_clock = min;
            if let Some(p) = &self.progress {
                p.store(min.min(CLOCK_FINISHED), Ordering::Relaxed);
            }
            // Sent under the lock so the task sees process clocks in order.
            let completed = if min > CLOCK_FINISHED { CLOCK_FINISHED } else { min - 1 };
            self.send(ClientCmd::ProcessClock { completed });
        }
    }

    /// The name node released a barrier at clock `b`: every local thread resumes at `b`.
    pub fn barrier_jump(&self, b: i64) {
        let mut t = lock(&self.tracker);
        for c in t.clocks.iter_mut() {
            *c = (*c).max(b);
        }
        t.proc_clock = t.proc_clock.max(b);
    }

    /// Local part of `global_barrier()`: the last local thread to arrive tells the name node.
    /// Returns the clock every thread resumes at.
    pub fn barrier_wait(&self, clock: i64) -> Result<i64> {
        let mut b = lock(&self.barrier);
        let my_epoch = b.epoch;
        b.arrived += 1;
        b.max_clock = b.max_clock.max(clock);
        if b.arrived == self.cfg.threads {
            self.send(ClientCmd::Barrier { epoch: b.epoch, clock: b.max_clock });
            b.arrived = 0;
            b.max_clock = i64::MIN;
            b.epoch += 1;
        }
        loop {
            self.check()?;
            if b.released > my_epoch {
                return Ok(b.release_clock);
            }
            b = self.barrier_cv.wait(b).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub fn barrier_released(&self, epoch: u64, clock: i64) {
        let mut b = lock(&self.barrier);
        b.released = b.released.max(epoch + 1);
        b.release_clock = clock;
        drop(b);
        self.barrier_cv.notify_all();
    }

    pub fn table_slot<T>(&self, id: u32, f: impl FnOnce(&TableSlot) -> Result<T>) -> Result<T> {
        let tables = self.tables.read().unwrap_or_else(|e| e.into_inner());
        let slot = tables.get(&id).ok_or_else(|| PsError::Usage(format!("table {id} was not created")))?;
        f(slot)
    }
}

/// Locks a mutex, ignoring poisoning: a panicked thread already failed the process.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
