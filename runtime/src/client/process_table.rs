//! The process cache and process oplog of one table (LazyTable §3.2.2), shared by the process's
//! application threads and its communication task. Sharded by row so that threads rarely contend;
//! the per-thread cache in front of it (`thread_table`) serves repeated reads without any lock.

use super::PushClocks;
use crate::clock::Age;
use crate::config::{mix64, TableConfig};
use crate::consistency::ReadRule;
use crate::error::Result;
use crate::oplog::{BatchOut, ProcessOplog};
use crate::row::Row;
use crate::state::{lock, ClientCmd, Shared, Wake};
use crate::stats::ThreadStats;
use crate::wire::{FetchReq, RowsKind};
use rustc_hash::FxHashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// A process cache, type-erased for the communication task.
pub(crate) trait ProcessTableOps: Wake {
    /// Installs one row of a `Rows` message from `server`, advancing `buf` past it.
    fn on_row(&self, server: usize, kind: RowsKind, age: Age, rc: Age, row: u64, buf: &mut &[u8]) -> Result<()>;
    /// Encodes the process oplog of clocks in `(from, upto]` into per-server batches (kept for
    /// replay until acknowledged).
    fn collect_updates(&self, from: Age, upto: Age, out: &mut BatchOut);
    /// Server `server` has applied this process's updates up to `clock`: drop them from the oplog.
    fn on_ack(&self, server: usize, clock: Age);
    /// Treats every cached row as of unknown age (kept for read-my-updates, fetched again
    /// before a read); also ends their push subscriptions here until the next reply.
    fn forget_ages(&self);
}

struct ProcRow<R> {
    /// Server data plus this process's updates not yet covered by the server's requester clock.
    view: Option<R>,
    /// Data age of `view`: it holds every update of clocks <= age.
    age: Age,
    /// Bumped whenever `view` changes, so thread caches copy only when needed.
    version: u64,
    /// Largest `min_age` of a fetch in flight (squashes duplicate fetches).
    in_flight: Age,
    /// Largest `min_age` a blocked read asked for while `in_flight` was newer (see `read`).
    wanted: Age,
    /// ESSP: the server pushes this row whenever its clock advances.
    subscribed: bool,
}

impl<R> ProcRow<R> {
    fn empty() -> Self {
        ProcRow { view: None, age: Age::NONE, version: 0, in_flight: Age::NONE, wanted: Age::NONE, subscribed: false }
    }
}

struct Shard<R: Row> {
    rows: FxHashMap<u64, ProcRow<R>>,
    oplog: ProcessOplog<R::Update>,
    /// Readers blocked on this shard's condition variable. Installing a row wakes only when
    /// one is: a wake is a system call even with nobody waiting, and rows arrive by the
    /// thousand per clock while reads rarely block.
    waiting: u32,
}

/// Where a thread cache receives a row copied from the process cache.
pub(crate) struct CopyTarget<'a, R: Row> {
    pub view: &'a mut Option<R>,
    pub age: &'a mut Age,
    pub version: &'a mut u64,
    pub pending: Option<&'a R::Update>,
    /// Set to the row's server when the row is subscribed (pushed), so the thread cache can
    /// tell when a push has brought a newer version (`ProcessTable::pushed_past`).
    pub pushed_by: &'a mut Option<u32>,
}

pub(crate) struct ProcessTable<R: Row> {
    pub cfg: TableConfig,
    pub rule: ReadRule,
    shared: Arc<Shared>,
    push: Arc<PushClocks>,
    shards: Box<[(Mutex<Shard<R>>, Condvar)]>,
    mask: u64,
}

impl<R: Row> ProcessTable<R> {
    pub fn new(cfg: TableConfig, shared: Arc<Shared>, push: Arc<PushClocks>) -> Self {
        let n = shared.cfg.cache_shards;
        let shards = (0..n)
            .map(|_| {
                (
                    Mutex::new(Shard { rows: FxHashMap::default(), oplog: ProcessOplog::default(), waiting: 0 }),
                    Condvar::new(),
                )
            })
            .collect();
        let rule = ReadRule::for_table(&shared.cfg, &cfg);
        ProcessTable { cfg, rule, shared, push, shards, mask: n as u64 - 1 }
    }

    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    #[inline]
    fn shard(&self, row: u64) -> &(Mutex<Shard<R>>, Condvar) {
        &self.shards[(mix64(row) & self.mask) as usize]
    }

    #[inline]
    fn server(&self, row: u64) -> usize {
        // Every process under one parameter server; its own data center's under ASP.
        let s = &self.shared.servers;
        s[self.cfg.server_of(row, s.len())]
    }

    /// A subscribed row is as fresh as its server's last push.
    fn effective_age(&self, row: u64, r: &ProcRow<R>) -> Age {
        if r.subscribed {
            r.age.max(self.push.of(self.server(row)))
        } else {
            r.age
        }
    }

    fn fetch(&self, row: u64, min_age: Age, r: &mut ProcRow<R>) {
        r.in_flight = min_age;
        self.send_fetch(row, min_age);
    }

    fn fetch_req(&self, row: u64, min_age: Age) -> (usize, FetchReq) {
        (self.server(row), FetchReq { table: self.cfg.id, row, min_age, subscribe: self.rule.pushes() })
    }

    fn send_fetch(&self, row: u64, min_age: Age) {
        let (server, req) = self.fetch_req(row, min_age);
        self.shared.send(ClientCmd::Fetch { server, req });
    }

    /// Sends the fetches `prefetch_into` collected, as one command.
    pub fn send_fetches(&self, batch: Vec<(usize, FetchReq)>) {
        if !batch.is_empty() {
            self.shared.send(ClientCmd::Fetches(batch));
        }
    }

    /// Copies `row` into a thread cache once the process cache holds a version with data age
    /// `>= req`, fetching it (or waiting for its push) and blocking otherwise.
    pub fn read(&self, row: u64, req: Age, dst: CopyTarget<'_, R>, st: &mut ThreadStats) -> Result<()> {
        self.read_in_place(row, req, st, |src, version, age, pushed_by| {
            if *dst.version != version || dst.view.is_none() {
                match dst.view {
                    Some(v) => v.copy_from(src),
                    None => *dst.view = Some(src.clone()),
                }
                if let (Some(v), Some(p)) = (dst.view.as_mut(), dst.pending) {
                    v.apply(p);
                }
                *dst.version = version;
            }
            *dst.age = age;
            *dst.pushed_by = pushed_by;
        })
    }

    /// Calls `f(row, version, data age, pushing server)` on the process cache's `row`, under its
    /// shard's lock, once it holds a version with data age `>= req`, fetching it (or waiting for
    /// its push) and blocking otherwise; returns what `f` returns.
    pub fn read_in_place<T>(
        &self,
        row: u64,
        req: Age,
        st: &mut ThreadStats,
        f: impl FnOnce(&R, u64, Age, Option<u32>) -> T,
    ) -> Result<T> {
        let (m, cv) = self.shard(row);
        let mut g = lock(m);
        let mut blocked: Option<Instant> = None;
        let out = loop {
            self.shared.check()?;
            let r = g.rows.entry(row).or_insert_with(ProcRow::empty);
            let eff = self.effective_age(row, r);
            if let Some(src) = r.view.as_ref().filter(|_| ReadRule::admits(eff, req)) {
                break f(src, r.version, eff, r.subscribed.then(|| self.server(row) as u32));
            }
            // Subscribed rows arrive by push when the server clock advances: no request needed.
            if !r.subscribed && r.in_flight < req {
                self.fetch(row, req, r);
            } else if !r.subscribed && r.in_flight > req && r.wanted < req {
                // The fetch in flight asks for a newer version than this read needs: another
                // thread asked ahead for its next clock (`fetch_ahead`), and the server may hold
                // that version back until this very thread has finished its clock. Ask for what
                // this read needs as well, or the two would wait for each other.
                r.wanted = req;
                self.send_fetch(row, req);
            }
            if blocked.is_none() {
                blocked = Some(Instant::now());
                st.get_misses += 1;
            }
            g.waiting += 1;
            g = cv.wait(g).unwrap_or_else(|e| e.into_inner());
            g.waiting -= 1;
        };
        if let Some(t0) = blocked {
            st.wait_ns += t0.elapsed().as_nanos() as u64;
        }
        Ok(out)
    }

    /// ESSP: whether server `server` has pushed a newer version than data age `age` of its
    /// subscribed rows since a thread copied one (one atomic load, for every read of a pushed
    /// row in the thread cache).
    #[inline]
    pub fn pushed_past(&self, server: u32, age: Age) -> bool {
        self.push.of(server as usize) > age
    }

    /// Non-blocking refresh: asks for a version with data age `>= min_age` unless one is cached,
    /// requested, or will be pushed; the fetch (if one is needed) is added to `batch`, which
    /// `send_fetches` sends as one command. `now`: the thread reads this version in its current
    /// clock, so a fetch of a newer one in flight does not do (see below).
    pub fn prefetch_into(&self, row: u64, min_age: Age, now: bool, batch: &mut Vec<(usize, FetchReq)>) {
        let mut g = lock(&self.shard(row).0);
        let r = g.rows.entry(row).or_insert_with(ProcRow::empty);
        if r.subscribed || (r.view.is_some() && r.age >= min_age) {
            return;
        }
        if r.in_flight < min_age {
            r.in_flight = min_age;
        } else if now && r.in_flight > min_age && r.wanted < min_age {
            // The next clock's version is on its way (asked ahead), and the server may hold it
            // back until this clock ends: ask for this one as well, as a blocked `read` would,
            // but in the batch. Otherwise every read of such a row waited one round trip on its
            // own: MF's evaluation across a 5 ms WAN spent 30 s on 3,900 of them.
            r.wanted = min_age;
        } else {
            return;
        }
        batch.push(self.fetch_req(row, min_age));
    }

    /// Data age of the cached copy of `row` (`Age::NONE` if none) and whether it is subscribed,
    /// for prefetch decisions.
    pub fn cached_age(&self, row: u64) -> (Age, bool) {
        let g = lock(&self.shard(row).0);
        g.rows
            .get(&row)
            .map(|r| (if r.view.is_some() { self.effective_age(row, r) } else { Age::NONE }, r.subscribed))
            .unwrap_or((Age::NONE, false))
    }

    /// Merges a thread's updates of the clock of age `clock` into the process oplog and cache.
    /// Returns the new version of the cached row if the caller's copy was current before (it
    /// stays current, as it already has these updates applied), so the thread need not copy the
    /// row again.
    pub fn merge(&self, row: u64, clock: Age, upd: R::Update, caller_version: u64) -> Option<u64> {
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
        g.oplog.add(clock, row, upd);
        kept
    }
}

impl<R: Row> ProcessTableOps for ProcessTable<R> {
    fn on_row(&self, _server: usize, kind: RowsKind, age: Age, rc: Age, row: u64, buf: &mut &[u8]) -> Result<()> {
        let cols = self.cfg.columns;
        let (m, cv) = self.shard(row);
        let mut g = lock(m);
        let sh = &mut *g;
        let r = sh.rows.entry(row).or_insert_with(ProcRow::empty);
        if r.view.is_some() && age < r.age {
            drop(g);
            R::decode(buf, cols)?; // an older version overtaken by a newer one: skip its bytes
            return Ok(());
        }
        // Decoded into the cached row's own buffers (under the shard lock, a copy of one row's
        // bytes): a fresh row per message plus freeing the old one was a visible part of the
        // communication threads' time. A row that fails to decode is dropped, never half-read.
        let decoded = match r.view.as_mut() {
            Some(v) => v.decode_into(buf, cols),
            None => R::decode(buf, cols).map(|d| r.view = Some(d)),
        };
        if let Err(e) = decoded {
            r.view = None;
            r.age = Age::NONE;
            r.version += 1;
            return Err(e);
        }
        let data = r.view.as_mut().expect("decoded above");
        // Read-my-updates: re-apply this process's updates the server has not applied yet.
        for u in sh.oplog.after(rc, row) {
            data.apply(u);
        }
        r.age = age;
        r.version += 1;
        r.subscribed |= self.rule.pushes() || kind != RowsKind::Reply;
        if r.in_flight <= age {
            r.in_flight = Age::NONE;
        }
        if r.wanted <= age {
            r.wanted = Age::NONE;
        }
        let wake = sh.waiting > 0;
        drop(g);
        if wake {
            cv.notify_all();
        }
        Ok(())
    }

    fn collect_updates(&self, from: Age, upto: Age, out: &mut BatchOut) {
        if upto <= from {
            return;
        }
        for (m, _) in self.shards.iter() {
            lock(m).oplog.encode(from, upto, |row| self.server(row), out);
        }
    }

    fn on_ack(&self, server: usize, clock: Age) {
        for (m, _) in self.shards.iter() {
            lock(m).oplog.acknowledge(clock, |row| self.server(row) == server);
        }
    }

    fn forget_ages(&self) {
        for (m, _) in self.shards.iter() {
            for r in lock(m).rows.values_mut() {
                r.age = Age::NONE;
                r.subscribed = false;
                r.in_flight = Age::NONE;
                r.wanted = Age::NONE;
            }
        }
    }
}

impl<R: Row> Wake for ProcessTable<R> {
    fn wake_all(&self) {
        for (m, cv) in self.shards.iter() {
            drop(lock(m));
            cv.notify_all();
        }
    }
}
