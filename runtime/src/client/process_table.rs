//! The process cache and process oplog of one table (LazyTable §3.2.2), shared by the process's
//! application threads and its communication task. Sharded by row so that threads rarely contend;
//! the per-thread cache in front of it (`thread_table`) serves repeated reads without any lock.

use super::core::{lock, ClientCmd, Core, NO_AGE};
use crate::config::{mix64, Consistency, TableConfig};
use crate::error::Result;
use crate::row::{BatchOut, ProcessTableOps, Row, RowUpdate};
use crate::stats::ThreadStats;
use crate::wire::{FetchReq, RowsKind};
use bytes::BufMut;
use rustc_hash::FxHashMap;
use std::collections::btree_map::{BTreeMap, Entry as BEntry};
use std::collections::hash_map::Entry;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

struct ProcRow<R> {
    /// Server data plus this process's updates not yet covered by the server's requester clock.
    view: Option<R>,
    /// Data age of `view`: it holds every update of clocks <= age.
    age: i64,
    /// Bumped whenever `view` changes, so thread caches copy only when needed.
    version: u64,
    /// Largest `min_age` of a fetch in flight (squashes duplicate fetches).
    in_flight: i64,
    /// ESSP: the server pushes this row whenever its clock advances.
    subscribed: bool,
}

impl<R> ProcRow<R> {
    fn empty() -> Self {
        ProcRow { view: None, age: NO_AGE, version: 0, in_flight: NO_AGE, subscribed: false }
    }
}

struct Shard<R: Row> {
    rows: FxHashMap<u64, ProcRow<R>>,
    /// Unacknowledged updates of this process, by clock, coalesced across threads.
    oplog: BTreeMap<i64, FxHashMap<u64, R::Update>>,
}

/// Where a thread cache receives a row copied from the process cache.
pub(crate) struct CopyTarget<'a, R: Row> {
    pub view: &'a mut Option<R>,
    pub age: &'a mut i64,
    pub version: &'a mut u64,
    pub pending: Option<&'a R::Update>,
}

pub(crate) struct ProcessTable<R: Row> {
    pub cfg: TableConfig,
    core: Arc<Core>,
    shards: Box<[(Mutex<Shard<R>>, Condvar)]>,
    mask: u64,
    subscribe: bool,
}

impl<R: Row> ProcessTable<R> {
    pub fn new(cfg: TableConfig, core: Arc<Core>) -> Self {
        let n = core.cfg.cache_shards;
        let shards = (0..n)
            .map(|_| (Mutex::new(Shard { rows: FxHashMap::default(), oplog: BTreeMap::new() }), Condvar::new()))
            .collect();
        let subscribe = core.cfg.consistency == Consistency::Essp;
        ProcessTable { cfg, core, shards, mask: n as u64 - 1, subscribe }
    }

    pub fn core(&self) -> &Arc<Core> {
        &self.core
    }

    #[inline]
    fn shard(&self, row: u64) -> &(Mutex<Shard<R>>, Condvar) {
        &self.shards[(mix64(row) & self.mask) as usize]
    }

    #[inline]
    fn server(&self, row: u64) -> usize {
        self.cfg.server_of(row, self.core.nprocs)
    }

    fn effective_age(&self, row: u64, r: &ProcRow<R>) -> i64 {
        if r.subscribed {
            r.age.max(self.core.push_clock[self.server(row)].load(Ordering::Acquire))
        } else {
            r.age
        }
    }

    fn fetch(&self, row: u64, min_age: i64, r: &mut ProcRow<R>) {
        r.in_flight = min_age;
        let req = FetchReq { table: self.cfg.id, row, min_age, subscribe: self.subscribe };
        self.core.send(ClientCmd::Fetch { server: self.server(row), req });
    }

    /// Copies `row` into a thread cache once the process cache holds a version with data age
    /// `>= req`, fetching it (or waiting for its push) and blocking otherwise.
    pub fn read(&self, row: u64, req: i64, dst: CopyTarget<'_, R>, st: &mut ThreadStats) -> Result<()> {
        let (m, cv) = self.shard(row);
        let mut g = lock(m);
        let mut blocked: Option<Instant> = None;
        loop {
            self.core.check()?;
            let r = g.rows.entry(row).or_insert_with(ProcRow::empty);
            let eff = self.effective_age(row, r);
            if let Some(src) = r.view.as_ref().filter(|_| eff >= req) {
                if *dst.version != r.version || dst.view.is_none() {
                    match dst.view {
                        Some(v) => v.copy_from(src),
                        None => *dst.view = Some(src.clone()),
                    }
                    if let (Some(v), Some(p)) = (dst.view.as_mut(), dst.pending) {
                        v.apply(p);
                    }
                    *dst.version = r.version;
                }
                *dst.age = eff;
                break;
            }
            // Subscribed rows arrive by push when the server clock advances: no request needed.
            if !r.subscribed && r.in_flight < req {
                self.fetch(row, req, r);
            }
            if blocked.is_none() {
                blocked = Some(Instant::now());
                st.get_misses += 1;
            }
            g = cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        if let Some(t0) = blocked {
            st.wait_ns += t0.elapsed().as_nanos() as u64;
        }
        Ok(())
    }

    /// Non-blocking refresh: asks for a version with data age `>= min_age` unless one is cached,
    /// requested, or will be pushed.
    pub fn prefetch(&self, row: u64, min_age: i64) {
        let mut g = lock(&self.shard(row).0);
        let r = g.rows.entry(row).or_insert_with(ProcRow::empty);
        if r.subscribed || (r.view.is_some() && r.age >= min_age) || r.in_flight >= min_age {
            return;
        }
        self.fetch(row, min_age, r);
    }

    /// Data age of the cached copy of `row` (NO_AGE if none), for prefetch decisions.
    pub fn cached_age(&self, row: u64) -> (i64, bool) {
        let g = lock(&self.shard(row).0);
        g.rows
            .get(&row)
            .map(|r| (if r.view.is_some() { self.effective_age(row, r) } else { NO_AGE }, r.subscribed))
            .unwrap_or((NO_AGE, false))
    }

    /// Merges a thread's updates of `clock` into the process oplog and cache. Returns the new
    /// version of the cached row if the caller's copy was current before (it stays current, as it
    /// already has these updates applied), so the thread need not copy the row again.
    pub fn merge(&self, row: u64, clock: i64, upd: R::Update, caller_version: u64) -> Option<u64> {
        let mut g = lock(&self.shard(row).0);
        let mut kept = None;
        if let Some(r) = g.rows.get_mut(&row) {
            if let Some(v) = r.view.as_mut() {
                v.apply(&upd);
                let was_current = r.version == caller_version;
                r.version += 1;
                kept = was_current.then_some(r.version);
            }
        }
        match g.oplog.entry(clock).or_default().entry(row) {
            Entry::Occupied(mut e) => e.get_mut().merge(&upd),
            Entry::Vacant(e) => {
                e.insert(upd);
            }
        }
        kept
    }
}

impl<R: Row> ProcessTableOps for ProcessTable<R> {
    fn on_row(&self, _server: usize, kind: RowsKind, age: i64, rc: i64, row: u64, buf: &mut &[u8]) -> Result<()> {
        let mut data = R::decode(buf, self.cfg.columns)?;
        let (m, cv) = self.shard(row);
        let mut g = lock(m);
        let sh = &mut *g;
        let r = sh.rows.entry(row).or_insert_with(ProcRow::empty);
        if r.view.is_some() && age < r.age {
            return Ok(()); // an older version overtaken by a newer one
        }
        // Read-my-updates: re-apply this process's updates the server has not applied yet.
        for (_, ops) in sh.oplog.range(rc.saturating_add(1)..) {
            if let Some(u) = ops.get(&row) {
                data.apply(u);
            }
        }
        r.view = Some(data);
        r.age = age;
        r.version += 1;
        r.subscribed |= self.subscribe || kind != RowsKind::Reply;
        if r.in_flight <= age {
            r.in_flight = NO_AGE;
        }
        drop(g);
        cv.notify_all();
        Ok(())
    }

    fn collect_updates(&self, from: i64, upto: i64, out: &mut BatchOut) {
        if upto <= from {
            return;
        }
        for (m, _) in self.shards.iter() {
            let g = lock(m);
            for (_, ops) in g.oplog.range(from + 1..=upto) {
                for (row, u) in ops {
                    let b = out.buf(self.server(*row));
                    b.put_u64_le(*row);
                    u.encode(b);
                }
            }
        }
    }

    fn on_ack(&self, server: usize, clock: i64) {
        for (m, _) in self.shards.iter() {
            let mut g = lock(m);
            let mut emptied = Vec::new();
            for (c, ops) in g.oplog.range_mut(..=clock) {
                ops.retain(|row, _| self.cfg.server_of(*row, self.core.nprocs) != server);
                if ops.is_empty() {
                    emptied.push(*c);
                }
            }
            for c in emptied {
                if let BEntry::Occupied(e) = g.oplog.entry(c) {
                    e.remove();
                }
            }
        }
    }

    fn wake_all(&self) {
        for (m, cv) in self.shards.iter() {
            drop(lock(m));
            cv.notify_all();
        }
    }
}
