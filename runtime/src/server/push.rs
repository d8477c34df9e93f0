//! ESSP on the server: which clients subscribed to which rows, and which subscribed rows changed
//! since the last push. When the server's clock moves, the changed rows go to their subscribers
//! and every subscriber learns the new clock (which freshens its unchanged subscribed rows too).

use rustc_hash::{FxHashMap, FxHashSet};

pub(crate) struct Subscriptions {
    subs: FxHashMap<(u32, u64), Vec<usize>>,
    /// Per client: subscribed to anything (gets the end-of-push message).
    has_subs: Vec<bool>,
    dirty: FxHashSet<(u32, u64)>,
}

impl Subscriptions {
    pub fn new(clients: usize) -> Self {
        Subscriptions { subs: FxHashMap::default(), has_subs: vec![false; clients], dirty: FxHashSet::default() }
    }

    pub fn subscribe(&mut self, client: usize, table: u32, row: u64) {
        let s = self.subs.entry((table, row)).or_default();
        if !s.contains(&client) {
            s.push(client);
        }
        self.has_subs[client] = true;
    }

    /// `row` was updated: push it next time if anybody subscribed to it.
    #[inline]
    pub fn touched(&mut self, table: u32, row: u64) {
        if self.subs.contains_key(&(table, row)) {
            self.dirty.insert((table, row));
        }
    }

    /// The rows changed since the last call, with their subscribers.
    pub fn take_changed(&mut self) -> Vec<((u32, u64), &[usize])> {
        let dirty = std::mem::take(&mut self.dirty);
        dirty.into_iter().map(|k| (k, self.subs.get(&k).map(|v| v.as_slice()).unwrap_or(&[]))).collect()
    }

    pub fn is_subscribed(&self, table: u32, row: u64) -> bool {
        self.subs.contains_key(&(table, row))
    }

    pub fn has_subscriptions(&self, client: usize) -> bool {
        self.has_subs[client]
    }
}
