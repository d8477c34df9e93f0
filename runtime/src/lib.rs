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
//!   makes every earlier update visible to every later read (under ASP, in every data center's
//!   copy: the barrier syncs them).
//!
//! ## Using it
//! Implement [`App`] (`initialize` creates tables, `run_worker` is the thread body) and run it with
//! [`run_app`], or drive [`PsContext`] directly. `yarn-submit` launches jobs of built-in apps, and
//! of a user's own runtime binary (`--runtime-bin`): its `main` is [`runtime_main`] with the
//! user's apps added to an [`AppCatalog`].

// The public surface: the flat API below plus five modules a user reaches for by name (built-in
// apps, input readers, data generators, snapshot reading, storage). Everything else is private.
// `rendezvous`, `tracking`, `internal` and `fuzzing` are hidden: they exist for this workspace's other
// binaries (the AM speaks the rendezvous protocol; it and yarn-submit serve the job's page; yarn-submit needs a secret and stats merging;
// the fuzz crate calls the harnesses) and are not a user API.
pub mod apps;
mod catalog;
mod cli;
mod client;
mod clock;
mod config;
mod consistency;
mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod gen;
mod geo;
mod hash;
mod hostfile;
mod huge_pages;
pub mod input;
#[doc(hidden)]
pub mod internal;
mod launch;
mod live;
mod local_cluster;
mod logging;
mod mailbox;
mod net;
mod oplog;
pub mod ports;
mod process;
mod registry;
#[doc(hidden)]
pub mod rendezvous;
mod report;
mod restart_log;
mod restarts;
mod row;
mod secret;
mod server;
pub mod snapshot;
mod state;
mod stats;
pub mod storage;
#[doc(hidden)]
pub mod tracking;
mod wan;
mod wire;

pub use catalog::{AppCatalog, BuildApp};
pub use cli::runtime_main;
pub use client::{RowMut, RowRef, TableHandle, Worker};
pub use config::{
    CheckpointConfig, Consistency, FaultConfig, JobConfig, Placement, PrefetchPolicy, RowInit, RuntimeConfig,
    SnapshotMode, TableConfig, TableKey,
};
pub use error::{PsError, Result};
pub use geo::{GeoConfig, InterDc, WanMatrix};
pub use hash::SeededRng;
pub use hostfile::Hostfile;
pub use huge_pages::{enabled_by as huge_pages_enabled_by, HugePageAlloc};
pub use launch::{run_job_process, run_job_process_with};
pub use local_cluster::run_local_cluster;
pub use logging::init as init_logging;
pub use process::{run_app, App, JobShape, OutputPolicy, ProcessSpec, PsContext};
pub use registry::RowTypeRegistry;
pub use row::{ColumnAdd, ColumnGet, DenseRow, Element, Row, RowText, RowUpdate, SparseRow};
pub use stats::ProcessStats;
pub use wire::WireProtection;
