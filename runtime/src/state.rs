//! Process-wide state shared by the layers of one runtime process (client, server, network,
//! snapshot writer), split by concern. The process layer (`process.rs`) creates it and hands
//! each layer an `Arc<Shared>`; what only the client uses (clock tracker, local barrier, table
//! registry, push clocks) lives in `client/`.
//!
//! * [`Failure`]: the first error of the process; raising it wakes every blocked thread.
//! * [`Control`]: the control state machine (ready, final acks, shutdown, exit) and the count of
//!   messages queued on links, with one condition variable.
//! * [`NetStats`]: byte and row counters.
//! * The command channel ([`ClientCmd`]) from application threads and the snapshot writer to the
//!   client communication task, the only way they talk to the network.

use crate::clock::{Age, Clock};
use crate::config::RuntimeConfig;
use crate::error::{PsError, Result};
use crate::geo::Topology;
use crate::live::Live;
use crate::mailbox::Mailbox;
use crate::wire::{FetchReq, Msg};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedSender;

/// Commands to the client communication task.
#[derive(Debug)]
pub(crate) enum ClientCmd {
    Fetch {
        server: usize,
        req: FetchReq,
    },
    /// Several fetches asked for at once (`TableHandle::fetch_ahead_rows`, the prefetch at a
    /// clock's end): one command instead of one per row, each of which could wake the
    /// communication thread.
    Fetches(Vec<(usize, FetchReq)>),
    /// Every local thread completed the clocks up to `completed`: send the oplog and a clock
    /// message.
    ProcessClock {
        completed: Age,
    },
    Barrier {
        epoch: u64,
        clock: Clock,
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
    /// Send a message as is to process `server` (worker-to-worker exchange parts).
    Send {
        server: usize,
        msg: Msg,
    },
}

/// Something with threads blocked on it that must wake up when the process fails.
pub(crate) trait Wake: Send + Sync {
    fn wake_all(&self);
}

/// The first failure of the process.
#[derive(Default)]
pub(crate) struct Failure {
    failed: AtomicBool,
    reason: Mutex<Option<PsError>>,
    wakers: Mutex<Vec<Weak<dyn Wake>>>,
}

impl Failure {
    /// `w` is woken when the process fails (held weakly: it may go away first).
    pub fn on_failure(&self, w: Weak<dyn Wake>) {
        lock(&self.wakers).push(w);
    }

    #[inline]
    pub fn check(&self) -> Result<()> {
        if self.failed.load(Ordering::Relaxed) {
            return Err(self.reason().unwrap_or_else(|| PsError::Aborted("unknown failure".into())));
        }
        Ok(())
    }

    pub fn reason(&self) -> Option<PsError> {
        lock(&self.reason).clone()
    }

    /// Records `err` if it is the first failure, or if it is this process's own error and the
    /// one recorded only says a peer went away or the job was aborted: when every process fails
    /// alike, the first to exit must not make the others report its departure instead of their
    /// own reason. Returns the wakers to notify.
    fn raise(&self, err: PsError) -> Vec<Weak<dyn Wake>> {
        {
            // The reason is stored before the flag is raised, so `check` always finds it.
            let mut f = lock(&self.reason);
            let consequence = |e: &PsError| matches!(e, PsError::PeerLost { .. } | PsError::Aborted(_));
            if f.as_ref().is_none_or(|old| consequence(old) && !consequence(&err)) {
                log::error!("{err}");
                *f = Some(err);
            }
        }
        self.failed.store(true, Ordering::SeqCst);
        lock(&self.wakers).clone()
    }
}

/// The control state machine of a process.
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

/// Control state plus the messages queued on links and not yet written, under one condvar.
#[derive(Default)]
pub(crate) struct Control {
    ctl: Mutex<Ctl>,
    cv: Condvar,
    queued: AtomicI64,
    /// Shutdown began: connections closing now are expected.
    pub closing: AtomicBool,
}

/// Byte and row counters of the process (sockets only count remote traffic).
#[derive(Default)]
pub(crate) struct NetStats {
    pub bytes_sent: AtomicU64,
    pub bytes_recv: AtomicU64,
    /// The part of `bytes_sent` this process's server sent to clients (rows and acks): the
    /// "received" side of LazyTable's Table 2; the rest is client and control traffic.
    pub server_bytes_sent: AtomicU64,
    pub rows_recv: AtomicU64,
    /// Rows received from other processes' servers (over the network).
    pub rows_recv_remote: AtomicU64,
    pub updates_sent: AtomicU64,
    pub fetches_sent: AtomicU64,
    /// Bytes sent to and received from processes in other data centers (also in the totals).
    pub wan_bytes_sent: AtomicU64,
    pub wan_bytes_recv: AtomicU64,
    /// ASP: rows this server sent to its mirrors; reads it held back for a slow mirror;
    /// selective barriers it sent.
    pub significant_updates: AtomicU64,
    pub mirror_clock_waits: AtomicU64,
    pub selective_barriers: AtomicU64,
    /// Periodic checkpoints the name node gave up (they could not be written).
    pub snapshots_abandoned: AtomicU64,
    /// Periodic checkpoints process 0 planned to skip (the one before was still being written).
    pub snapshots_skipped: AtomicU64,
}

/// The state every layer of a process shares.
pub(crate) struct Shared {
    pub pid: usize,
    pub nprocs: usize,
    pub cfg: RuntimeConfig,
    /// First clock of this run: 0, or the clock of the checkpoint it resumed from.
    pub start_clock: Clock,
    pub start: Instant,
    pub failure: Failure,
    pub control: Control,
    pub net: NetStats,
    /// Buffers of `Worker::exchange` addressed to this process's threads.
    pub mailbox: Mailbox,
    /// Data centers: who serves this process's client, who mirrors its server (ASP).
    pub topo: Topology,
    /// The processes whose servers this process's client uses (`topo.servers_for(pid)`).
    pub servers: Vec<usize>,
    /// Figures and events for the job's tracker (progress reports).
    pub live: Arc<Live>,
    /// The data age this process's server can serve (its global clock): with every server's
    /// vector clock covering every client, the freshest age any read could get now.
    pub served_age: AtomicI64,
    cmd: UnboundedSender<ClientCmd>,
}

impl Shared {
    pub fn new(
        pid: usize,
        nprocs: usize,
        cfg: RuntimeConfig,
        start_clock: Clock,
        cmd: UnboundedSender<ClientCmd>,
        live: Arc<Live>,
    ) -> Self {
        let mailbox = Mailbox::new(nprocs * cfg.threads);
        let topo = Topology::new(&cfg.geo, nprocs);
        let servers = topo.servers_for(pid);
        Shared {
            pid,
            nprocs,
            topo,
            servers,
            cfg,
            start_clock,
            start: Instant::now(),
            failure: Failure::default(),
            control: Control::default(),
            net: NetStats::default(),
            mailbox,
            live,
            served_age: AtomicI64::new(start_clock.completed().get()),
            cmd,
        }
    }

    /// Records the first failure of the process and wakes every blocked thread.
    pub fn fail(&self, err: PsError) {
        let wakers = self.failure.raise(err);
        self.control.notify();
        self.mailbox.fail();
        for w in wakers.iter().filter_map(Weak::upgrade) {
            w.wake_all();
        }
    }

    #[inline]
    pub fn check(&self) -> Result<()> {
        self.failure.check()
    }

    pub fn send(&self, cmd: ClientCmd) {
        // The receiver only goes away when the process is being torn down.
        let _ = self.cmd.send(cmd);
    }

    /// Blocks until `done(ctl)` holds, the process fails, or `timeout` passes (`what` names the
    /// wait).
    pub fn wait_ctl(&self, what: &str, timeout: Option<Duration>, done: impl Fn(&Ctl) -> bool) -> Result<()> {
        let timeout = timeout.unwrap_or(Duration::from_secs(10 * 365 * 86400));
        let deadline =
            Instant::now().checked_add(timeout).unwrap_or_else(|| Instant::now() + Duration::from_secs(86400));
        let mut g = lock(&self.control.ctl);
        loop {
            self.check()?;
            if done(&g) {
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(PsError::Aborted(format!("timed out after {:?} waiting for {what}", timeout)));
            }
            g = self.control.cv.wait_timeout(g, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    pub fn update_ctl(&self, f: impl FnOnce(&mut Ctl)) {
        f(&mut lock(&self.control.ctl));
        self.control.cv.notify_all();
    }
}

impl Control {
    fn notify(&self) {
        drop(lock(&self.ctl));
        self.cv.notify_all();
    }

    /// A message was queued on a link.
    pub fn message_queued(&self) {
        self.queued.fetch_add(1, Ordering::SeqCst);
    }

    /// A queued message was written (or dropped with its link).
    pub fn message_done(&self) {
        if self.queued.fetch_sub(1, Ordering::SeqCst) <= 1 {
            self.notify();
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
            g = self.cv.wait_timeout(g, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }
}

/// Locks a mutex, ignoring poisoning: a panicked thread already failed the process.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(errs: Vec<PsError>) -> String {
        let f = Failure::default();
        for e in errs {
            f.raise(e);
        }
        f.check().unwrap_err().to_string()
    }

    #[test]
    fn a_process_own_error_wins_over_a_peer_gone_but_not_over_another_own_error() {
        let lost = || PsError::PeerLost { pid: 0, addr: "h:1".into(), reason: "write failed: Broken pipe".into() };
        let own = |m: &str| PsError::Config(m.into());
        assert_eq!(reason(vec![lost(), own("too many bad rows")]), "configuration error: too many bad rows");
        assert_eq!(reason(vec![PsError::Aborted("x".into()), own("mine")]), "configuration error: mine");
        assert_eq!(reason(vec![own("first"), own("second"), lost()]), "configuration error: first");
        assert!(reason(vec![lost(), PsError::Aborted("later".into())]).starts_with("lost process 0"));
    }
}
