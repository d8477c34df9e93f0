//! Storage by URL, for everything the runtime reads and writes: inputs, outputs, snapshots,
//! stats and YARN staging. `file://` URLs and plain paths are local files ([`LocalFs`]),
//! `hdfs://` and `viewfs://` URLs go to HDFS ([`HdfsFs`]). A directory counts as one input made of its part files.
//! Whole files that readers must never see half-written go through [`write_atomic`].

mod hdfs;
mod listing;
mod local;

pub use hdfs::HdfsFs;
pub use local::LocalFs;

/// Secure HDFS: when both are set (by `yarn-submit --principal/--keytab`), every HDFS client logs
/// in as this principal from this keytab instead of using the Kerberos ticket cache.
pub const KERBEROS_PRINCIPAL_ENV: &str = "PS_KERBEROS_PRINCIPAL";
pub const KERBEROS_KEYTAB_ENV: &str = "PS_KERBEROS_KEYTAB";

use crate::error::{PsError, Result};
use std::io::Read;
use std::sync::Arc;

/// What a URL names.
pub enum Entry {
    /// A file and its length.
    File(u64),
    /// A directory and what it holds, in any order.
    Dir(Vec<DirEntry>),
}

/// One name in a directory: a file (`len` its length) or a directory (`len` None).
pub struct DirEntry {
    pub name: String,
    pub len: Option<u64>,
}

/// A file system holding inputs and outputs.
pub trait Storage: Send + Sync {
    /// What `url` is (an error if it does not exist).
    fn entry(&self, url: &str) -> Result<Entry>;
    /// The files of an input, sorted, with sizes: the file itself, the visible files of a
    /// directory at any depth (names not starting with `_` or `.`, as Hadoop writes `_SUCCESS`
    /// beside `part-*`), or those of every path a glob pattern matches (see `listing`).
    fn list(&self, url: &str) -> Result<Vec<(String, u64)>> {
        listing::input_files(self, url)
    }
    /// Reads from byte `start` of `path` to its end.
    fn open(&self, path: &str, start: u64) -> Result<Box<dyn Read + Send>>;
    /// Like `open`, with a hint that the bytes up to `end` will be read: an implementation may read
    /// ahead up to there (reading on past `end` still works, just without read-ahead).
    fn open_range(&self, path: &str, start: u64, _end: u64) -> Result<Box<dyn Read + Send>> {
        self.open(path, start)
    }
    /// Reads `len` bytes at `start` (short at end of file).
    fn read_at(&self, path: &str, start: u64, len: usize) -> Result<Vec<u8>> {
        read_via_open(self.open(path, start)?, path, start, len)
    }
    /// Creates (truncates) a file for writing, creating parent directories. The data is only
    /// guaranteed to be stored once `close` returned Ok.
    fn create(&self, path: &str) -> Result<Box<dyn OutFile>>;
    /// Writes `data` as the whole file `path` (created or truncated) and closes it. Storage
    /// that can refuse a write for a while and then take it (HDFS) tries again.
    fn write_file(&self, path: &str, data: &[u8]) -> Result<()> {
        let mut f = self.create(path)?;
        std::io::Write::write_all(&mut f, data).map_err(|e| PsError::io(format!("writing {path}"), e))?;
        f.close()
    }
    /// Renames a file or directory (the commit step of every output).
    fn rename(&self, from: &str, to: &str) -> Result<()>;
    fn exists(&self, path: &str) -> Result<bool>;
    /// Deletes a file or a directory tree (missing paths are fine).
    fn delete(&self, path: &str) -> Result<()>;
    /// Files directly inside a directory (names only), sorted.
    fn children(&self, dir: &str) -> Result<Vec<String>>;
    /// Creates `dir` (and missing parents) and makes it accessible to its owner only (0700,
    /// set explicitly so no umask loosens it). For directories holding a job's private files.
    fn create_private_dir(&self, dir: &str) -> Result<()>;
    /// Sets a file's permission bits (`0o400`: readable by its owner only).
    fn set_mode(&self, path: &str, mode: u32) -> Result<()>;
    /// Length in bytes and modification time in ms since the epoch (what YARN's localizer checks).
    fn status(&self, path: &str) -> Result<(u64, u64)>;
    /// 1-based number of the line holding byte `offset` (for error messages only).
    fn line_number(&self, path: &str, offset: u64) -> Result<u64> {
        let mut r = self.open(path, 0)?.take(offset);
        let mut buf = vec![0u8; 1 << 16];
        let mut lines = 1;
        loop {
            let n = r.read(&mut buf).map_err(|e| PsError::io(format!("reading {path}"), e))?;
            if n == 0 {
                return Ok(lines);
            }
            lines += buf[..n].iter().filter(|b| **b == b'\n').count() as u64;
        }
    }
}

/// A file being written.
pub trait OutFile: std::io::Write + Send {
    /// Flushes and closes the file; errors here mean the file is incomplete.
    fn close(self: Box<Self>) -> Result<()>;
}

/// The storage serving `url` (local for plain paths and `file://`).
pub fn storage_for(url: &str) -> Result<Arc<dyn Storage>> {
    if url.starts_with("file://") || !url.contains("://") {
        Ok(Arc::new(LocalFs))
    } else if url.starts_with("hdfs://") || url.starts_with("viewfs://") {
        Ok(Arc::new(HdfsFs::connect(url)?))
    } else {
        let scheme = url.split("://").next().unwrap_or("");
        Err(PsError::Config(format!("{url}: storage scheme '{scheme}' is not supported yet (use a local path)")))
    }
}

/// `len` bytes (fewer at the end) from a reader opened at byte `start` of `path`.
pub fn read_via_open(r: Box<dyn Read + Send>, path: &str, start: u64, len: usize) -> Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(len);
    r.take(len as u64).read_to_end(&mut buf).map_err(|e| PsError::io(format!("reading {path} at byte {start}"), e))?;
    Ok(buf)
}

/// Copies a small file (read whole) from one URL to another, atomically at the destination.
pub fn copy(from: &str, to: &str, what: &str) -> Result<()> {
    let mut data = Vec::new();
    storage_for(from)?
        .open(from, 0)?
        .read_to_end(&mut data)
        .map_err(|e| PsError::io(format!("reading {what} {from}"), e))?;
    write_atomic(storage_for(to)?.as_ref(), to, &data, what)
}

/// Writes `data` to `path` under a temporary name (`<path>.tmp`) and then renames it, so a reader
/// sees the whole file or none of it (the rename is atomic on local file systems and on HDFS).
/// `what` names the file in errors, e.g. "job stats".
pub fn write_atomic(st: &dyn Storage, path: &str, data: &[u8], what: &str) -> Result<()> {
    write_staged(st, path, data, what)?;
    commit_staged(st, path)
}

/// The first half of [`write_atomic`]: `data` written and closed under `path`'s temporary name,
/// where no reader of `path` sees it. Slow on HDFS (a close waits for the NameNode to hear of
/// the block), so it can run while other files are still being written.
pub fn write_staged(st: &dyn Storage, path: &str, data: &[u8], what: &str) -> Result<()> {
    let tmp = format!("{path}.tmp");
    let fail = |op: &str, e: &dyn std::fmt::Display| PsError::Io(format!("{op} {what} {tmp}: {e}"));
    st.write_file(&tmp, data).map_err(|e| fail("writing", &e))
}

/// The second half of [`write_atomic`]: the staged file appears under `path`, whole (one
/// rename, a single NameNode call on HDFS).
pub fn commit_staged(st: &dyn Storage, path: &str) -> Result<()> {
    let tmp = format!("{path}.tmp");
    if st.rename(&tmp, path).is_ok() {
        return Ok(());
    }
    // HDFS refuses to rename onto an existing file (a local rename replaces it atomically):
    // replacing is what the caller asked for.
    st.delete(path)?;
    st.rename(&tmp, path)
}
