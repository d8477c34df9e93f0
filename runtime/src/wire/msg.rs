//! Messages of the data path and the control path, and their compact binary encoding (one message
//! per length-delimited frame: a tag byte, then little-endian fields; row payloads are packed
//! arrays written by the row types themselves).
//!
//! ## The messages
//!
//! client → server: `Fetch[(table,row,min_age,subscribe)]`, `Oplog{table, (row,update)*}`, `Clock{c}`,
//! `Exchange{epoch, from thread, to thread, rest, bytes}` (parts of `Worker::exchange`, into the mailbox;
//! `rest` = bytes still to come, so the first part sizes the receiving buffer once)
//! server → client: `Rows{kind=Reply|PushPart|PushDone, age, rc, (table,row,row-bytes)*}`, `ClockAck{c}`
//! client → name node: `Register{tables fingerprint + start clock}`, `BarrierArrive{epoch,clock}`, `Done`, `Bye`, `Abort`,
//! `SnapshotDone{clock, files of this process as JSON}`
//! process 0's client → every server: `SnapshotPlan{clock, take}` (a periodic snapshot taken or skipped)
//! server → server of another data center (ASP): `MirrorUpdate{table, seq, (row,update)*}`, `MirrorClock{c}`
//! (on the link the sender's client uses; FIFO, so a mirror clock follows the updates it covers), or,
//! when the link is behind, `SelectiveBarrier{c, (seq,clock,table,rows)*}` on the link's control queue (a
//! writer drains it before data; `Link::departed` counts mirror updates that have left) announcing
//! the rows of the updates still queued: the receiver takes clock c and serves those rows no newer than
//! their updates' clocks allow (DS) until they arrive.
//! Global barrier under ASP: client → its servers `SyncRequest{B-1}`; server → mirrors, once its data
//! center completed B-1, every held-back update then `MirrorSynced{a}`; server → its clients `Synced{B-1}`
//! once every mirror's marker arrived (it claims no age >= B-1 before); the client releases its threads then.
//! name node → client: `Ready`, `BarrierRelease{epoch,B}`, `Shutdown`, `Exit`, `Abort{reason}`; `Ping` both ways.

use crate::clock::{Age, Clock};
use crate::error::{PsError, Result};
use crate::row::ReadExt;
use bytes::{BufMut, Bytes, BytesMut};

/// One row request: reply when the server's data age is at least `min_age`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchReq {
    pub table: u32,
    pub row: u64,
    pub min_age: Age,
    /// ESSP: also register a push callback for this row.
    pub subscribe: bool,
}

/// Kind of a `Rows` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowsKind {
    /// Answer to `Fetch` requests.
    Reply = 0,
    /// Part of a push; more parts follow.
    PushPart = 1,
    /// Last part of a push: afterwards every subscribed row of this server is at least `age`.
    PushDone = 2,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Msg {
    // client -> server
    Fetch(Vec<FetchReq>),
    /// Updates of one table: a sequence of (row u64, encoded update); applied at the next `Clock`.
    Oplog {
        table: u32,
        data: Bytes,
    },
    /// The sender has completed every clock up to and including `clock` (its updates so far
    /// have this data age; `Age::FINISHED` when it is done).
    Clock {
        clock: Age,
    },
    // server -> client
    /// Rows: a sequence of (table u32, row u64, encoded row). `age`: server global clock (the
    /// rows hold all updates of clocks <= age); `rc`: the last clock of the receiver applied.
    Rows {
        kind: RowsKind,
        age: Age,
        rc: Age,
        data: Bytes,
    },
    /// The server applied the receiver's updates up to `clock`.
    ClockAck {
        clock: Age,
    },
    // client -> name node
    Register {
        fingerprint: u64,
    },
    BarrierArrive {
        epoch: u64,
        clock: Clock,
    },
    Done,
    Bye,
    // name node -> client
    Ready,
    BarrierRelease {
        epoch: u64,
        clock: Clock,
    },
    Shutdown,
    Exit,
    Abort {
        reason: String,
    },
    /// Process 0's client → every server, before its clock `clock - 1`: whether the periodic
    /// snapshot at `clock` is taken (`checkpoint.when_busy`), so that every server decides alike.
    SnapshotPlan {
        clock: i64,
        take: bool,
    },
    /// The sender wrote its part of the snapshot at `clock` (a JSON `ProcessPart`).
    SnapshotDone {
        clock: i64,
        info: String,
    },
    /// Part of a worker-to-worker exchange (`Worker::exchange`): bytes from global thread
    /// `from` to global thread `to` (a thread of the receiving process) in exchange `epoch`;
    /// `rest` is how many bytes the sender still has for `to` after this part (0: the last),
    /// so the receiver can hold the whole buffer in one allocation from the first part on.
    Exchange {
        epoch: u64,
        from: u32,
        to: u32,
        rest: u64,
        data: Bytes,
    },
    /// ASP: a global barrier ended at `clock`; the server is to give its data center's clients
    /// rows of age >= `clock` only once they hold every data center's updates up to it.
    SyncRequest {
        clock: Age,
    },
    /// ASP: this server's copy holds every data center's updates of clocks <= `clock` (sent
    /// before any row it serves under that promise).
    Synced {
        clock: Age,
    },
    // server -> server of another data center (ASP)
    /// Updates of one table that became significant: (row u64, encoded update)*. `seq` numbers
    /// the mirror updates from one server to another, from 0.
    MirrorUpdate {
        table: u32,
        seq: u64,
        data: Bytes,
    },
    /// The sender's data center completed `clock` (sent after that clock's mirror updates).
    MirrorClock {
        clock: Age,
    },
    /// ASP, after a global barrier: the sender has sent this server every update of clocks
    /// <= `clock` it had not mirrored yet (sent after them, so they are applied first).
    MirrorSynced {
        clock: Age,
    },
    /// Gaia's selective barrier, sent ahead of queued data: the sender's data center completed
    /// `clock`, and the mirror updates it has not yet delivered hold these rows, with the clock
    /// each was taken at (the server's `barrier` module reads them).
    SelectiveBarrier {
        clock: Age,
        data: Bytes,
    },
    // either way
    Ping,
}

/// Clocks and ages go on the wire as their raw little-endian `i64`.
trait Raw {
    fn raw(self) -> i64;
}
impl Raw for i64 {
    fn raw(self) -> i64 {
        self
    }
}
impl Raw for Age {
    fn raw(self) -> i64 {
        self.get()
    }
}
impl Raw for Clock {
    fn raw(self) -> i64 {
        self.get()
    }
}

impl Msg {
    /// True for messages handled by the name node (process 0).
    pub fn is_for_namenode(&self) -> bool {
        matches!(
            self,
            Msg::Register { .. }
                | Msg::BarrierArrive { .. }
                | Msg::Done
                | Msg::Bye
                | Msg::Abort { .. }
                | Msg::SnapshotDone { .. }
        )
    }

    /// True for what a server sends its clients: rows (replies and pushes) and acknowledgements
    /// (counted apart as `server_bytes_sent`).
    pub fn is_server_to_client(&self) -> bool {
        matches!(self, Msg::Rows { .. } | Msg::ClockAck { .. } | Msg::Synced { .. })
    }

    pub fn encode(&self, b: &mut BytesMut) {
        match self {
            Msg::Fetch(reqs) => {
                b.reserve(5 + reqs.len() * 21);
                b.put_u8(1);
                b.put_u32_le(reqs.len() as u32);
                for r in reqs {
                    b.put_u32_le(r.table);
                    b.put_u64_le(r.row);
                    b.put_i64_le(r.min_age.raw());
                    b.put_u8(r.subscribe as u8);
                }
            }
            Msg::Oplog { table, data } => {
                b.reserve(5 + data.len());
                b.put_u8(2);
                b.put_u32_le(*table);
                b.put_slice(data);
            }
            Msg::Clock { clock } => {
                b.put_u8(3);
                b.put_i64_le(clock.raw());
            }
            Msg::Rows { kind, age, rc, data } => {
                b.reserve(18 + data.len());
                b.put_u8(4);
                b.put_u8(*kind as u8);
                b.put_i64_le(age.raw());
                b.put_i64_le(rc.raw());
                b.put_slice(data);
            }
            Msg::ClockAck { clock } => {
                b.put_u8(5);
                b.put_i64_le(clock.raw());
            }
            Msg::Register { fingerprint } => {
                b.put_u8(6);
                b.put_u64_le(*fingerprint);
            }
            Msg::BarrierArrive { epoch, clock } => {
                b.put_u8(7);
                b.put_u64_le(*epoch);
                b.put_i64_le(clock.raw());
            }
            Msg::Done => b.put_u8(8),
            Msg::Bye => b.put_u8(9),
            Msg::Ready => b.put_u8(10),
            Msg::BarrierRelease { epoch, clock } => {
                b.put_u8(11);
                b.put_u64_le(*epoch);
                b.put_i64_le(clock.raw());
            }
            Msg::Shutdown => b.put_u8(12),
            Msg::Exit => b.put_u8(13),
            Msg::Abort { reason } => {
                b.put_u8(14);
                b.put_slice(reason.as_bytes());
            }
            Msg::Ping => b.put_u8(15),
            Msg::SnapshotPlan { clock, take } => {
                b.put_u8(24);
                b.put_i64_le(*clock);
                b.put_u8(u8::from(*take));
            }
            Msg::SnapshotDone { clock, info } => {
                b.put_u8(16);
                b.put_i64_le(clock.raw());
                b.put_slice(info.as_bytes());
            }
            Msg::MirrorUpdate { table, seq, data } => {
                b.reserve(13 + data.len());
                b.put_u8(18);
                b.put_u32_le(*table);
                b.put_u64_le(*seq);
                b.put_slice(data);
            }
            Msg::SelectiveBarrier { clock, data } => {
                b.reserve(9 + data.len());
                b.put_u8(20);
                b.put_i64_le(clock.raw());
                b.put_slice(data);
            }
            Msg::MirrorClock { clock } => {
                b.put_u8(19);
                b.put_i64_le(clock.raw());
            }
            Msg::SyncRequest { clock } => {
                b.put_u8(21);
                b.put_i64_le(clock.raw());
            }
            Msg::MirrorSynced { clock } => {
                b.put_u8(22);
                b.put_i64_le(clock.raw());
            }
            Msg::Synced { clock } => {
                b.put_u8(23);
                b.put_i64_le(clock.raw());
            }
            Msg::Exchange { epoch, from, to, rest, data } => {
                b.reserve(25 + data.len());
                b.put_u8(17);
                b.put_u64_le(*epoch);
                b.put_u32_le(*from);
                b.put_u32_le(*to);
                b.put_u64_le(*rest);
                b.put_slice(data);
            }
        }
    }

    /// Decodes one frame. `frame` is consumed; payloads are zero-copy slices of it.
    pub fn decode(frame: Bytes) -> Result<Msg> {
        let mut s: &[u8] = &frame;
        let tag = s.take_u8()?;
        let msg = match tag {
            1 => {
                let n = s.take_u32()? as usize;
                if n.checked_mul(21) != Some(s.len()) {
                    return Err(PsError::codec(format!("fetch of {n} rows has {} bytes", s.len())));
                }
                let mut reqs = Vec::with_capacity(n);
                for _ in 0..n {
                    reqs.push(FetchReq {
                        table: s.take_u32()?,
                        row: s.take_u64()?,
                        min_age: Age::new(s.take_i64()?),
                        subscribe: s.take_u8()? != 0,
                    });
                }
                Msg::Fetch(reqs)
            }
            2 => {
                let table = s.take_u32()?;
                Msg::Oplog { table, data: frame.slice(5..) }
            }
            3 => Msg::Clock { clock: Age::new(s.take_i64()?) },
            4 => {
                let kind = match s.take_u8()? {
                    0 => RowsKind::Reply,
                    1 => RowsKind::PushPart,
                    2 => RowsKind::PushDone,
                    k => return Err(PsError::codec(format!("unknown rows kind {k}"))),
                };
                let age = Age::new(s.take_i64()?);
                let rc = Age::new(s.take_i64()?);
                Msg::Rows { kind, age, rc, data: frame.slice(18..) }
            }
            5 => Msg::ClockAck { clock: Age::new(s.take_i64()?) },
            6 => Msg::Register { fingerprint: s.take_u64()? },
            7 => Msg::BarrierArrive { epoch: s.take_u64()?, clock: Clock::new(s.take_i64()?) },
            8 => Msg::Done,
            9 => Msg::Bye,
            10 => Msg::Ready,
            11 => Msg::BarrierRelease { epoch: s.take_u64()?, clock: Clock::new(s.take_i64()?) },
            12 => Msg::Shutdown,
            13 => Msg::Exit,
            14 => Msg::Abort { reason: String::from_utf8_lossy(s).into_owned() },
            15 => Msg::Ping,
            16 => {
                let clock = s.take_i64()?;
                let info = String::from_utf8(s.to_vec()).map_err(|_| PsError::codec("snapshot info is not UTF-8"))?;
                Msg::SnapshotDone { clock, info }
            }
            17 => Msg::Exchange {
                epoch: s.take_u64()?,
                from: s.take_u32()?,
                to: s.take_u32()?,
                rest: s.take_u64()?,
                data: frame.slice(25..),
            },
            18 => {
                let table = s.take_u32()?;
                Msg::MirrorUpdate { table, seq: s.take_u64()?, data: frame.slice(13..) }
            }
            20 => {
                let clock = Age::new(s.take_i64()?);
                Msg::SelectiveBarrier { clock, data: frame.slice(9..) }
            }
            19 => Msg::MirrorClock { clock: Age::new(s.take_i64()?) },
            21 => Msg::SyncRequest { clock: Age::new(s.take_i64()?) },
            22 => Msg::MirrorSynced { clock: Age::new(s.take_i64()?) },
            23 => Msg::Synced { clock: Age::new(s.take_i64()?) },
            24 => {
                let clock = s.take_i64()?;
                let take = match s {
                    [0] => false,
                    [1] => true,
                    _ => return Err(PsError::codec("a snapshot plan's decision is not one byte 0 or 1")),
                };
                Msg::SnapshotPlan { clock, take }
            }
            t => return Err(PsError::codec(format!("unknown message tag {t}"))),
        };
        Ok(msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(m: Msg) {
        let mut b = BytesMut::new();
        m.encode(&mut b);
        assert_eq!(Msg::decode(b.freeze()).unwrap(), m);
    }

    #[test]
    fn messages_roundtrip() {
        roundtrip(Msg::Fetch(vec![
            FetchReq { table: 1, row: 7, min_age: Age::new(-1), subscribe: true },
            FetchReq { table: 2, row: u64::MAX, min_age: Age::new(9), subscribe: false },
        ]));
        roundtrip(Msg::Oplog { table: 3, data: Bytes::from_static(b"abc") });
        roundtrip(Msg::Rows {
            kind: RowsKind::PushDone,
            age: Age::new(4),
            rc: Age::new(3),
            data: Bytes::from_static(b"x"),
        });
        roundtrip(Msg::Clock { clock: Age::FINISHED });
        roundtrip(Msg::MirrorUpdate { table: 7, seq: 3, data: Bytes::from_static(b"rows") });
        roundtrip(Msg::SelectiveBarrier { clock: Age::new(4), data: Bytes::from(vec![1; 40]) });
        // The barrier's body is read (and checked) by the server's `barrier` module.
        assert!(Msg::decode(Bytes::from(vec![20, 0, 0, 0, 0, 0, 0, 0])).is_err(), "a torn clock");
        roundtrip(Msg::MirrorClock { clock: Age::new(12) });
        roundtrip(Msg::SyncRequest { clock: Age::new(3) });
        roundtrip(Msg::MirrorSynced { clock: Age::new(4) });
        roundtrip(Msg::Synced { clock: Age::new(5) });
        roundtrip(Msg::BarrierRelease { epoch: 2, clock: Clock::new(11) });
        roundtrip(Msg::Abort { reason: "boom".into() });
        roundtrip(Msg::Ping);
        roundtrip(Msg::SnapshotDone { clock: 5, info: "{}".into() });
        roundtrip(Msg::SnapshotPlan { clock: 10, take: true });
        roundtrip(Msg::SnapshotPlan { clock: 20, take: false });
        assert!(Msg::decode(Bytes::from(vec![24, 10, 0, 0, 0, 0, 0, 0, 0, 2])).is_err(), "a decision of 2");
        roundtrip(Msg::Exchange { epoch: 3, from: 1, to: 2, rest: 0, data: Bytes::from_static(b"r") });
        roundtrip(Msg::Exchange { epoch: 3, from: 1, to: 2, rest: 1 << 40, data: Bytes::new() });
    }

    #[test]
    fn malformed_frames_are_errors_not_panics() {
        for bad in [&b""[..], b"\x01\x05\x00\x00\x00", b"\x04\x07", b"\xff", b"\x03\x01"] {
            assert!(Msg::decode(Bytes::copy_from_slice(bad)).is_err(), "{bad:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let _ = Msg::decode(Bytes::from(bytes));
        }
    }
}
