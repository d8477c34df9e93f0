//! # ps-hadoop: what a Hadoop process finds on its host
//!
//! The small part of Hadoop that the parameter-server library needs as well as the YARN clients,
//! kept apart so that linking it pulls in no network, TLS or GSSAPI code:
//! - [`conf`]: `core-site.xml` / `hdfs-site.xml` / `yarn-site.xml` under `HADOOP_CONF_DIR`, with
//!   Hadoop's variable expansion and `final` properties;
//! - [`credentials`]: the container token file (`HDTS` versions 0 and 1 read, version 0
//!   written), with [`tokens`], the records it holds;
//! - [`filesystems`]: the NameNodes behind a file system URL (HA nameservices, ViewFs mount
//!   tables), the sources of a secure job's delegation tokens;
//! - [`container`]: the application and attempt of a YARN container id;
//! - [`vint`]: Hadoop's `WritableUtils` integers and `Text`, the encoding of the token file and
//!   of delegation-token identifiers.
//!
//! `ps-yarn` re-exports `conf` and `credentials` under its own name.

pub mod conf;
pub mod container;
pub mod credentials;
mod error;
pub mod filesystems;
pub mod tokens;
pub mod vint;

pub use credentials::{Credentials, Token};
pub use error::{HadoopError, Result};
