//! Server shard: master copies of the rows this process owns, the vector clock of all client
//! processes, pending updates, parked reads and push subscriptions (LazyTable §3.2.1, ESSP).
//! Runs as one task fed by the connection readers, so its state needs no locks.

mod namenode;
mod snapshot;
mod table;

pub(crate) use table::ServerTable;

use crate::client::Core;
use crate::config::Consistency;
use crate::error::{PsError, Result};
use crate::net::Link;
use crate::row::ServerTableOps;
use crate::wire::{FetchReq, Msg, RowsKind, CLOCK_FINISHED};
use bytes::{BufMut, Bytes, BytesMut};
use namenode::NameNode;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// Input of the server task.
pub(crate) enum ServerIn {
    Net(usize, Msg),
    AddTable(u32, Box<dyn ServerTableOps>),
    /// The name node's manifest of snapshot `clock` is written (or failed; the job then fails).
    ManifestDone(i64),
}

/// Packs rows for one client into frames of about `limit` bytes.
struct RowsOut {
    frames: Vec<Bytes>,
    cur: BytesMut,
    limit: usize,
}

impl RowsOut {
    fn new(limit: usize) -> Self {
        RowsOut { frames: Vec::new(), cur: BytesMut::new(), limit }
    }
    fn add(&mut self, table: u32, row: u64, encoded: &[u8]) {
        if self.cur.len() >= self.limit {
            self.frames.push(std::mem::take(&mut self.cur).freeze());
        }
        self.cur.put_u32_le(table);
        self.cur.put_u64_le(row);
        self.cur.put_slice(encoded);
    }
    fn is_empty(&self) -> bool {
        self.frames.is_empty() && self.cur.is_empty()
    }
    /// Sends all frames; the last one has kind `last`, earlier ones `part`.
    fn send(mut self, to: &Link, part: RowsKind, last: RowsKind, age: i64, rc: i64) {
        self.frames.push(self.cur.freeze());
        let n = self.frames.len();
        for (i, data) in self.frames.into_iter().enumerate() {
            let kind = if i + 1 == n { last } else { part };
            to.send(Msg::Rows { kind, age, rc, data });
        }
    }
}

pub(crate) struct Server {
    core: Arc<Core>,
    tables: FxHashMap<u32, Box<dyn ServerTableOps>>,
    /// Last clock completed by each client process.
    vc: Vec<i64>,
    /// min(vc): every row holds all updates of clocks <= global.
    global: i64,
    pending: Vec<Vec<(u32, Bytes)>>,
    parked: BTreeMap<i64, Vec<(usize, FetchReq)>>,
    subs: FxHashMap<(u32, u64), Vec<usize>>,
    has_subs: Vec<bool>,
    dirty: FxHashSet<(u32, u64)>,
    to_client: Vec<Link>,
    namenode: Option<NameNode>,
    push: bool,
    overstate: i64,
    scratch: BytesMut,
    snap: Option<snapshot::SnapPlan>,
}

impl Server {
    pub fn new(core: Arc<Core>, to_client: Vec<Link>, inbox: UnboundedSender<ServerIn>) -> Self {
        let n = core.nprocs;
        let start = core.start_clock;
        Server {
            tables: FxHashMap::default(),
            vc: vec![start - 1; n],
            global: start - 1,
            pending: vec![Vec::new(); n],
            parked: BTreeMap::new(),
            subs: FxHashMap::default(),
            has_subs: vec![false; n],
            dirty: FxHashSet::default(),
            to_client,
            namenode: (core.pid == 0).then(|| NameNode::new(n, core.clone(), inbox)),
            snap: core.snaps.as_ref().map(|s| snapshot::SnapPlan::new(s, n, start)),
            push: core.cfg.consistency == Consistency::Essp,
            overstate: core.cfg.fault.overstate_age as i64,
            scratch: BytesMut::new(),
            core,
        }
    }

    pub async fn run(mut self, mut inbox: UnboundedReceiver<ServerIn>) {
        while let Some(input) = inbox.recv().await {
            let r = match input {
                ServerIn::AddTable(id, t) => {
                    self.tables.insert(id, t);
                    Ok(())
                }
                ServerIn::Net(from, msg) => self.handle(from, msg),
                ServerIn::ManifestDone(clock) => match self.namenode.as_mut() {
                    Some(nn) => nn.manifest_done(clock, &self.to_client),
                    None => Ok(()),
                },
            };
            if let Err(e) = r {
                self.core.fail(e);
            }
        }
    }

    /// Data age the server reports (the fault knob lets tests prove they can catch a lie).
    fn visible_age(&self) -> i64 {
        self.global.saturating_add(self.overstate)
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
                let mut out = RowsOut::new(self.core.cfg.batch_bytes);
                for r in reqs {
                    if r.min_age <= age {
                        self.serve(from, r, &mut out)?;
                    } else {
                        self.parked.entry(r.min_age).or_default().push((from, r));
                    }
                }
                if !out.is_empty() {
                    out.send(&self.to_client[from], RowsKind::Reply, RowsKind::Reply, age, self.vc[from]);
                }
            }
            Msg::Oplog { table, data } => self.pending[from].push((table, data)),
            Msg::Clock { clock } => self.on_clock(from, clock)?,
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
        if r.subscribe && self.push {
            let s = self.subs.entry((r.table, r.row)).or_default();
            if !s.contains(&client) {
                s.push(client);
            }
            self.has_subs[client] = true;
        }
        Ok(())
    }

    /// A client completed `clock`: apply its pending updates, then, if the global clock moved,
    /// answer parked reads and push subscribed rows.
    fn on_clock(&mut self, from: usize, clock: i64) -> Result<()> {
        let after = match &mut self.snap {
            Some(p) => p.pending_before(from, clock, self.global),
            None => Vec::new(),
        };
        for (table, data) in std::mem::take(&mut self.pending[from]) {
            let t = self
                .tables
                .get_mut(&table)
                .ok_or_else(|| PsError::codec(format!("process {from} sent updates of unknown table {table}")))?;
            let (subs, dirty) = (&self.subs, &mut self.dirty);
            t.apply_batch(&data, clock, &after, &mut |row| {
                if subs.contains_key(&(table, row)) {
                    dirty.insert((table, row));
                }
            })
            .map_err(|e| PsError::codec(format!("updates from process {from} for table {table}: {e}")))?;
        }
        self.vc[from] = self.vc[from].max(clock);
        self.to_client[from].send(Msg::ClockAck { clock });
        let g = self.vc.iter().copied().min().unwrap_or(clock);
        if g > self.global {
            self.global = g;
            self.take_due_snapshots();
            self.release_parked()?;
            if self.push && g < CLOCK_FINISHED {
                self.push_rows();
            }
        }
        if g >= CLOCK_FINISHED {
            self.core.update_ctl(|c| c.server_finished = true);
        }
        Ok(())
    }

    fn release_parked(&mut self) -> Result<()> {
        let age = self.visible_age();
        let later = self.parked.split_off(&age.saturating_add(1));
        let ready = std::mem::replace(&mut self.parked, later);
        let mut outs: FxHashMap<usize, RowsOut> = FxHashMap::default();
        for (client, r) in ready.into_values().flatten() {
            let mut out = outs.remove(&client).unwrap_or_else(|| RowsOut::new(self.core.cfg.batch_bytes));
            self.serve(client, r, &mut out)?;
            outs.insert(client, out);
        }
        for (client, out) in outs {
            out.send(&self.to_client[client], RowsKind::Reply, RowsKind::Reply, age, self.vc[client]);
        }
        Ok(())
    }

    /// ESSP: send every subscribed row changed since the last push to its subscribers, then tell
    /// each subscriber the new clock (which also freshens its unchanged subscribed rows).
    fn push_rows(&mut self) {
        let age = self.visible_age();
        let n = self.core.nprocs;
        let mut outs: Vec<RowsOut> = (0..n).map(|_| RowsOut::new(self.core.cfg.batch_bytes)).collect();
        for (table, row) in std::mem::take(&mut self.dirty) {
            let Some(t) = self.tables.get_mut(&table) else {
                continue;
            };
            self.scratch.clear();
            t.encode_row(row, &mut self.scratch);
            for &c in self.subs.get(&(table, row)).map(|v| v.as_slice()).unwrap_or(&[]) {
                outs[c].add(table, row, &self.scratch);
            }
        }
        for (c, out) in outs.into_iter().enumerate() {
            if self.has_subs[c] {
                out.send(&self.to_client[c], RowsKind::PushPart, RowsKind::PushDone, age, self.vc[c]);
            }
        }
    }
}
