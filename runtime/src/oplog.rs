//! The oplog (LazyTable §3.2.2): updates on their way from a worker thread to the servers, at
//! three levels, all in one entry format (`row u64` then the encoded `Row::Update`):
//!
//! 1. **Thread**: each thread cache entry keeps the thread's own delta of the current clock beside
//!    its cached row (`client/thread_table.rs`), already applied to the thread's view.
//! 2. **Process** ([`ProcessOplog`]): at the end of a clock the thread's deltas are merged here,
//!    coalesced across threads per clock and row. The communication task encodes a range of clocks
//!    into [`BatchOut`] frames per server when the process clock moves, and keeps them until the
//!    server acknowledges that clock: until then they are re-applied to rows arriving from that
//!    server (read-my-updates).
//! 3. **Server** ([`PendingBatches`]): batches received from a client wait until that client's
//!    clock message, then are applied in one go ([`entries`] decodes them).

use crate::clock::Age;
use crate::error::Result;
use crate::row::{ReadExt, RowUpdate};
use bytes::{BufMut, Bytes, BytesMut};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// One process's unacknowledged updates of one table (shard), by clock, coalesced across threads.
pub(crate) struct ProcessOplog<U> {
    by_clock: BTreeMap<Age, FxHashMap<u64, U>>,
}

impl<U: RowUpdate> Default for ProcessOplog<U> {
    fn default() -> Self {
        ProcessOplog { by_clock: BTreeMap::new() }
    }
}

impl<U: RowUpdate> ProcessOplog<U> {
    /// Adds a thread's update of `row` made in the clock whose data age is `clock`.
    pub fn add(&mut self, clock: Age, row: u64, upd: U) {
        match self.by_clock.entry(clock).or_default().entry(row) {
            std::collections::hash_map::Entry::Occupied(mut e) => e.get_mut().merge(&upd),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(upd);
            }
        }
    }

    /// Every update of `row` from clocks after `applied` (the ones the server has not applied
    /// yet), oldest first: re-applied to a row received from the server (read-my-updates).
    pub fn after(&self, applied: Age, row: u64) -> impl Iterator<Item = &U> {
        self.by_clock.range(applied.shifted(1)..).filter_map(move |(_, ops)| ops.get(&row))
    }

    /// Encodes the updates of clocks in `(from, upto]` into `out`, routed by `server_of`.
    pub fn encode(&self, from: Age, upto: Age, server_of: impl Fn(u64) -> usize, out: &mut BatchOut) {
        for (_, ops) in self.by_clock.range(from.shifted(1)..=upto) {
            for (row, u) in ops {
                let b = out.buf(server_of(*row));
                b.put_u64_le(*row);
                u.encode(b);
            }
        }
    }

    /// Server `server` applied this process's updates up to `clock`: drop its rows from them.
    pub fn acknowledge(&mut self, clock: Age, is_server: impl Fn(u64) -> bool) {
        for ops in self.by_clock.range_mut(..=clock).map(|(_, ops)| ops) {
            ops.retain(|row, _| !is_server(*row));
        }
        self.by_clock.retain(|c, ops| *c > clock || !ops.is_empty());
    }
}

/// Out-buffers for oplog batches, one list of frames of about `limit` bytes per server.
pub(crate) struct BatchOut {
    pub per_server: Vec<Vec<BytesMut>>,
    pub limit: usize,
    pub entries: u64,
}

impl BatchOut {
    pub fn new(servers: usize, limit: usize) -> Self {
        BatchOut { per_server: (0..servers).map(|_| Vec::new()).collect(), limit, entries: 0 }
    }
    /// The buffer to append the next entry for `server` to (starts a new frame when full).
    pub fn buf(&mut self, server: usize) -> &mut BytesMut {
        let list = &mut self.per_server[server];
        if list.last().is_none_or(|b| b.len() >= self.limit) {
            list.push(BytesMut::with_capacity(4096));
        }
        self.entries += 1;
        list.last_mut().expect("pushed above")
    }
}

/// Decodes the entries of one batch one at a time into `scratch` and hands each to `f`: after
/// the first entries no allocation per entry (servers apply every update they receive this
/// way). Stops at the first malformed entry with its error.
pub(crate) fn each_entry<U: RowUpdate>(
    mut data: &[u8],
    columns: usize,
    scratch: &mut U,
    mut f: impl FnMut(u64, &U),
) -> Result<()> {
    while !data.is_empty() {
        let row = data.take_u64()?;
        scratch.decode_into(&mut data, columns)?;
        f(row, scratch);
    }
    Ok(())
}

/// Server side: batches of each client waiting for that client's next clock message.
pub(crate) struct PendingBatches {
    per_client: Vec<Vec<(u32, Bytes)>>,
}

impl PendingBatches {
    pub fn new(clients: usize) -> Self {
        PendingBatches { per_client: vec![Vec::new(); clients] }
    }
    pub fn push(&mut self, client: usize, table: u32, data: Bytes) {
        self.per_client[client].push((table, data));
    }
    /// The batches `client` sent before its clock message, in arrival order.
    pub fn take(&mut self, client: usize) -> Vec<(u32, Bytes)> {
        std::mem::take(&mut self.per_client[client])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::DenseRow;

    #[test]
    fn encode_ack_and_replay() {
        let mut log = ProcessOplog::<DenseRow<i64>>::default();
        log.add(Age::new(0), 1, DenseRow(vec![1]));
        log.add(Age::new(0), 1, DenseRow(vec![2]));
        log.add(Age::new(1), 2, DenseRow(vec![5]));
        let mut out = BatchOut::new(2, 1 << 20);
        log.encode(Age::new(-1), Age::new(1), |row| (row % 2) as usize, &mut out);
        assert_eq!(out.entries, 2);
        let entries = |data: &[u8]| {
            let mut got = Vec::new();
            each_entry(data, 1, &mut DenseRow(vec![0i64]), |row, u| got.push((row, u.clone()))).map(|()| got)
        };
        assert_eq!(entries(&out.per_server[1][0]).expect("well-formed"), vec![(1, DenseRow(vec![3]))]);
        assert_eq!(log.after(Age::new(-1), 1).count(), 1);
        log.acknowledge(Age::new(1), |row| row % 2 == 1);
        assert_eq!(log.after(Age::new(-1), 1).count(), 0);
        assert_eq!(log.after(Age::new(-1), 2).count(), 1);
        // A truncated batch is an error, not a panic.
        let bytes = &out.per_server[0][0];
        assert!(entries(&bytes[..bytes.len() - 1]).is_err());
    }
}
