//! Built-in applications, written only against the public API.

pub mod baseline;
pub mod common;
pub mod demo;
pub mod lda;
pub mod lda_sampler;
pub mod mf;
pub mod pagerank;

use crate::error::{PsError, Result};
use crate::App;

/// Names of the built-in applications.
pub const NAMES: &[&str] = &["demo", "mf", "lda", "pagerank"];

/// Builds the application `name` from its command-line arguments.
pub fn build(name: &str, args: &[String]) -> Result<Box<dyn App>> {
    match name {
        "demo" => Ok(Box::new(demo::Demo::from_args(args)?)),
        "mf" => Ok(Box::new(mf::Mf::from_args(args)?)),
        "lda" => Ok(Box::new(lda::Lda::from_args(args)?)),
        "pagerank" => Ok(Box::new(pagerank::PageRank::from_args(args)?)),
        other => Err(PsError::Config(format!("app: unknown application '{other}' (known: {})", NAMES.join(", ")))),
    }
}
