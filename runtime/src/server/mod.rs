//! Server shard (LazyTable §3.2.1): master copies of the rows this process owns (`table`), the
//! vector clock of all client processes, their pending updates (`oplog::PendingBatches`), parked
//! reads, push subscriptions (`push`, ESSP) and the snapshot schedule (`snapshot`). Process 0's
//! server task also runs the name node (`namenode`). Runs as one task fed by the connection
//! readers, so its state needs no locks.

mod barrier;
mod mirror;
mod mirror_snap;
mod namenode;
mod push;
mod snapshot;
mod table;

pub(crate) use table::{ServerTable, ServerTableOps};

use crate::clock::Age;
use crate::consistency::ServeRule;
use crate::error::{PsError, Result};
use crate::net::Link;
use crate::oplog::PendingBatches;
use crate::snapshot::Snapshots;
use crate::state::Shared;
use crate::wire::{FetchReq, Msg, RowsKind};
use bytes::{BufMut, Bytes, BytesMut};
use mirror::{check_mirror, Mirror};
use namenode::NameNode;
use push::Subscriptions;
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// Input of the server task.
pub(crate) enum ServerIn {
    Net(usize, Msg),
    AddTable(u32, Box<dyn ServerTableOps>),
    /// The name node's manifest of a snapshot is staged (written under its temporary name).
    ManifestStaged {
        clock: i64,
        staged: std::result::Result<Box<crate::snapshot::Manifest>, String>,
    },
    /// The name node's manifest of snapshot `clock` is written (or failed; the job then fails).
    ManifestDone(i64),
}

/// Packs rows for one client into frames of about `limit` bytes.
struct RowsOut {
    frames: Vec<Bytes>,
    cur: BytesMut,
    limit: usize,
    /// At most this many rows are still to come (0: unknown): a frame is then allocated at its
    /// final size once, instead of growing by doubling (a copy of everything so far each time).
    rows_left: usize,
}

impl RowsOut {
    fn new(limit: usize) -> Self {
        RowsOut::for_rows(limit, 0)
    }
    fn for_rows(limit: usize, rows_left: usize) -> Self {
        RowsOut { frames: Vec::new(), cur: BytesMut::new(), limit, rows_left }
    }
    fn add(&mut self, table: u32, row: u64, encoded: &[u8]) {
        if self.cur.len() >= self.limit {
            self.frames.push(std::mem::take(&mut self.cur).freeze());
        }
        if self.cur.is_empty() && self.rows_left > 0 {
            // Rows of one table have about the same size; a frame ends after the row that
            // crosses `limit`.
            let per = 12 + encoded.len();
            self.cur.reserve(self.rows_left.saturating_mul(per).min(self.limit + per));
        }
        self.rows_left = self.rows_left.saturating_sub(1);
        self.cur.put_u32_le(table);
        self.cur.put_u64_le(row);
        self.cur.put_slice(encoded);
    }
    /// Sends all frames; the last one has kind `last`, earlier ones `part`.
    fn send(mut self, to: &Link, part: RowsKind, last: RowsKind, age: Age, rc: Age) {
        self.frames.push(self.cur.freeze());
        let n = self.frames.len();
        for (i, data) in self.frames.into_iter().enumerate() {
            let kind = if i + 1 == n { last } else { part };
            to.send(Msg::Rows { kind, age, rc, data });
        }
    }
}

pub(crate) struct Server {
    shared: Arc<Shared>,
    snaps: Option<Arc<Snapshots>>,
    tables: FxHashMap<u32, Box<dyn ServerTableOps>>,
    /// Data age of each client process's updates applied here (its last completed clock).
    vc: Vec<Age>,
    /// min(vc): every row holds all updates of clocks <= global.
    global: Age,
    pending: PendingBatches,
    parked: BTreeMap<Age, Vec<(usize, FetchReq)>>,
    /// ASP: reads of rows a selective barrier caps below the age they need, until their
    /// updates arrive.
    held: FxHashMap<(u32, u64), Vec<(usize, FetchReq)>>,
    /// ESSP: the last push was capped below the server's age by a row a selective barrier
    /// holds back; push again when one arrives.
    push_deferred: bool,
    subs: Subscriptions,
    to_client: Vec<Link>,
    /// Server-to-server messages (ASP mirrors) go on the links this process's client uses.
    to_server: Vec<Link>,
    /// ASP: this data center's copy of the rows and its mirrors in the other data centers.
    mirror: Option<Mirror>,
    namenode: Option<NameNode>,
    rule: ServeRule,
    scratch: BytesMut,
    snap: Option<snapshot::SnapPlan>,
}

impl Server {
    pub fn new(
        shared: Arc<Shared>,
        snaps: Option<Arc<Snapshots>>,
        to_client: Vec<Link>,
        to_server: Vec<Link>,
        inbox: UnboundedSender<ServerIn>,
    ) -> Self {
        let n = shared.nprocs;
        let start = shared.start_clock;
        // The clients of this server are the processes whose servers this process's client uses:
        // under ASP, this data center's; the others count as done.
        let vc = (0..n).map(|q| if shared.servers.contains(&q) { start.completed() } else { Age::FINISHED }).collect();
        Server {
            tables: FxHashMap::default(),
            vc,
            global: start.completed(),
            pending: PendingBatches::new(n),
            parked: BTreeMap::new(),
            held: FxHashMap::default(),
            push_deferred: false,
            subs: Subscriptions::new(n),
            to_client,
            to_server,
            mirror: Mirror::new(&shared),
            namenode: (shared.pid == 0).then(|| NameNode::new(n, shared.clone(), snaps.clone(), inbox)),
            snap: snaps.as_ref().map(|s| snapshot::SnapPlan::new(s, n, start.get(), &shared.topo, shared.pid)),
            rule: ServeRule::new(&shared.cfg),
            scratch: BytesMut::new(),
            snaps,
            shared,
        }
    }

    pub async fn run(mut self, mut inbox: UnboundedReceiver<ServerIn>) {
        while let Some(input) = inbox.recv().await {
            let r = match input {
                ServerIn::AddTable(id, mut t) => {
                    if self.mirror.is_some() {
                        t.start_mirroring();
                    }
                    self.tables.insert(id, t);
                    Ok(())
                }
                ServerIn::Net(from, msg) => self.handle(from, msg),
                ServerIn::ManifestStaged { clock, staged } => match self.namenode.as_mut() {
                    Some(nn) => nn.manifest_staged(clock, staged),
                    None => Ok(()),
                },
                ServerIn::ManifestDone(clock) => match self.namenode.as_mut() {
                    Some(nn) => {
                        if let Some(s) = &self.snaps {
                            s.settle(clock);
                        }
                        nn.manifest_done(clock, &self.to_client)
                    }
                    None => Ok(()),
                },
            };
            if let Err(e) = r {
                self.shared.fail(e);
            }
        }
    }

    /// Data age the server reports (the fault knob lets tests prove they can catch a lie); under
    /// ASP at most DS clocks ahead of the slowest mirror.
    fn visible_age(&self) -> Age {
        let own = self.rule.visible(self.global);
        match &self.mirror {
            Some(m) => m.cap(own),
            None => own,
        }
    }

    fn handle(&mut self, from: usize, msg: Msg) -> Result<()> {
        if msg.is_for_namenode() {
            return match self.namenode.as_mut() {
                Some(nn) => nn.handle(from, msg, &self.to_client),
                None => Err(PsError::codec(format!("process {from} sent {msg:?} to a non-name-node"))),
            };
        }
        match msg {
            Msg::Fetch(reqs) => {
                let age = self.visible_age();
                let mut ready = Vec::with_capacity(reqs.len());
                for r in reqs {
                    if !ServeRule::can_serve(r.min_age, age) {
                        self.parked.entry(r.min_age).or_default().push((from, r));
                    } else {
                        ready.push((from, r));
                    }
                }
                self.answer(ready, age)?;
            }
            Msg::Oplog { table, data } => self.pending.push(from, table, data),
            Msg::Clock { clock } => self.on_clock(from, clock)?,
            Msg::SnapshotPlan { clock, take } => match (from, self.snap.as_mut()) {
                (0, Some(plan)) => {
                    plan.decided(clock, take);
                    if let Some(m) = self.mirror.as_mut() {
                        // Under ASP a sync and a snapshot may be waiting for this decision.
                        m.snaps.decided(clock, take);
                        if m.snaps.waiting {
                            m.advance(&self.shared, self.global, &mut self.tables, &self.to_server);
                        }
                        self.take_due_snapshots();
                    }
                }
                _ => return Err(PsError::codec(format!("process {from} sent an unexpected snapshot plan"))),
            },
            Msg::MirrorUpdate { table, seq, data } => {
                check_mirror(&self.mirror, from, "mirror updates")?;
                let t = self.tables.get_mut(&table).ok_or_else(|| {
                    PsError::codec(format!("process {from} sent mirror updates of unknown table {table}"))
                })?;
                // For snapshots, updates after the mirror's last sync count as later clocks.
                let clock = self.mirror.as_ref().map_or(0, |m| m.update_clock(from));
                let after = self.snap.as_ref().map(|p| p.pending_upto(clock, self.global)).unwrap_or_default();
                let subs = &mut self.subs;
                t.apply_mirrored(&data, clock, &after, &mut |row| subs.touched(table, row)).map_err(|e| {
                    PsError::codec(format!("mirror updates from process {from} for table {table}: {e}"))
                })?;
                let (mut freed, mut moved) = (Vec::new(), false);
                if let Some(m) = self.mirror.as_mut() {
                    moved = m.on_update(from, seq, &mut freed)?;
                }
                self.release_held(freed, moved)?;
            }
            Msg::MirrorClock { clock } => {
                check_mirror(&self.mirror, from, "a mirror clock")?;
                self.on_mirror_clock(|m| {
                    m.on_clock(from, clock);
                    Ok(())
                })?;
            }
            Msg::SelectiveBarrier { clock, data } => {
                check_mirror(&self.mirror, from, "a selective barrier")?;
                let subs = &self.subs;
                if let Some(m) = self.mirror.as_mut() {
                    m.on_barrier(from, clock, &data, |t, r| subs.is_subscribed(t, r))?;
                }
                self.on_mirror_clock(|m| {
                    m.on_clock(from, clock);
                    Ok(())
                })?;
            }
            Msg::MirrorSynced { clock } => {
                check_mirror(&self.mirror, from, "a sync")?;
                self.on_mirror_clock(|m| m.on_synced(from, clock))?;
            }
            Msg::SyncRequest { clock } => {
                let (global, clients) = (self.global, &self.shared.servers);
                let m = self.mirror.as_mut().filter(|_| clients.contains(&from)).ok_or_else(|| {
                    PsError::codec(format!(
                        "process {from} asked for a sync, but it is not an ASP client of this server"
                    ))
                })?;
                if m.request_sync(clock, global) {
                    m.advance(&self.shared, global, &mut self.tables, &self.to_server);
                }
                self.announce_sync();
                self.take_due_snapshots();
            }
            Msg::Exchange { epoch, from: f, to, rest, data } => {
                let threads = self.shared.cfg.threads;
                if to as usize / threads != self.shared.pid || f as usize / threads != from {
                    return Err(PsError::codec(format!(
                        "process {from} sent exchange data from thread {f} to thread {to}, which is not here"
                    )));
                }
                self.shared.mailbox.deliver(epoch, f, to, rest, Cow::Borrowed(&data))?;
            }
            Msg::Ping => {}
            other => return Err(PsError::codec(format!("process {from} sent a server an unexpected {other:?}"))),
        }
        Ok(())
    }

    fn serve(&mut self, client: usize, r: FetchReq, out: &mut RowsOut) -> Result<()> {
        let t = self
            .tables
            .get_mut(&r.table)
            .ok_or_else(|| PsError::codec(format!("process {client} asked for unknown table {}", r.table)))?;
        self.scratch.clear();
        t.encode_row(r.row, &mut self.scratch);
        out.add(r.table, r.row, &self.scratch);
        if r.subscribe && self.rule.subscribes() {
            self.subs.subscribe(client, r.table, r.row);
            if let Some(m) = self.mirror.as_mut() {
                m.on_subscribe(r.table, r.row);
            }
        }
        Ok(())
    }

    /// A client completed `clock`: apply its pending updates, then, if the global clock moved,
    /// answer parked reads and push subscribed rows.
    fn on_clock(&mut self, from: usize, clock: Age) -> Result<()> {
        let after = match &mut self.snap {
            Some(p) => p.pending_before(from, clock, self.global),
            None => Vec::new(),
        };
        let bucket = match self.mirror.as_mut() {
            Some(m) => {
                m.snaps.client_clock(clock);
                m.snaps.bucket(clock)
            }
            None => i64::MAX,
        };
        for (table, data) in self.pending.take(from) {
            let t = self
                .tables
                .get_mut(&table)
                .ok_or_else(|| PsError::codec(format!("process {from} sent updates of unknown table {table}")))?;
            let subs = &mut self.subs;
            t.apply_batch(&data, clock.get(), &after, bucket, &mut |row| subs.touched(table, row))
                .map_err(|e| PsError::codec(format!("updates from process {from} for table {table}: {e}")))?;
        }
        self.vc[from] = self.vc[from].max(clock);
        self.to_client[from].send(Msg::ClockAck { clock });
        let g = self.vc.iter().copied().min().unwrap_or(clock);
        if g > self.global {
            self.global = g;
            self.shared.served_age.store(g.get(), std::sync::atomic::Ordering::Relaxed);
            if let Some(m) = self.mirror.as_mut() {
                m.advance(&self.shared, g, &mut self.tables, &self.to_server);
            }
            self.take_due_snapshots();
            self.release_parked()?;
            if self.rule.pushes_at(g) {
                self.push_rows();
            }
        }
        if g.is_finished() {
            self.shared.update_ctl(|c| c.server_finished = true);
        }
        Ok(())
    }

    /// Applies a mirror's clock (or barrier); if that lets this server serve newer data, answers
    /// the reads it held back and pushes.
    fn on_mirror_clock(&mut self, f: impl FnOnce(&mut Mirror) -> Result<()>) -> Result<()> {
        let before = self.visible_age();
        if let Some(m) = self.mirror.as_mut() {
            f(m)?;
        }
        // Before any row this lets the server serve: the clients must learn of the sync first.
        self.announce_sync();
        // Under ASP a snapshot may be waiting for its mirrors' sync.
        self.take_due_snapshots();
        let now = self.visible_age();
        if now > before {
            // Reads a mirror's clock releases were held back by the mirror clock.
            let waited: usize = self.parked.range(..=now).map(|(_, v)| v.len()).sum();
            self.shared.net.mirror_clock_waits.fetch_add(waited as u64, std::sync::atomic::Ordering::Relaxed);
            self.release_parked()?;
            if self.rule.pushes_at(self.global) {
                self.push_rows();
            }
        }
        Ok(())
    }

    /// ASP: tells this data center's clients, once, that every mirror has synced at the newest
    /// barrier they asked for (ahead of every row served under that promise, on the same links).
    fn announce_sync(&mut self) {
        if let Some(a) = self.mirror.as_mut().and_then(Mirror::take_announcement) {
            for &q in &self.shared.servers {
                self.to_client[q].send(Msg::Synced { clock: a });
            }
        }
    }

    /// The age row `r` can be served at when the server serves `age` (ASP: lower while a
    /// selective barrier's update of it is on its way).
    fn row_cap(&self, r: &FetchReq, age: Age) -> Age {
        self.mirror.as_ref().map_or(age, |m| m.row_cap(r.table, r.row, age))
    }

    fn release_parked(&mut self) -> Result<()> {
        let age = self.visible_age();
        let later = self.parked.split_off(&age.shifted(1));
        let ready = std::mem::replace(&mut self.parked, later);
        let reads: Vec<_> = ready.into_values().flatten().collect();
        self.answer(reads, age)
    }

    /// Announced updates of `freed` rows arrived: answers the reads that waited for them (those
    /// still capped below what they need are held again), and, with `repush` (a push's cap
    /// moved), a push that was capped.
    fn release_held(&mut self, freed: Vec<(u32, u64)>, repush: bool) -> Result<()> {
        let reads: Vec<_> = freed.iter().filter_map(|k| self.held.remove(k)).flatten().collect();
        self.answer(reads, self.visible_age())?;
        if self.push_deferred && repush {
            self.push_rows();
        }
        Ok(())
    }

    /// Answers reads the server can serve at `age`, packed per client and the age each row is
    /// served at; holds back those of rows a selective barrier caps below what they need.
    fn answer(&mut self, reads: Vec<(usize, FetchReq)>, age: Age) -> Result<()> {
        // Few (client, age) pairs: one client per Fetch, and at most DS + 1 ages.
        let mut outs: Vec<((usize, Age), RowsOut)> = Vec::new();
        let mut last = usize::MAX;
        for (client, r) in reads {
            let cap = self.row_cap(&r, age);
            if !ServeRule::can_serve(r.min_age, cap) {
                self.held.entry((r.table, r.row)).or_default().push((client, r));
                continue;
            }
            if outs.get(last).is_none_or(|(k, _)| *k != (client, cap)) {
                last = match outs.iter().position(|(k, _)| *k == (client, cap)) {
                    Some(i) => i,
                    None => {
                        outs.push(((client, cap), RowsOut::new(self.shared.cfg.batch_bytes)));
                        outs.len() - 1
                    }
                };
            }
            self.serve(client, r, &mut outs[last].1)?;
        }
        for ((client, cap), out) in outs {
            out.send(&self.to_client[client], RowsKind::Reply, RowsKind::Reply, cap, self.vc[client]);
        }
        Ok(())
    }

    /// ESSP: send every subscribed row changed since the last push to its subscribers, then tell
    /// each subscriber the new clock (which also freshens its unchanged subscribed rows).
    fn push_rows(&mut self) {
        // A push declares every subscribed row fresh at `age`: no newer than the subscribed rows a
        // selective barrier caps allow, and again as their updates arrive. (Deferring the whole
        // push while any row waited stalled every reader of the objective's rows whenever the
        // WAN was behind, though nobody subscribed to the rows waited for.)
        let visible = self.visible_age();
        let age = self.mirror.as_ref().map_or(visible, |m| m.push_cap(visible));
        self.push_deferred = age < visible;
        let n = self.shared.nprocs;
        let changed = self.subs.take_changed();
        let mut outs: Vec<RowsOut> =
            (0..n).map(|_| RowsOut::for_rows(self.shared.cfg.batch_bytes, changed.len())).collect();
        for ((table, row), subscribers) in changed {
            let Some(t) = self.tables.get_mut(&table) else {
                continue;
            };
            self.scratch.clear();
            t.encode_row(row, &mut self.scratch);
            for &c in subscribers {
                outs[c].add(table, row, &self.scratch);
            }
        }
        for (c, out) in outs.into_iter().enumerate() {
            if self.subs.has_subscriptions(c) {
                out.send(&self.to_client[c], RowsKind::PushPart, RowsKind::PushDone, age, self.vc[c]);
            }
        }
    }
}
