//! # ps-yarn: the YARN protocols, spoken from Rust
//!
//! A library with no CLI concerns, used by the application master and `yarn-submit`:
//! - [`amrm`] and [`nm`]: the ApplicationMasterProtocol and ContainerManagementProtocol clients,
//!   over a private Hadoop IPC client (`hrpc` preamble, length frames, varint-delimited headers,
//!   call ids with out-of-order replies, ERROR vs FATAL) with SASL TOKEN / DIGEST-MD5;
//! - [`appclient`]: `ApplicationClientProtocol` over IPC (submission, reports, kill, listing) as
//!   the submitting user, the default; [`rest`]: the same through the RM's REST API;
//!   [`submit`]: what both share (the submission, the report, the [`submit::ResourceManager`] trait);
//! - [`credentials`] and [`conf`]: the token file and `*-site.xml` lookup, from `ps-hadoop` (which
//!   the parameter-server library links without this crate's network stack);
//! - [`proto`]: the RPC and YARN records needed, hand-written as prost messages with Hadoop's
//!   field numbers (no generated or copied `.proto` files);

// Public: the clients of YARN's protocols and their records. Private: the IPC/SASL machinery they
// are built on (reached only through `amrm` and `nm`).
pub mod amrm;
pub mod appclient;
mod error;
pub mod failover;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod gssapi;
pub mod hdfs_token;
mod ipc;
pub mod nm;
pub mod proto;
pub mod rest;
mod sasl;
mod sasl_layer;
pub mod submit;

pub use credentials::{Credentials, Token};
pub use error::{Result, YarnError};
pub use ps_hadoop::{conf, credentials};
