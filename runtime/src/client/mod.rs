//! Client library (LazyTable §3.2.2): the process cache and process oplog of each table
//! (`process_table`), per-thread caches (`thread_table`), the worker API (`worker`), and the
//! communication task (`comm`) that packs requests and updates for the servers and installs what
//! they send back. The process-wide pieces only the client uses live here too: the table
//! registry, the clock tracker and local barrier (`tracker`), and the ESSP push clocks (`push`).
//!
//! ## One `get`, from cache miss to reply
//!
//! 1. `TableHandle::get(row)` at clock `c`: thread-cache lookup (`client/slots.rs`: an array slot for
//!    small dense ids, an FxHashMap probe for the rest). Hit if the copy was
//!    checked this clock and its age `>= c - s - 1` → return (no lock, no allocation). Loops that
//!    know their next rows call `TableHandle::hint(row)` a few iterations ahead (a CPU prefetch of the
//!    row's array slot, and of the values of the row hinted before it; nothing else), since a hit on
//!    a row in no predictable order waits for memory.
//! 2. Miss: lock the row's process-cache shard. If the cached view is fresh enough (for subscribed rows
//!    the age is `max(row age, push clock of its server)`), copy it into the thread cache (only if its
//!    version changed), re-apply this thread's pending updates, return.
//! 3. Otherwise, unless a fetch with a sufficient `min_age` is already in flight (squashing) or the row
//!    is subscribed (a push will come), send `ClientCmd::Fetch` and wait on the shard's condvar.
//! 4. The client task packs queued fetches per server into one `Fetch` message.
//! 5. The server replies at once if `global >= min_age` (registering an ESSP subscription), else parks
//!    the request until its clock advances. The reply carries `age = global` and `rc = vc[p]`.
//! 6. The client task decodes the row, re-applies this process's oplog entries with clock `> rc`
//!    (read-my-updates), installs it with its age, and notifies the shard; step 2 then succeeds.
//!
//! Updates: `inc` goes to the thread's oplog entry and cached copy; at `clock()` the thread merges it
//! into the process oplog (per clock, coalesced) and process cache view. Rows whose type has
//! `Row::DIFFERENCE` (dense and sparse rows) and that were read this clock take a cheaper path: the
//! first write copies the cached row as the clock's base, `inc` (or a change through
//! `TableHandle::get_mut`, dense rows) writes the cached row only, and `clock()` sends `row - base`;
//! one write per update instead of two, which is MF's and LDA's inner loop. A miss that replaces the
//! cached row first folds `row - base` into the pending delta. Oplog entries stay until the
//! owning server's `ClockAck` covers their clock.

pub(crate) mod comm;
pub(crate) mod process_table;
mod push;
mod slots;
mod tables;
pub(crate) mod thread_table;
mod tracker;
pub(crate) mod worker;

pub(crate) use process_table::{ProcessTable, ProcessTableOps};
pub(crate) use push::PushClocks;
pub(crate) use tables::{TableRegistry, TableSlot};
pub use thread_table::{RowMut, RowRef, TableHandle};
pub(crate) use tracker::{ClockTracker, LocalBarrier};
pub use worker::Worker;

use crate::snapshot::Snapshots;
use crate::state::Shared;
use std::sync::Arc;

/// The client side of one process, shared by its worker threads and its communication task.
pub(crate) struct Client {
    pub shared: Arc<Shared>,
    pub tables: TableRegistry,
    pub tracker: ClockTracker,
    pub barrier: Arc<LocalBarrier>,
    pub push: Arc<PushClocks>,
    /// Snapshot and checkpoint support (`checkpoint.url` set).
    pub snaps: Option<Arc<Snapshots>>,
}

impl Client {
    pub fn new(shared: Arc<Shared>, snaps: Option<Arc<Snapshots>>) -> Arc<Self> {
        let barrier = Arc::new(LocalBarrier::new(shared.cfg.threads));
        let w: Arc<dyn crate::state::Wake> = barrier.clone();
        shared.failure.on_failure(Arc::downgrade(&w));
        Arc::new(Client {
            tables: TableRegistry::default(),
            tracker: ClockTracker::new(shared.cfg.threads, shared.start_clock),
            push: Arc::new(PushClocks::new(shared.nprocs)),
            barrier,
            snaps,
            shared,
        })
    }
}
