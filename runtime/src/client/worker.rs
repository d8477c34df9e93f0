//! The per-thread API object: table handles, `clock()` and `global_barrier()`.

use super::process_table::ProcessTable;
use super::thread_table::{TableHandle, ThreadClock, ThreadTable, ThreadTableOps};
use super::Client;
use crate::clock::{Age, Clock};
use crate::error::{PsError, Result};
use crate::live::Published;
use crate::row::Row;
use crate::stats::{ThreadStats, WaitMeter};
use rustc_hash::FxHashMap;
use std::any::Any;
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

/// A thread's table: erased for clock handling, and as `Any` for typed handles.
type ThreadTableSlot = (Rc<dyn ThreadTableOps>, Rc<dyn Any>);

/// One application thread's access to the parameter server.
///
/// **Clock numbering.** Every thread starts at clock 0. Updates made between the `k`-th and
/// `(k+1)`-th call of [`Worker::clock`] belong to clock `k`. A row with *data age* `a` holds every
/// update of every thread from clocks `0..=a`. A read at clock `c` with staleness `s` returns data
/// age `>= c - s - 1` plus all of the reader's own updates, so observed staleness (data age minus
/// reader clock) lies in `[-s-1, -1]`; BSP (`s = 0`) always observes `-1`.
pub struct Worker {
    core: Arc<Client>,
    tid: usize,
    clock: Rc<ThreadClock>,
    tables: FxHashMap<u32, ThreadTableSlot>,
    barrier_wait_ns: Cell<u64>,
    /// Time waiting for other threads of the process in the app's own hand-offs.
    handoff: WaitMeter,
    started: Instant,
    finished: bool,
    /// Calls of `exchange` so far (the epoch of the next one).
    exchanges: u64,
    /// This thread's counters as last added to the process's live figures.
    published: Published,
}

impl Worker {
    pub(crate) fn new(core: Arc<Client>, tid: usize) -> Self {
        // A resumed job starts at its checkpoint's clock, and the restored tables are the floor.
        let start = core.shared.start_clock;
        let floor = if start > Clock::default() { start.completed() } else { Age::NONE };
        Worker {
            core,
            tid,
            clock: Rc::new(ThreadClock { clock: Cell::new(start), floor: Cell::new(floor) }),
            tables: FxHashMap::default(),
            barrier_wait_ns: Cell::new(0),
            handoff: WaitMeter::default(),
            started: Instant::now(),
            finished: false,
            exchanges: 0,
            published: Published::default(),
        }
    }

    /// Index of this thread within its process (`0..threads`).
    pub fn thread_id(&self) -> usize {
        self.tid
    }
    /// Index of this process (= client id = line of the hostfile).
    pub fn process_id(&self) -> usize {
        self.core.shared.pid
    }
    pub fn num_processes(&self) -> usize {
        self.core.shared.nprocs
    }
    /// Worker threads per process.
    pub fn threads_per_process(&self) -> usize {
        self.core.shared.cfg.threads
    }
    /// Job-wide thread index: `process_id * threads_per_process + thread_id`.
    pub fn global_thread_id(&self) -> usize {
        self.process_id() * self.threads_per_process() + self.tid
    }
    /// Worker threads in the whole job.
    pub fn total_threads(&self) -> usize {
        self.num_processes() * self.threads_per_process()
    }
    /// This thread's meter for time spent waiting for other threads of its process in the app's
    /// own hand-offs (turns at a shared slice, an app's process barrier): what it records counts
    /// into this thread's `wait_s` and is reported as `handoff_wait_s`.
    pub fn wait_meter(&self) -> WaitMeter {
        self.handoff.clone()
    }

    /// This process's bytes sent on sockets so far (`bytes_sent` of the stats).
    pub fn bytes_sent(&self) -> u64 {
        self.core.shared.net.bytes_sent.load(std::sync::atomic::Ordering::Relaxed)
    }
    /// The part of [`Worker::bytes_sent`] that went to other data centers (`wan_bytes_sent`).
    pub fn wan_bytes_sent(&self) -> u64 {
        self.core.shared.net.wan_bytes_sent.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The clock this thread is in.
    pub fn current_clock(&self) -> i64 {
        self.clock.clock.get().get()
    }
    /// Effective staleness of a table (`None`: unbounded, async).
    pub fn staleness(&self, table: u32) -> Result<Option<i64>> {
        self.core.tables.with(table, |s| Ok(self.core.shared.cfg.slack(s.cfg.staleness)))
    }

    /// Clocks by which another data center's updates may lag behind the staleness bound in
    /// what this thread reads (`geo.mirror_clock_bound` under `--inter-dc asp`, else 0): a value
    /// every worker added to at clock `m` is complete in reads that allow staleness
    /// `s + mirror_lag` (for tables whose every change is mirrored, such as objective sums).
    pub fn mirror_lag(&self) -> i64 {
        let shared = &self.core.shared;
        shared.topo.mirror_lag(&shared.cfg.geo)
    }

    /// Opens the table of `key` (made with [`TableKey::config`](crate::config::TableKey::config)), with
    /// the row type the key carries.
    pub fn open<R: Row>(&mut self, key: crate::config::TableKey<R>) -> Result<TableHandle<R>> {
        self.table::<R>(key.id())
    }

    /// This thread's handle on table `id` with row type `R` (must match the table's `row_type`).
    pub fn table<R: Row>(&mut self, id: u32) -> Result<TableHandle<R>> {
        if let Some((_, any)) = self.tables.get(&id) {
            let inner = any
                .clone()
                .downcast::<RefCell<ThreadTable<R>>>()
                .map_err(|_| PsError::Usage(format!("table {id} opened with two row types")))?;
            return Ok(TableHandle { inner });
        }
        let proc = self.core.tables.with(id, |slot| {
            if slot.cfg.row_type != R::type_name() {
                return Err(PsError::Usage(format!(
                    "table {id} has row type {}, opened as {}",
                    slot.cfg.row_type,
                    R::type_name()
                )));
            }
            slot.any
                .clone()
                .downcast::<ProcessTable<R>>()
                .map_err(|_| PsError::Usage(format!("table {id}: row type mismatch")))
        })?;
        let inner = Rc::new(RefCell::new(ThreadTable::new(proc, self.clock.clone())));
        self.tables.insert(id, (inner.clone(), inner.clone()));
        Ok(TableHandle { inner })
    }

    /// Ends the current clock. Never blocks: this thread's updates of the clock are handed to the
    /// process oplog; they are shipped to the servers once every thread of the process has ended
    /// the clock.
    pub fn clock(&mut self) -> Result<()> {
        self.core.shared.check()?;
        let old = self.clock.clock.get();
        let wait = self.core.snaps.as_ref().is_some_and(|s| s.cfg.when_busy == crate::config::WhenBusy::Wait);
        if wait && self.snapshot_due() {
            // Back-pressure: at most one snapshot per process is queued or being written, so a
            // slow file system throttles the job instead of piling encoded tables up in memory.
            // (Under `skip`, process 0 skips a snapshot due while the last is unsettled instead.)
            let t0 = Instant::now();
            self.core.shared.wait_ctl("earlier snapshots to be written", None, |c| c.snap_jobs == 0)?;
            self.barrier_wait_ns.set(self.barrier_wait_ns.get() + t0.elapsed().as_nanos() as u64);
        }
        for (t, _) in self.tables.values() {
            t.end_clock(old)?;
        }
        self.clock.clock.set(old.next());
        self.publish_live();
        self.core.tracker.thread_clocked(&self.core.shared, self.tid, old.next());
        Ok(())
    }

    /// This thread's counters so far: its tables' plus time blocked in barriers and hand-offs.
    fn thread_stats(&self) -> ThreadStats {
        let mut st = ThreadStats::default();
        for (t, _) in self.tables.values() {
            st.add(&t.stats());
        }
        let handoff = self.handoff.waited().as_nanos() as u64;
        st.wait_ns += self.barrier_wait_ns.get() + handoff;
        st.handoff_ns += handoff;
        st
    }

    /// Adds what is new in this thread's counters to the process's live figures (only when a
    /// tracker watches; once a clock, off the read path).
    fn publish_live(&mut self) {
        let live = &self.core.shared.live;
        if live.enabled() {
            let st = self.thread_stats();
            self.published.publish(live, &st);
        }
    }

    /// Queues an event for the job's tracker (objective evaluations).
    pub fn report_live(&self, r: crate::report::Report) {
        self.core.shared.live.push(r);
    }

    /// Like [`Worker::clock`], and if a checkpoint is due after this clock, first stores this
    /// thread's state: `save` appends whatever the thread needs to continue from here (position
    /// in its data, RNG state, ...). Applications that support resuming call this instead of
    /// `clock()` and read the state back with [`Worker::resume_state`].
    pub fn clock_saving(&mut self, save: impl FnOnce(&mut Vec<u8>) -> Result<()>) -> Result<()> {
        let t = self.clock.clock.get().next().get();
        if let Some(s) = self.core.snaps.as_ref().filter(|s| s.pure() && s.cfg.is_snapshot_clock(t)) {
            let mut buf = Vec::new();
            save(&mut buf)?;
            let g = self.global_thread_id();
            let bytes = crate::snapshot::format::state_file_bytes(t, g as u32, &buf);
            let name = crate::snapshot::CheckpointStore::state_name(g);
            // Recorded before the clock moves, so the process writes and reports it with its shards.
            let entry = crate::snapshot::FileEntry {
                file: name,
                owner: g as u32,
                rows: 0,
                bytes: bytes.len() as u64,
                crc32c: crate::snapshot::format::crc32c(&buf),
            };
            s.add_state(t, entry, bytes);
        }
        self.clock()
    }

    /// The state this thread saved in the checkpoint the job resumed from (`None` on a fresh start).
    /// The thread's clock is already that of the checkpoint.
    pub fn resume_state(&self) -> Result<Option<Vec<u8>>> {
        match self.core.snaps.as_ref().and_then(|s| s.resume.as_ref().map(|m| (s, m.clock))) {
            Some((s, t)) => s.store.read_state(t, self.global_thread_id()).map(Some),
            None => Ok(None),
        }
    }

    /// True if the tables as they are at the end of the current clock go into a snapshot (or
    /// checkpoint): an app that keeps part of its model outside the tables writes it into them
    /// during this clock.
    pub fn snapshot_due(&self) -> bool {
        let next = self.clock.clock.get().next().get();
        self.core.snaps.as_ref().is_some_and(|s| s.cfg.is_snapshot_clock(next))
    }

    /// True if the job writes snapshots (`checkpoint.url` set); the final tables are one too.
    pub fn writes_snapshots(&self) -> bool {
        self.core.snaps.is_some()
    }

    /// True if this job continues from a checkpoint.
    pub fn is_resumed(&self) -> bool {
        self.core.shared.start_clock > Clock::default()
    }

    /// Ends the current clock, then blocks until every thread of the job has arrived. All threads
    /// resume at the same clock `B` (the largest clock any thread reached), and every read after the
    /// barrier sees every update made before it by any thread.
    pub fn global_barrier(&mut self) -> Result<()> {
        self.clock()?;
        let t0 = Instant::now();
        let b = self.core.barrier.wait(&self.core.shared, self.clock.clock.get())?;
        self.clock.clock.set(b);
        self.clock.floor.set(b.completed());
        self.barrier_wait_ns.set(self.barrier_wait_ns.get() + t0.elapsed().as_nanos() as u64);
        Ok(())
    }

    /// All-to-all data exchange, outside the tables: every worker thread of the job calls it
    /// (collectively, like [`Worker::global_barrier`]) with one buffer per global thread id, and
    /// gets back the buffers the others addressed to it, indexed by sender. For partitioning input
    /// by key at load time (send each record to the worker that owns its key). Buffers within a
    /// process are moved, not copied; between processes they travel in chunks over the job's
    /// authenticated links. Blocks until every thread's buffer for this one has arrived.
    pub fn exchange(&mut self, parts: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>> {
        let n = self.total_threads();
        if parts.len() != n {
            return Err(PsError::Usage(format!(
                "exchange needs one buffer per worker thread ({n}), got {}",
                parts.len()
            )));
        }
        let t0 = Instant::now();
        let shared = &self.core.shared;
        let (epoch, me, threads) = (self.exchanges, self.global_thread_id() as u32, self.threads_per_process());
        self.exchanges += 1;
        // Chunks well inside the frame limit, so a large buffer never needs one huge frame.
        let chunk = (shared.cfg.max_frame_bytes / 4).clamp(1, 8 << 20);
        for (to, data) in parts.into_iter().enumerate() {
            let (server, to) = (to / threads, to as u32);
            if server == shared.pid {
                shared.mailbox.deliver(epoch, me, to, 0, Cow::Owned(data))?;
                continue;
            }
            let data = bytes::Bytes::from(data);
            let mut off = 0;
            loop {
                let end = (off + chunk).min(data.len());
                let msg = crate::wire::Msg::Exchange {
                    epoch,
                    from: me,
                    to,
                    rest: (data.len() - end) as u64,
                    data: data.slice(off..end),
                };
                shared.send(crate::state::ClientCmd::Send { server, msg });
                if end == data.len() {
                    break;
                }
                off = end;
            }
        }
        let got = shared.mailbox.collect(epoch, me, || shared.check());
        self.barrier_wait_ns.set(self.barrier_wait_ns.get() + t0.elapsed().as_nanos() as u64);
        got
    }

    /// Flushes this thread's remaining updates and tells the process the thread is done.
    /// Called by the runtime when `run_worker` returns.
    pub(crate) fn finish(&mut self) -> Result<(ThreadStats, f64, i64)> {
        let clocks = self.clock.clock.get();
        if !self.finished {
            self.finished = true;
            for (t, _) in self.tables.values() {
                t.end_clock(clocks)?;
            }
            self.core.tracker.thread_clocked(&self.core.shared, self.tid, Clock::FINISHED);
        }
        self.publish_live();
        Ok((self.thread_stats(), self.started.elapsed().as_secs_f64(), clocks.get()))
    }
}
