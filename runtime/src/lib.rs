//! # ps-runtime: a parameter server for iterative machine learning
//!
//! Tables of rows shared by worker threads on many processes, read with bounded staleness
//! (BSP, A-BSP, SSP, SSP-push/ESSP, async) as in LazyTable/Bösen, ESSP and JBösen.
//!
//! ## Model and guarantee
//! A job has `N` processes (one hostfile line each); every process runs `T` worker threads, a
//! client library and a server shard holding a slice of every table's rows.
//!
//! * **Clocks.** Each worker thread starts at clock 0; [`Worker::clock`] ends the current clock.
//!   Updates made during clock `k` belong to clock `k`.
//! * **Data age.** A row of data age `a` holds every update of every thread from clocks `0..=a`.
//! * **Guarantee.** [`TableHandle::get`] at clock `c` with staleness `s` returns data age
//!   `>= c - s - 1`, plus all of the calling thread's own updates (read-my-updates). With `s = 0`
//!   (BSP) a read sees exactly the previous clocks of everybody. Observed staleness (data age
//!   minus reader clock) is therefore in `[-s-1, -1]`.
//! * **Barrier.** [`Worker::global_barrier`] ends the clock, waits for every thread of the job and
//!   makes every earlier update visible to every later read.
//!
//! ## Using it
//! Implement [`App`] (`initialize` creates tables, `run_worker` is the thread body) and run it with
//! [`run_app`], or drive [`PsContext`] directly. `yarn-submit` launches jobs of built-in apps.

pub mod apps;
mod client;
mod clock;
pub mod config;
mod consistency;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod gen;
mod hash;
pub mod hostfile;
pub mod input;
pub mod local_cluster;
pub mod logging;
mod net;
mod oplog;
mod process;
mod registry;
pub mod rendezvous;
pub mod row;
pub mod secret;
mod server;
pub mod snapshot;
mod state;
pub mod stats;
pub mod storage;
pub mod wire;

pub use client::{RowRef, TableHandle, Worker};
pub use config::{Consistency, JobConfig, Placement, PrefetchPolicy, RuntimeConfig, TableConfig};
pub use error::{PsError, Result};
pub use hostfile::Hostfile;
pub use process::{run_app, App, ProcessSpec, PsContext};
pub use registry::RowTypeRegistry;
pub use row::{ColumnAdd, ColumnGet, DenseRow, Element, Row, RowText, RowUpdate, SparseRow};
pub use stats::ProcessStats;
