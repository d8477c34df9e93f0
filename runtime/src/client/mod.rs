//! Client library (LazyTable §3.2.2): the process cache and process oplog of each table
//! (`process_table`), per-thread caches (`thread_table`), the worker API (`worker`), and the
//! communication task (`comm`) that packs requests and updates for the servers and installs what
//! they send back. The process-wide pieces only the client uses live here too: the table
//! registry, the clock tracker and local barrier (`tracker`), and the ESSP push clocks (`push`).

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
