//! Errors of reading Hadoop's files; each names the file or key.

/// What can go wrong reading a Hadoop configuration or credentials file.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HadoopError {
    /// A file could not be read; the message says which and what was being done.
    #[error("{0}")]
    Io(String),
    /// Bytes that do not decode as what they should be.
    #[error("malformed data: {0}")]
    Codec(String),
    /// Missing or bad configuration; the message names the key or file.
    #[error("configuration error: {0}")]
    Config(String),
}

pub type Result<T, E = HadoopError> = std::result::Result<T, E>;

impl HadoopError {
    pub fn io(what: impl std::fmt::Display, e: impl std::fmt::Display) -> Self {
        HadoopError::Io(format!("{what}: {e}"))
    }
}
