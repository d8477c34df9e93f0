//! Errors of the YARN client; each says what was being done and with whom.

/// What can go wrong talking to Hadoop.
#[derive(Debug, Clone, thiserror::Error)]
pub enum YarnError {
    /// Network or file failure; the message says what was being done.
    #[error("{0}")]
    Io(String),
    /// The server answered a call with ERROR (the connection stays usable).
    #[error("{method} failed on {server}: {class}: {message}")]
    Remote { server: String, method: String, class: String, message: String },
    /// The server answered with FATAL and closed the connection.
    #[error("{server} closed the connection: {class}: {message}")]
    Fatal { server: String, class: String, message: String },
    /// Authentication failed or could not be negotiated.
    #[error("SASL with {server}: {message}")]
    Sasl { server: String, message: String },
    /// Bytes that do not decode as what they should be.
    #[error("malformed data: {0}")]
    Codec(String),
    /// Missing or bad configuration; the message names the key or file.
    #[error("configuration error: {0}")]
    Config(String),
}

pub type Result<T, E = YarnError> = std::result::Result<T, E>;

/// A Hadoop file's error is the YARN client's of the same kind (both name the file or key).
impl From<ps_hadoop::HadoopError> for YarnError {
    fn from(e: ps_hadoop::HadoopError) -> Self {
        match e {
            ps_hadoop::HadoopError::Io(m) => YarnError::Io(m),
            ps_hadoop::HadoopError::Codec(m) => YarnError::Codec(m),
            ps_hadoop::HadoopError::Config(m) => YarnError::Config(m),
        }
    }
}

impl YarnError {
    pub fn io(what: impl std::fmt::Display, e: impl std::fmt::Display) -> Self {
        YarnError::Io(format!("{what}: {e}"))
    }
    /// The remote exception's class, if this is a remote error.
    pub fn remote_class(&self) -> Option<&str> {
        match self {
            YarnError::Remote { class, .. } | YarnError::Fatal { class, .. } => Some(class),
            _ => None,
        }
    }
}
