//! Gaia's ASP on a server (`--inter-dc asp`): this server holds its data center's copy of its
//! rows, and the same rows' copies in the other data centers live on their "mirror" servers.
//!
//! * Significance filter: the updates of this data center's clients are also summed per row
//!   (`ServerTableOps::take_significant`); each time the data center's clock advances to `t`,
//!   the rows whose sum changes the row by more than `v / sqrt(t)` (the row type's
//!   `significance`, |update / value| for dense and sparse rows) go to the row's server in every
//!   other data center, packed per destination, and their sums restart. A table can set its own
//!   threshold (`TableConfig::significance`; 0 mirrors every change). At the end everything
//!   still unsent goes.
//! * Mirror clock: after a clock's updates the server sends `MirrorClock` to every server of
//!   the other data centers (on the same ordered link, so it arrives after them). A server
//!   serves reads only up to `min(mirror clocks) + DS` (`mirror_clock_bound`): more than DS
//!   clocks ahead of its slowest mirror, reads wait until it catches up.
//!
//! Received mirror updates are applied but not summed again (they are never sent on).

use crate::clock::Age;
use crate::error::{PsError, Result};
use crate::net::Link;
use crate::state::Shared;
use crate::wire::Msg;
use bytes::{BufMut, BytesMut};
use rustc_hash::FxHashMap;
use std::sync::atomic::Ordering;

use super::ServerTableOps;

pub(crate) struct Mirror {
    /// Every server of the other data centers and the last clock it reported.
    clocks: FxHashMap<usize, Age>,
    /// DS: how far this server may run ahead of its slowest mirror.
    bound: i64,
    /// Initial significance threshold v.
    v: f64,
}

impl Mirror {
    /// The mirror state of process `shared.pid`'s server, if the job runs ASP.
    pub fn new(shared: &Shared) -> Option<Self> {
        if !shared.topo.is_asp() {
            return None;
        }
        let start = shared.start_clock.completed();
        let geo = &shared.cfg.geo;
        Some(Mirror {
            clocks: shared.topo.other_dcs(shared.pid).into_iter().map(|q| (q, start)).collect(),
            bound: geo.mirror_clock_bound as i64,
            v: geo.significance,
        })
    }

    /// The newest data age this server may serve when its own data center is at `visible`.
    pub fn cap(&self, visible: Age) -> Age {
        let slowest = self.clocks.values().copied().min().unwrap_or(Age::FINISHED);
        visible.min(slowest.shifted(self.bound))
    }

    /// A mirror reported `clock`; false if `from` is not a mirror of this server.
    pub fn on_clock(&mut self, from: usize, clock: Age) -> bool {
        match self.clocks.get_mut(&from) {
            Some(c) => {
                *c = (*c).max(clock);
                true
            }
            None => false,
        }
    }

    pub fn is_mirror(&self, from: usize) -> bool {
        self.clocks.contains_key(&from)
    }

    /// This data center completed clock `age`: sends the significant updates of every table to
    /// their mirrors (all unsent ones once `age` is final), then the clock itself.
    pub fn advance(
        &self,
        shared: &Shared,
        age: Age,
        tables: &mut FxHashMap<u32, Box<dyn ServerTableOps>>,
        to_server: &[Link],
    ) {
        let t = (age.get().max(0) + 1) as f64;
        let limit = shared.cfg.batch_bytes;
        let mut sent = 0;
        for (&id, table) in tables.iter_mut() {
            let cfg = table.config();
            let threshold = if age.is_finished() { None } else { Some(cfg.significance.unwrap_or(self.v / t.sqrt())) };
            let cfg = cfg.clone();
            let mut out: FxHashMap<usize, BytesMut> = FxHashMap::default();
            sent += table.take_significant(threshold, &mut |row, update| {
                for q in shared.topo.mirrors(shared.pid, cfg.slot(row)) {
                    let b = out.entry(q).or_default();
                    if b.len() >= limit {
                        to_server[q].send(Msg::MirrorUpdate { table: id, data: std::mem::take(b).freeze() });
                    }
                    b.put_u64_le(row);
                    b.put_slice(update);
                }
            });
            for (q, b) in out {
                to_server[q].send(Msg::MirrorUpdate { table: id, data: b.freeze() });
            }
        }
        shared.net.significant_updates.fetch_add(sent, Ordering::Relaxed);
        for &q in self.clocks.keys() {
            to_server[q].send(Msg::MirrorClock { clock: age });
        }
    }
}

/// Refuses mirror traffic from a process that is not a mirror of this server.
pub(crate) fn check_mirror(mirror: &Option<Mirror>, from: usize, what: &str) -> Result<()> {
    match mirror {
        Some(m) if m.is_mirror(from) => Ok(()),
        _ => Err(PsError::codec(format!("process {from} sent {what}, but it is not a mirror of this server"))),
    }
}
