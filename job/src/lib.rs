//! # ps-job: the machinery of a parameter-server job
//!
//! What runs around the parameter server ([`ps_runtime`]) and its apps ([`ps_apps`]) so that a
//! job starts, is watched and restarts the same way under every launcher:
//!
//! * [`runtime_main`]: the command line of a runtime binary (`ps-runtime`, or a user's own with
//!   more apps in its [`AppCatalog`]): `run` one process of a job, `describe` an app, `gen`
//!   data, read `snapshot`s.
//! * [`launch`]: what `run` does in a process (job file, rendezvous, restart attempt, stats).
//! * [`rendezvous`]: the protocol between a process and the job's tracker (the YARN AM, or
//!   `yarn-submit` for local jobs): start-up without fixed ports, then progress lines.
//! * [`tracking`]: the job as its tracker sees it, `status.json`, the page and `report.html`.
//! * [`driver`]: the one job driver over a [`driver::Launcher`] (local processes or YARN
//!   containers), and [`restarts`]: the one restart policy it follows, with its log.
//! * [`token_push`]: fresh delegation tokens from the AM to the processes of a long secure job.

mod cli;
pub mod driver;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod launch;
pub mod rendezvous;
pub mod restart_log;
pub mod restarts;
pub mod token_push;
pub mod tracking;

pub use cli::runtime_main;
pub use launch::{run_job_process, run_job_process_with};
pub use ps_apps::{AppCatalog, BuildApp};
