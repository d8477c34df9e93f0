//! Error type shared by the runtime. Every failure that crosses a process boundary or comes from
//! input names what was being done and with whom, so that an operator can act on it.

use std::fmt;

/// Errors returned by the parameter-server API.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PsError {
    /// A peer process died, closed its connection or stopped answering.
    #[error("lost process {pid} ({addr}): {reason}")]
    PeerLost { pid: usize, addr: String, reason: String },
    /// A message or stored blob could not be decoded.
    #[error("malformed data: {0}")]
    Codec(String),
    /// Bad configuration; the message names the key.
    #[error("configuration error: {0}")]
    Config(String),
    /// I/O failure; the message says what was being done.
    #[error("{0}")]
    Io(String),
    /// An operating-system I/O error, kept as it came (`io_error`, `io_kind`), with what was
    /// being done. Its text is printed with the message and it is not also a `source()`, so a
    /// reporter that walks an error's causes prints it once.
    #[error("{what}: {error}")]
    Os { what: String, error: std::sync::Arc<std::io::Error> },
    /// The job is shutting down or has failed elsewhere.
    #[error("job aborted: {0}")]
    Aborted(String),
    /// Misuse of the API (wrong row type, unknown table, ...).
    #[error("usage error: {0}")]
    Usage(String),
    /// A consistency check of an application failed (used by the demo app and tests).
    #[error("consistency violation: {0}")]
    Violation(String),
    /// A thread or task of the runtime panicked; the message says which and why.
    #[error("{0}")]
    Panicked(String),
}

pub type Result<T, E = PsError> = std::result::Result<T, E>;

impl PsError {
    /// An I/O error of the operating system, kept, with a description of the operation that
    /// failed.
    pub fn io(what: impl fmt::Display, err: std::io::Error) -> Self {
        PsError::Os { what: what.to_string(), error: std::sync::Arc::new(err) }
    }
    /// A failure of another kind of I/O (a remote file system's client, a codec), as text.
    pub fn io_msg(what: impl fmt::Display, err: impl fmt::Display) -> Self {
        PsError::Io(format!("{what}: {err}"))
    }
    /// The operating system's error behind this one, if any.
    pub fn io_error(&self) -> Option<&std::io::Error> {
        match self {
            PsError::Os { error, .. } => Some(error),
            _ => None,
        }
    }
    /// Its kind (`NotFound`, `PermissionDenied`, ...), for callers that act on it.
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        self.io_error().map(|e| e.kind())
    }
    pub fn codec(what: impl fmt::Display) -> Self {
        PsError::Codec(what.to_string())
    }
    /// The peer a failure report (a [`PsError::PeerLost`]'s text, possibly behind what the
    /// reporter prefixed) blames, if it names one. A launcher uses it to report the peer's own
    /// failure, the cause, rather than the echo of every process that lost it.
    pub fn lost_peer_in(report: &str) -> Option<usize> {
        let (_, rest) = report.split_once("lost process ")?;
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        rest[..digits].parse().ok()
    }
}

/// The message a panic was raised with (`panic!("...")` gives a `&str` or a `String`).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(a panic without a message)".to_string())
}

/// Runs `f`, turning a panic into [`PsError::Panicked`] naming `what` (a thread or task) and the
/// panic message. One panicking thread must fail the job at once: a thread that dies silently
/// never finishes its clock, and every other thread would wait for it forever.
pub fn catch_panic<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|p| Err(PsError::Panicked(format!("{what} panicked: {}", panic_message(p.as_ref())))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    /// An OS error keeps its kind for callers and prints once: in the message, not again as a
    /// source.
    #[test]
    fn os_errors_keep_their_kind_and_print_once() {
        let e = std::fs::read("/no/such/file").map_err(|e| PsError::io("reading /no/such/file", e)).unwrap_err();
        assert_eq!(e.io_kind(), Some(std::io::ErrorKind::NotFound));
        assert!(e.to_string().starts_with("reading /no/such/file: No such file"), "{e}");
        assert!(e.source().is_none());
        let text = PsError::io_msg("reading hdfs://nn/x", "connection refused");
        assert_eq!((text.to_string().as_str(), text.io_kind()), ("reading hdfs://nn/x: connection refused", None));
    }

    /// The peer named by a lost-peer failure is found in its text, also behind a prefix.
    #[test]
    fn a_lost_peer_is_read_back_from_its_message() {
        let e = PsError::PeerLost { pid: 12, addr: "10.0.0.3:4001".into(), reason: "Broken pipe".into() };
        assert_eq!(PsError::lost_peer_in(&e.to_string()), Some(12));
        assert_eq!(PsError::lost_peer_in(&format!("process 0 failed: run: {e}")), Some(12));
        assert_eq!(PsError::lost_peer_in("process 0 failed: bad line 3 of part-0"), None);
        assert_eq!(PsError::lost_peer_in("lost process x"), None);
    }
}
