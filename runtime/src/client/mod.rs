//! Client library: process cache and oplog, per-thread caches, workers, and the communication task.

pub(crate) mod comm;
pub(crate) mod core;
pub(crate) mod process_table;
pub(crate) mod thread_table;
pub(crate) mod worker;

pub(crate) use self::core::{ClientCmd, Core};
pub(crate) use process_table::ProcessTable;
pub use thread_table::{RowRef, TableHandle};
pub use worker::Worker;
