//! ESSP on the client: per server, the data age every subscribed row of that server has reached
//! (its last completed push). A subscribed row is as fresh as its server's push clock even when it
//! did not change, so reading it needs no request.

use crate::clock::Age;
use std::sync::atomic::{AtomicI64, Ordering};

pub(crate) struct PushClocks {
    per_server: Vec<AtomicI64>,
}

impl PushClocks {
    pub fn new(servers: usize) -> Self {
        PushClocks { per_server: (0..servers).map(|_| AtomicI64::new(Age::NONE.get())).collect() }
    }

    /// Every subscribed row of `server` holds at least this data age.
    #[inline]
    pub fn of(&self, server: usize) -> Age {
        Age::new(self.per_server[server].load(Ordering::Acquire))
    }

    /// `server` finished a push of data age `age`.
    pub fn advance(&self, server: usize, age: Age) {
        self.per_server[server].fetch_max(age.get(), Ordering::AcqRel);
    }
}
