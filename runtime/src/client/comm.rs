//! The client communication task: turns application commands into packed messages to servers and
//! installs what servers send back. Application threads never touch sockets.

use super::Client;
use crate::clock::Age;
use crate::error::{PsError, Result};
use crate::net::Link;
use crate::oplog::BatchOut;
use crate::row::ReadExt;
use crate::state::ClientCmd;
use crate::wire::{FetchReq, Msg, RowsKind};
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedReceiver;

pub(crate) struct ClientTask {
    pub core: Arc<Client>,
    pub to_server: Vec<Link>,
    /// Data age of the updates shipped so far (the last clock shipped).
    pub sent_upto: Age,
    pub clock_log: Option<std::fs::File>,
    /// Last progress line (at most one a second).
    pub last_progress: std::time::Instant,
    pub sync: BarrierSync,
}

/// ASP: a released global barrier waits for every server of the data center to sync its copy.
#[derive(Default)]
pub(crate) struct BarrierSync {
    /// The barrier the name node released (epoch, clock), still waiting for syncs.
    pending: Option<(u64, crate::clock::Clock)>,
    /// Per server, the newest barrier age it has synced at.
    synced: rustc_hash::FxHashMap<usize, Age>,
}

impl ClientTask {
    pub async fn run(mut self, mut cmds: UnboundedReceiver<ClientCmd>, mut inbox: UnboundedReceiver<(usize, Msg)>) {
        loop {
            tokio::select! {
                c = cmds.recv() => match c {
                    Some(c) => self.on_cmds(c, &mut cmds),
                    None => break,
                },
                m = inbox.recv() => match m {
                    Some((from, msg)) => {
                        if let Err(e) = self.on_msg(from, msg) {
                            self.core.shared.fail(e);
                        }
                    }
                    None => break,
                },
            }
        }
    }

    fn send(&self, server: usize, m: Msg) {
        self.to_server[server].send(m);
    }

    /// Handles a burst of commands; fetches are packed into one message per server.
    fn on_cmds(&mut self, first: ClientCmd, rx: &mut UnboundedReceiver<ClientCmd>) {
        let mut fetches: Vec<Vec<FetchReq>> = vec![Vec::new(); self.core.shared.nprocs];
        let mut next = Some(first);
        let mut n = 0;
        while let Some(cmd) = next.take() {
            match cmd {
                ClientCmd::Fetch { server, req } => fetches[server].push(req),
                ClientCmd::Fetches(v) => v.into_iter().for_each(|(server, req)| fetches[server].push(req)),
                other => {
                    self.flush_fetches(&mut fetches);
                    self.on_cmd(other);
                }
            }
            n += 1;
            if n < 4096 {
                next = rx.try_recv().ok();
            }
        }
        self.flush_fetches(&mut fetches);
    }

    fn flush_fetches(&self, fetches: &mut [Vec<FetchReq>]) {
        for (q, f) in fetches.iter_mut().enumerate() {
            if !f.is_empty() {
                self.core.shared.net.fetches_sent.fetch_add(f.len() as u64, Ordering::Relaxed);
                self.send(q, Msg::Fetch(std::mem::take(f)));
            }
        }
    }

    fn on_cmd(&mut self, cmd: ClientCmd) {
        match cmd {
            ClientCmd::Fetch { .. } | ClientCmd::Fetches(_) => unreachable!("handled in on_cmds"),
            ClientCmd::ProcessClock { completed } => self.ship(completed),
            ClientCmd::Barrier { epoch, clock } => self.send(0, Msg::BarrierArrive { epoch, clock }),
            ClientCmd::Register { fingerprint } => self.send(0, Msg::Register { fingerprint }),
            ClientCmd::Done => self.send(0, Msg::Done),
            ClientCmd::Abort(reason) => self.send(0, Msg::Abort { reason }),
            ClientCmd::SnapshotDone { clock, info } => self.send(0, Msg::SnapshotDone { clock, info }),
            ClientCmd::Send { server, msg } => self.send(server, msg),
        }
    }

    /// Ships the oplog of clocks `(sent_upto, upto]` and a clock message to every server. A range
    /// spanning a snapshot boundary (after a barrier jump) is cut there, so a server can tell
    /// updates before a snapshot clock from those after it.
    /// Process 0 first tells every server whether each periodic snapshot whose boundary it
    /// crosses is taken (`SnapshotPlan`, ahead of its clock on the same links, so every server
    /// knows before it could take it).
    fn ship(&mut self, upto: Age) {
        if let Some(s) = self.core.snaps.clone() {
            let every = s.cfg.every;
            if every > 0 && !upto.is_finished() {
                // Boundary `b = t - 1` for snapshot clock `t`: the last clock the snapshot holds.
                let sent = self.sent_upto.get();
                let mut b = (sent + 1).div_euclid(every) * every + every - 1;
                while b <= upto.get() {
                    if b > sent {
                        let shared = self.core.shared.clone();
                        if shared.pid == 0 {
                            let msg = Msg::SnapshotPlan { clock: b + 1, take: s.plan(b + 1) };
                            // Under ASP the other data centers' servers (not this client's) take
                            // snapshots too, and wait for the decision.
                            let all: Vec<usize> = (0..shared.nprocs).collect();
                            for &q in if shared.topo.is_asp() { &all } else { &shared.servers } {
                                self.send(q, msg.clone());
                            }
                        }
                        self.ship_range(Age::new(b));
                    }
                    b += every;
                }
            }
        }
        self.ship_range(upto);
    }

    fn ship_range(&mut self, upto: Age) {
        if upto <= self.sent_upto {
            return;
        }
        let shared = self.core.shared.clone();
        let tables = self.core.tables.all();
        let mut entries = 0;
        for (id, slot) in tables.iter() {
            let mut out = BatchOut::new(shared.nprocs, shared.cfg.batch_bytes);
            slot.ops.collect_updates(self.sent_upto, upto, &mut out);
            entries += out.entries;
            for (q, bufs) in out.per_server.into_iter().enumerate() {
                for b in bufs {
                    self.send(q, Msg::Oplog { table: *id, data: b.freeze() });
                }
            }
        }
        drop(tables);
        shared.net.updates_sent.fetch_add(entries, Ordering::Relaxed);
        for &q in &shared.servers {
            self.send(q, Msg::Clock { clock: upto });
        }
        self.sent_upto = upto;
        if upto.is_finished() {
            return;
        }
        let n = &shared.net;
        let (sent, recv) = (n.bytes_sent.load(Ordering::Relaxed), n.bytes_recv.load(Ordering::Relaxed));
        shared.live.tick(upto.get(), shared.start.elapsed().as_secs_f64(), sent, recv);
        if self.last_progress.elapsed().as_secs_f64() >= 1.0 {
            self.last_progress = std::time::Instant::now();
            let n = &shared.net;
            log::info!(
                "clock {} done at {:.1}s ({:.1} MB sent, {:.1} MB received)",
                upto.get(),
                shared.start.elapsed().as_secs_f64(),
                n.bytes_sent.load(Ordering::Relaxed) as f64 / 1e6,
                n.bytes_recv.load(Ordering::Relaxed) as f64 / 1e6
            );
        }
        if let Some(f) = self.clock_log.as_mut() {
            let n = &shared.net;
            let line = serde_json::json!({
                "clock": upto.get(),
                "time_s": shared.start.elapsed().as_secs_f64(),
                "bytes_sent": n.bytes_sent.load(Ordering::Relaxed),
                "bytes_recv": n.bytes_recv.load(Ordering::Relaxed),
                "rows_recv": n.rows_recv.load(Ordering::Relaxed),
                "updates_sent": n.updates_sent.load(Ordering::Relaxed),
            });
            let _ = writeln!(f, "{line}");
        }
    }

    /// Releases the pending barrier once every server has synced at its age. Rows cached before
    /// may claim that age without the other data centers' updates (pushed before the server
    /// knew of the barrier), so their ages are dropped: the next reads fetch synced rows.
    fn release_synced(&mut self) {
        let Some((epoch, clock)) = self.sync.pending else { return };
        let a = clock.completed();
        if self.core.shared.servers.iter().all(|q| self.sync.synced.get(q).is_some_and(|&s| s >= a)) {
            self.sync.pending = None;
            for t in self.core.tables.all().values() {
                t.ops.forget_ages();
            }
            self.core.barrier.released(epoch, clock);
        }
    }

    fn on_msg(&mut self, from: usize, msg: Msg) -> Result<()> {
        match msg {
            Msg::Rows { kind, age, rc, data } => {
                let tables = self.core.tables.all();
                let mut s: &[u8] = &data;
                let mut n = 0;
                while !s.is_empty() {
                    let table = s.take_u32()?;
                    let row = s.take_u64()?;
                    let slot = tables
                        .get(&table)
                        .ok_or_else(|| PsError::codec(format!("process {from} sent a row of unknown table {table}")))?;
                    slot.ops.on_row(from, kind, age, rc, row, &mut s)?;
                    n += 1;
                }
                let net = &self.core.shared.net;
                net.rows_recv.fetch_add(n, Ordering::Relaxed);
                if from != self.core.shared.pid {
                    net.rows_recv_remote.fetch_add(n, Ordering::Relaxed);
                }
                if kind == RowsKind::PushDone {
                    self.core.push.advance(from, age);
                    for t in tables.values() {
                        t.ops.wake_all();
                    }
                }
            }
            Msg::ClockAck { clock } => {
                for t in self.core.tables.all().values() {
                    t.ops.on_ack(from, clock);
                }
                if clock.is_finished() {
                    self.core.shared.update_ctl(|c| c.final_acks += 1);
                }
            }
            Msg::Ready => self.core.shared.update_ctl(|c| c.ready = true),
            Msg::BarrierRelease { epoch, clock } => {
                self.core.tracker.barrier_jump(clock);
                self.ship(clock.completed());
                let shared = &self.core.shared;
                if shared.topo.is_asp() && !shared.cfg.fault.skip_barrier_sync {
                    for &q in &shared.servers {
                        self.send(q, Msg::SyncRequest { clock: clock.completed() });
                    }
                    self.sync.pending = Some((epoch, clock));
                    self.release_synced();
                } else {
                    self.core.barrier.released(epoch, clock);
                }
            }
            Msg::Synced { clock } => {
                if !self.core.shared.servers.contains(&from) {
                    return Err(PsError::codec(format!("process {from} sent a sync, but it is not a server of ours")));
                }
                let s = self.sync.synced.entry(from).or_insert(Age::NONE);
                *s = (*s).max(clock);
                self.release_synced();
            }
            Msg::Shutdown => {
                self.core.shared.control.closing.store(true, Ordering::SeqCst);
                self.send(0, Msg::Bye);
                self.core.shared.update_ctl(|c| c.shutdown = true);
            }
            Msg::Exit => self.core.shared.update_ctl(|c| c.exit = true),
            Msg::Abort { reason } => {
                self.core.shared.fail(PsError::Aborted(reason));
            }
            other => {
                return Err(PsError::codec(format!("process {from} sent a client an unexpected {other:?}")));
            }
        }
        Ok(())
    }
}
