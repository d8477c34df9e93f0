//! Gaia's ASP on a server (`--inter-dc asp`): this server holds its data center's copy of its
//! rows, and the same rows' copies in the other data centers live on their "mirror" servers.
//!
//! * Significance filter: the updates of this data center's clients are also summed per row
//!   (`ServerTableOps::take_significant`); each time the data center's clock advances to `t`,
//!   the rows whose sum changes the row by more than `v / sqrt(t)` (the row type's
//!   `significance`, |update / value| for dense and sparse rows) go to the row's server in every
//!   other data center, packed per destination, and their sums restart. A table can set its own
//!   threshold (`TableConfig::significance`; 0 mirrors every change). At the end everything
//!   still unsent goes. With the soft threshold (`soft_significance`) the threshold is lowered
//!   while every link to a mirror keeps up, and raised back when one falls behind.
//! * Mirror clock: after a clock's updates the server sends `MirrorClock` to every server of
//!   the other data centers (on the same ordered link, so it arrives after them). A server
//!   serves reads only up to `min(mirror clocks) + DS` (`mirror_clock_bound`): more than DS
//!   clocks ahead of its slowest mirror, reads wait until it catches up.
//! * Selective barrier: if mirror updates sent at an earlier clock have not yet left when the
//!   next clock's are ready, the link is not keeping up. Then the clock goes as a
//!   `SelectiveBarrier` on the control queue, ahead of the data, listing the rows of every
//!   mirror update not yet sent out and the clock each was taken at ([`super::barrier`]). The
//!   receiver takes the clock at once; a listed row whose update of clock `k` is still on its way
//!   is as old as a mirror at `k - 1`, so it is served at most at age `k - 1 + DS` and a read
//!   that needs a newer one waits for the update. That is the mirror clock's bound applied row by
//!   row: holding every read of the row until its update arrives made each clock wait a WAN
//!   transfer and delay whenever the link was behind, which DS exists to hide (MF on MovieLens
//!   at 5 Mbit/s ran at under half the Baseline's speed with as many bytes).
//! * Global barriers: after `global_barrier()` every read must see every update made before it,
//!   but the copies differ by the updates still unsent or on the WAN. So the clients of each
//!   data center ask their servers to sync at the barrier's age `a` (`SyncRequest`); once the
//!   data center has completed `a`, a server sends every unsent update to its mirrors, then
//!   `MirrorSynced{a}`; once all its mirrors have done so it tells its clients (`Synced`), and
//!   until then it claims no age `>= a`. Clients release the barrier after every server's
//!   `Synced` (and drop the ages of their cached rows, which may predate it).
//!
//! * Checkpoints: the copies also sync at each snapshot clock, with no worker waiting
//!   ([`super::mirror_snap`]).
//!
//! Received mirror updates are applied but not summed again (they are never sent on).

use crate::clock::Age;
use crate::error::{PsError, Result};
use crate::net::Link;
use crate::state::Shared;
use crate::wire::Msg;
use bytes::{BufMut, BytesMut};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::Ordering;

use super::barrier;
use super::mirror_snap::SnapSync;
use super::ServerTableOps;

/// A mirror update frame holds at most this many bytes, so that a control message waits for at
/// most this much data on a slow link (64 KB: 0.1 s at 5 Mbit/s).
const FRAME_BYTES: usize = 64 * 1024;
/// The soft threshold goes down to this fraction of the hard one.
const SOFT_FLOOR: f64 = 1.0 / 64.0;

/// A mirror update frame's table and row ids (ascending).
type RowIds = (u32, Vec<u64>);

pub(crate) struct Mirror {
    /// Every server of the other data centers and the last clock it reported.
    clocks: FxHashMap<usize, Age>,
    /// DS: how far this server may run ahead of its slowest mirror.
    bound: i64,
    /// Initial significance threshold v.
    v: f64,
    /// Soft threshold on: the fraction of the hard threshold in use (1: just the hard one).
    soft: Option<f64>,
    /// Test-only fault: take a barrier's clock without holding its rows back.
    ignore_barriers: bool,
    out: FxHashMap<usize, Outgoing>,
    incoming: FxHashMap<usize, Incoming>,
    /// Rows with announced updates still to arrive: the clock each of those was taken at.
    blocked: FxHashMap<(u32, u64), Waiting>,
    /// The clocks of the announced updates still to come of rows somebody subscribed to (ESSP),
    /// with how many of each: the oldest caps a push.
    pending_subscribed: BTreeMap<Age, usize>,
    sync: Sync,
    /// Checkpoints: where updates wait, and the syncs at snapshot clocks.
    pub snaps: SnapSync,
}

/// A row with announced updates still to come.
struct Waiting {
    /// The clock each of those updates was taken at.
    clocks: Vec<Age>,
    /// Somebody subscribed to the row: its clocks count in `pending_subscribed`.
    subscribed: bool,
}

/// Syncing the copies at global barriers (ages of barriers: the last clock each one completes).
#[derive(Default)]
struct Sync {
    /// The newest barrier age this data center's clients asked for.
    wanted: Option<Age>,
    /// The newest age whose updates this server has all sent to its mirrors.
    sent: Option<Age>,
    /// Per mirror, the newest age whose updates it has all sent here.
    received: FxHashMap<usize, Age>,
    /// The newest age announced to this data center's clients.
    announced: Option<Age>,
}

impl Sync {
    /// The newest age every mirror has sent all updates of.
    fn complete(&self) -> Option<Age> {
        self.received.values().copied().min()
    }
}

/// Mirror updates to one mirror server.
#[derive(Default)]
struct Outgoing {
    next_seq: u64,
    /// Frames sent in order (no barrier listed them) that may not have left yet: sequence
    /// number, the clock they were taken at, their rows.
    unlisted: VecDeque<(u64, Age, RowIds)>,
}

/// Mirror updates from one mirror server.
#[derive(Default)]
struct Incoming {
    /// Sequence number of the next update to arrive.
    next_seq: u64,
    /// Rows announced by barriers and the clock they were taken at, per update still to arrive.
    announced: BTreeMap<u64, (Age, RowIds)>,
}

impl Mirror {
    /// The mirror state of process `shared.pid`'s server, if the job runs ASP.
    pub fn new(shared: &Shared) -> Option<Self> {
        if !shared.topo.is_asp() {
            return None;
        }
        let start = shared.start_clock.completed();
        let geo = &shared.cfg.geo;
        let others = shared.topo.other_dcs(shared.pid);
        Some(Mirror {
            clocks: others.iter().map(|&q| (q, start)).collect(),
            bound: geo.mirror_clock_bound as i64,
            v: geo.significance,
            soft: geo.soft_significance.then_some(1.0),
            ignore_barriers: shared.cfg.fault.ignore_selective_barriers,
            out: others.iter().map(|&q| (q, Outgoing::default())).collect(),
            incoming: others.iter().map(|&q| (q, Incoming::default())).collect(),
            blocked: FxHashMap::default(),
            pending_subscribed: BTreeMap::new(),
            // Nothing before the start is owed to anyone.
            sync: Sync { received: others.iter().map(|&q| (q, start)).collect(), sent: Some(start), ..Sync::default() },
            snaps: SnapSync::new(&shared.cfg.checkpoint, start),
        })
    }

    /// The newest data age this server may serve when its own data center is at `visible`:
    /// at most DS clocks ahead of the slowest mirror, and below a barrier's age until the
    /// copies are synced at it.
    pub fn cap(&self, visible: Age) -> Age {
        let slowest = self.clocks.values().copied().min().unwrap_or(Age::FINISHED);
        let cap = visible.min(slowest.shifted(self.bound));
        match self.sync.wanted {
            Some(a) if self.sync.complete().is_none_or(|c| c < a) => cap.min(a.shifted(-1)),
            _ => cap,
        }
    }

    /// A client asked for a sync at barrier age `age`. Returns true if this server's own
    /// updates up to it are still to be sent (its data center has completed `age` already).
    pub fn request_sync(&mut self, age: Age, completed: Age) -> bool {
        self.sync.wanted = self.sync.wanted.max(Some(age));
        self.must_flush(completed)
    }

    /// Whether the data center, now at `completed`, owes its mirrors a flush for a barrier.
    fn must_flush(&self, completed: Age) -> bool {
        self.sync.wanted.is_some_and(|a| completed >= a && self.sync.sent < Some(a))
    }

    /// Mirror `from` has sent every update up to `age`.
    pub fn on_synced(&mut self, from: usize, age: Age) -> Result<()> {
        let r = self.sync.received.get_mut(&from).ok_or_else(|| not_a_mirror(from, "a sync"))?;
        *r = (*r).max(age);
        Ok(())
    }

    /// The barrier age to announce to this data center's clients, once, when every mirror has
    /// synced at it.
    pub fn take_announcement(&mut self) -> Option<Age> {
        let a = self.sync.wanted?;
        if self.sync.complete().is_some_and(|c| c >= a) && self.sync.announced < Some(a) {
            self.sync.announced = Some(a);
            return Some(a);
        }
        None
    }

    /// A mirror reported `clock`; false if `from` is not a mirror of this server.
    pub fn on_clock(&mut self, from: usize, clock: Age) -> bool {
        match self.clocks.get_mut(&from) {
            Some(c) => {
                *c = (*c).max(clock);
                self.snaps.mirror_clock(clock);
                true
            }
            None => false,
        }
    }

    /// The newest age at which this server's copy holds every data center's updates and no
    /// later ones that a snapshot cannot tell apart: this data center's and every mirror's
    /// last sync (snapshots are taken up to it).
    pub fn synced_upto(&self) -> Age {
        self.sync.sent.unwrap_or(Age::NONE).min(self.sync.complete().unwrap_or(Age::FINISHED))
    }

    /// The clock mirror `from`'s updates count as for snapshots: just after its last sync.
    pub fn update_clock(&self, from: usize) -> i64 {
        self.sync.received.get(&from).map_or(Age::NONE, |a| *a).get().saturating_add(1)
    }

    pub fn is_mirror(&self, from: usize) -> bool {
        self.clocks.contains_key(&from)
    }

    /// The newest age row `row` of `table` may be served at when the server serves `age`: a
    /// row whose announced update of clock `k` has not arrived is as old as a mirror at `k - 1`.
    pub fn row_cap(&self, table: u32, row: u64, age: Age) -> Age {
        self.capped(age, self.blocked.get(&(table, row)).and_then(|w| w.clocks.iter().min()).copied())
    }

    /// `age`, no newer than a row missing an update of clock `k` may claim: as old as a mirror at
    /// `k - 1`, plus DS.
    fn capped(&self, age: Age, k: Option<Age>) -> Age {
        k.map_or(age, |k| age.min(k.shifted(self.bound - 1)))
    }

    /// The newest age an ESSP push may declare every subscribed row fresh at when the server
    /// serves `age`: the cap of the oldest announced update still to come of a row somebody
    /// subscribed to. (Kept as it changes: a pass over the waiting rows at each push, and a
    /// server pushes again as updates arrive, kept the server thread busy; MF with 1M ratings
    /// at 400 Mbit/s trained in 18.7 s instead of 9.6 s.)
    pub fn push_cap(&self, age: Age) -> Age {
        self.capped(age, self.oldest_subscribed())
    }

    /// The clock of the oldest announced update still to come of a subscribed row.
    fn oldest_subscribed(&self) -> Option<Age> {
        self.pending_subscribed.first_key_value().map(|(k, _)| *k)
    }

    /// A client subscribed to a row: if it waits for announced updates, they now cap pushes.
    pub fn on_subscribe(&mut self, table: u32, row: u64) {
        if let Some(w) = self.blocked.get_mut(&(table, row)).filter(|w| !w.subscribed) {
            w.subscribed = true;
            for &k in &w.clocks {
                *self.pending_subscribed.entry(k).or_default() += 1;
            }
        }
    }

    /// A selective barrier from mirror `from` at `clock`: caps the announced rows whose updates
    /// are still to come at their clocks (`subscribed`: whether somebody subscribed to a row).
    /// The caller then takes the clock ([`Mirror::on_clock`]).
    pub fn on_barrier(
        &mut self,
        from: usize,
        clock: Age,
        data: &[u8],
        subscribed: impl Fn(u32, u64) -> bool,
    ) -> Result<()> {
        let inc = self.incoming.get_mut(&from).ok_or_else(|| not_a_mirror(from, "a selective barrier"))?;
        let groups = barrier::parse(data, from)?;
        if !self.ignore_barriers {
            for g in groups.into_iter().filter(|g| g.seq >= inc.next_seq) {
                if g.clock > clock || inc.announced.contains_key(&g.seq) {
                    return Err(PsError::codec(format!(
                        "selective barrier from process {from} at clock {clock:?} lists update {} again or of clock {:?}",
                        g.seq, g.clock
                    )));
                }
                for &row in &g.rows {
                    let w = self
                        .blocked
                        .entry((g.table, row))
                        .or_insert_with(|| Waiting { clocks: Vec::new(), subscribed: subscribed(g.table, row) });
                    w.clocks.push(g.clock);
                    if w.subscribed {
                        *self.pending_subscribed.entry(g.clock).or_default() += 1;
                    }
                }
                inc.announced.insert(g.seq, (g.clock, (g.table, g.rows)));
            }
        }
        Ok(())
    }

    /// Mirror update `seq` from `from` arrived (and was applied): the rows a barrier announced
    /// for it whose cap rose (free again, or waiting only for a later clock's update) go to
    /// `freed`, so that their held reads are looked at again. Returns whether the push
    /// cap ([`Mirror::push_cap`]) moved, so that a capped push is worth retrying.
    pub fn on_update(&mut self, from: usize, seq: u64, freed: &mut Vec<(u32, u64)>) -> Result<bool> {
        let inc = self.incoming.get_mut(&from).ok_or_else(|| not_a_mirror(from, "mirror updates"))?;
        if seq != inc.next_seq {
            return Err(PsError::codec(format!(
                "process {from} sent mirror update {seq} when {} was due (updates arrive in order)",
                inc.next_seq
            )));
        }
        inc.next_seq += 1;
        let Some((clock, (table, rows))) = inc.announced.remove(&seq) else { return Ok(false) };
        let oldest = self.oldest_subscribed();
        for row in rows {
            if let std::collections::hash_map::Entry::Occupied(mut e) = self.blocked.entry((table, row)) {
                let w = e.get_mut();
                let before = w.clocks.iter().min().copied();
                if let Some(i) = w.clocks.iter().position(|&k| k == clock) {
                    w.clocks.swap_remove(i);
                    if w.subscribed {
                        uncount(&mut self.pending_subscribed, clock);
                    }
                }
                if w.clocks.is_empty() {
                    e.remove();
                    freed.push((table, row));
                } else if w.clocks.iter().min().copied() != before {
                    // Still waiting, for a later clock's update: its cap rose, and reads held
                    // back may be served now.
                    freed.push((table, row));
                }
            }
        }
        Ok(self.oldest_subscribed() != oldest)
    }

    /// This data center completed clock `age`: sends the significant updates of every table to
    /// their mirrors (all unsent ones once `age` is final or a barrier wants a sync), then the
    /// clock itself, in order, or as a selective barrier ahead of them where a link is behind;
    /// after a sync's updates, `MirrorSynced`. Each checkpoint taken on the way gets a sync of
    /// its own first ([`SnapSync::owed`]). Called again at the same age when a sync is asked
    /// for, or a checkpoint decided, after the data center got there.
    pub fn advance(
        &mut self,
        shared: &Shared,
        age: Age,
        tables: &mut FxHashMap<u32, Box<dyn ServerTableOps>>,
        to_server: &[Link],
    ) {
        // A link is behind if updates sent at an earlier clock have not left yet.
        let mut behind = Vec::new();
        for (&q, o) in self.out.iter_mut() {
            let departed = to_server[q].departed();
            while o.unlisted.front().is_some_and(|(seq, _, _)| *seq < departed) {
                o.unlisted.pop_front();
            }
            if departed < o.next_seq {
                behind.push(q);
            }
        }
        // A barrier's sync and the end send everything, so they sync at undecided snapshots too.
        let flush = self.must_flush(age) || age.is_finished();
        let owed = self.snaps.owed(age, flush);
        for b in owed.syncs {
            let r = Round { age: b, upto: self.snaps.bucket(b), threshold: None, clock: false, sync: true, last: None };
            self.round(shared, r, &[], tables, to_server);
        }
        if let Some(f) = self.soft.as_mut().filter(|_| !flush) {
            *f = if behind.is_empty() { (*f / 2.0).max(SOFT_FLOOR) } else { (*f * 2.0).min(1.0) };
        }
        let t = (age.get().max(0) + 1) as f64;
        let threshold = (!flush).then(|| self.v / t.sqrt() * self.soft.unwrap_or(1.0));
        // Every data center ends its final snapshot at the same clock: the latest any client of
        // any of them reached. Sent after the last updates (true to claim by then).
        let last = self.snaps.last_real.filter(|_| age.is_finished());
        // While a snapshot's decision is awaited its later updates wait, so the clock claims
        // no more than its boundary (sent again when the decision comes).
        let age = if self.snaps.waiting { age.min(Age::new(owed.upto - 1)) } else { age };
        let r = Round { age, upto: owed.upto, threshold, clock: true, sync: flush, last };
        self.round(shared, r, &behind, tables, to_server);
    }

    /// Sends one round of mirror updates (of buckets `<= upto`, above `threshold` unless it is
    /// `None`), then, with `clock`, the clock (as a selective barrier where a link is `behind`),
    /// and with `sync`, `MirrorSynced`.
    fn round(
        &mut self,
        shared: &Shared,
        r: Round,
        behind: &[usize],
        tables: &mut FxHashMap<u32, Box<dyn ServerTableOps>>,
        to_server: &[Link],
    ) {
        let Round { age, upto, threshold, clock, sync, last } = r;
        let limit = shared.cfg.batch_bytes.min(FRAME_BYTES);
        let mut frames: FxHashMap<usize, Vec<(u32, BytesMut, Vec<u64>)>> = FxHashMap::default();
        let mut sent = 0;
        let scale = self.soft.unwrap_or(1.0);
        for (&id, table) in tables.iter_mut() {
            let cfg = table.config().clone();
            let threshold = threshold.map(|t| cfg.significance.map_or(t, |s| s * scale));
            sent += table.take_significant(threshold, upto, &mut |row, update| {
                for q in shared.topo.mirrors(shared.pid, cfg.slot(row)) {
                    let fs = frames.entry(q).or_default();
                    if fs.last().is_none_or(|(tid, b, _)| *tid != id || b.len() >= limit) {
                        fs.push((id, BytesMut::new(), Vec::new()));
                    }
                    let (_, b, rows) = fs.last_mut().expect("just pushed");
                    b.put_u64_le(row);
                    b.put_slice(update);
                    rows.push(row);
                }
            });
        }
        shared.net.significant_updates.fetch_add(sent, Ordering::Relaxed);
        for (&q, o) in self.out.iter_mut() {
            let mut fs = frames.remove(&q).unwrap_or_default();
            for (_, _, rows) in fs.iter_mut() {
                rows.sort_unstable();
            }
            let barrier = clock && behind.contains(&q);
            if barrier {
                let mut data = BytesMut::new();
                for (seq, clock, (table, rows)) in o.unlisted.drain(..) {
                    barrier::put(&mut data, seq, clock, table, &rows);
                }
                for (i, (table, _, rows)) in fs.iter().enumerate() {
                    barrier::put(&mut data, o.next_seq + i as u64, age, *table, rows);
                }
                to_server[q].send_control(Msg::SelectiveBarrier { clock: age, data: data.freeze() });
                shared.net.selective_barriers.fetch_add(1, Ordering::Relaxed);
            }
            for (table, data, rows) in fs {
                let seq = o.next_seq;
                o.next_seq += 1;
                to_server[q].send(Msg::MirrorUpdate { table, seq, data: data.freeze() });
                if !barrier {
                    o.unlisted.push_back((seq, age, (table, rows)));
                }
            }
            if clock && !barrier {
                to_server[q].send(Msg::MirrorClock { clock: age });
            }
            if let Some(last) = last {
                to_server[q].send(Msg::MirrorClock { clock: last });
            }
            if sync {
                to_server[q].send(Msg::MirrorSynced { clock: age });
            }
        }
        if sync {
            self.sync.sent = self.sync.sent.max(Some(age));
        }
    }
}

/// One round of mirror updates ([`Mirror::round`]).
struct Round {
    /// The data center's clock the updates are taken at.
    age: Age,
    /// The newest bucket whose updates may go.
    upto: i64,
    /// Significance threshold (`None`: everything goes).
    threshold: Option<f64>,
    /// Send the clock after the updates.
    clock: bool,
    /// Send `MirrorSynced` after the updates.
    sync: bool,
    /// At the end: this data center's latest clock, sent before `MirrorSynced`.
    last: Option<Age>,
}

/// Takes one `clock` out of a multiset of clocks.
fn uncount(clocks: &mut BTreeMap<Age, usize>, clock: Age) {
    if let std::collections::btree_map::Entry::Occupied(mut e) = clocks.entry(clock) {
        *e.get_mut() -= 1;
        if *e.get() == 0 {
            e.remove();
        }
    }
}

fn not_a_mirror(from: usize, what: &str) -> PsError {
    PsError::codec(format!("process {from} sent {what}, but it is not a mirror of this server"))
}

/// Refuses mirror traffic from a process that is not a mirror of this server.
pub(crate) fn check_mirror(mirror: &Option<Mirror>, from: usize, what: &str) -> Result<()> {
    match mirror {
        Some(m) if m.is_mirror(from) => Ok(()),
        _ => Err(not_a_mirror(from, what)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mirror state of a server whose one mirror is process 1, with DS = 2.
    fn mirror() -> Mirror {
        Mirror {
            clocks: [(1, Age::new(0))].into_iter().collect(),
            bound: 2,
            v: 0.01,
            soft: None,
            ignore_barriers: false,
            out: Default::default(),
            incoming: [(1, Incoming::default())].into_iter().collect(),
            blocked: Default::default(),
            pending_subscribed: Default::default(),
            sync: Sync::default(),
            snaps: SnapSync::default(),
        }
    }

    #[test]
    fn a_barrier_caps_its_rows_at_their_clocks_until_their_updates_arrive() {
        let mut m = mirror();
        let mut data = BytesMut::new();
        barrier::put(&mut data, 0, Age::new(3), 7, &[10, 11]);
        barrier::put(&mut data, 1, Age::new(5), 7, &[11, 12]);
        m.on_barrier(1, Age::new(5), &data, |_, r| r == 12).unwrap();
        let now = Age::new(7);
        assert_eq!(m.push_cap(now), Age::new(6), "only subscribed rows hold a push back");
        m.on_subscribe(7, 11);
        m.on_subscribe(7, 13);
        assert_eq!(m.push_cap(now), Age::new(4), "row 11's updates of clocks 3 and 5 count now");
        // Row 10's update of clock 3 is missing: as old as the mirror at 2, plus DS.
        assert_eq!(m.row_cap(7, 10, now), Age::new(4));
        assert_eq!(m.row_cap(7, 11, now), Age::new(4), "the earliest missing update counts");
        assert_eq!(m.row_cap(7, 12, now), Age::new(6));
        assert_eq!(m.row_cap(7, 13, now), now, "a row no barrier lists");
        assert_eq!(m.row_cap(8, 10, now), now, "another table's row");
        assert_eq!(m.row_cap(7, 12, Age::new(5)), Age::new(5), "never above the server's age");
        let mut freed = Vec::new();
        m.on_update(1, 0, &mut freed).unwrap();
        assert_eq!(freed, [(7, 10), (7, 11)], "row 11's cap rose: its held reads are looked at again");
        assert_eq!(m.row_cap(7, 11, now), Age::new(6), "now only its update of clock 5 is missing");
        assert_eq!(m.push_cap(now), Age::new(6));
        freed.clear();
        m.on_update(1, 1, &mut freed).unwrap();
        assert_eq!(freed, [(7, 11), (7, 12)]);
        assert_eq!(m.push_cap(now), now, "nothing left to wait for");
        assert!(m.pending_subscribed.is_empty() && m.blocked.is_empty());
        assert!(m.on_update(1, 5, &mut freed).is_err(), "updates arrive in order");
    }

    #[test]
    fn a_barrier_that_lists_an_update_twice_or_from_the_future_is_refused() {
        let mut m = mirror();
        let mut data = BytesMut::new();
        barrier::put(&mut data, 0, Age::new(3), 7, &[10]);
        m.on_barrier(1, Age::new(3), &data, |_, _| false).unwrap();
        assert!(m.on_barrier(1, Age::new(4), &data, |_, _| false).is_err(), "update 0 listed again");
        let mut later = BytesMut::new();
        barrier::put(&mut later, 1, Age::new(9), 7, &[10]);
        assert!(
            m.on_barrier(1, Age::new(4), &later, |_, _| false).is_err(),
            "an update of a clock after the barrier's"
        );
        assert!(m.on_barrier(2, Age::new(4), &[], |_, _| false).is_err(), "not a mirror");
    }
}
