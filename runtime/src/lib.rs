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
//! of a user's own runtime binary (`--runtime-bin`): its `main` is `ps_job::runtime_main` with the
//! user's apps added to an `AppCatalog`. The iterative driver the built-in apps share (objective,
//! checkpoints, `--target`, outputs) is `ps_apps::driver`.

// The public surface: the flat API below, the modules a user reaches for by name (input readers,
// data generators, snapshot reading, storage, ports), and the process's side of a job that the
// launchers, the AM and the tools speak: the tracker's report lines (`report`, `live`), the stats
// files (`stats`), the job secret (`secret`), the wire format (`wire`) and the log set-up
// (`logging`). The fuzz targets' entry points are behind the `fuzzing` feature.
mod client;
mod clock;
mod config;
mod consistency;
mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod gen;
mod geo;
mod hash;
mod hostfile;
mod huge_pages;
pub mod input;
pub mod live;
mod local_cluster;
pub mod logging;
mod mailbox;
mod net;
mod oplog;
pub mod ports;
mod process;
mod registry;
pub mod report;
mod row;
pub mod secret;
mod server;
pub mod snapshot;
mod state;
pub mod stats;
pub mod storage;
mod wan;
pub mod wire;

pub use client::{RowMut, RowRef, TableHandle, Worker};
pub use config::{
    CheckpointConfig, Consistency, FaultConfig, JobConfig, Placement, PrefetchPolicy, RowInit, RuntimeConfig,
    SnapshotMode, TableConfig, TableKey, WhenBusy,
};
pub use error::{PsError, Result};
pub use geo::{GeoConfig, InterDc, WanMatrix};
pub use hash::{mix64, SeededRng};
pub use hostfile::Hostfile;
pub use huge_pages::{enabled_by as huge_pages_enabled_by, HugePageAlloc};
pub use local_cluster::run_local_cluster;
pub use logging::init as init_logging;
pub use process::{run_app, App, JobShape, OutputPolicy, ProcessSpec, PsContext};
pub use registry::RowTypeRegistry;
pub use row::{prefetch, ColumnAdd, ColumnGet, DenseRow, Element, Row, RowText, RowUpdate, SparseRow};
pub use stats::{ProcessStats, WaitMeter};
pub use wire::WireProtection;
