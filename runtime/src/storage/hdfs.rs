//! `hdfs://` and `viewfs://` storage on the `hdfs-native` client. URLs with an authority name the NameNode (or HA
//! name service) directly; `hdfs:///path` uses the default file system of `HADOOP_CONF_DIR`, as
//! Hadoop tools do. The user comes from `HADOOP_USER_NAME` (Kerberos where hdfs-native supports it).
//! Reads are ranged and streamed in chunks; writes are buffered and closed explicitly, so a failed
//! close is an error rather than a silently short file.

use super::{DirEntry, Entry, OutFile, Storage};
use crate::error::{PsError, Result};
use bytes::Bytes;
use hdfs_native::{Client, ClientBuilder, WriteOptions};
use std::io::{Read, Write};
use std::sync::Arc;

const CHUNK: usize = 4 << 20;
/// A write the NameNode refused because the file's last block has not reached its minimum
/// replication yet is tried again this many times, after 0.4 s, 0.8 s, ... (Hadoop's client:
/// `dfs.client.block.write.locateFollowingBlock.retries` and `.initial.delay.ms`).
const BLOCK_RETRIES: u32 = 5;
const BLOCK_RETRY_DELAY: std::time::Duration = std::time::Duration::from_millis(400);

/// URL schemes served by the hdfs-native client: HDFS, and ViewFs mount tables over HDFS name
/// services (`fs.viewfs.mounttable.<cluster>.link.<path>` in the Hadoop configuration).
pub const SCHEMES: [&str; 2] = ["hdfs", "viewfs"];

/// The runtime of all HDFS I/O in the process. hdfs-native pools DataNode connections across
/// clients, so every client must share one runtime: a connection opened on a runtime that was
/// later shut down would poison the pool. Created on first use, never replaced.
fn io_runtime() -> Result<Arc<tokio::runtime::Runtime>> {
    static RT: std::sync::OnceLock<Arc<tokio::runtime::Runtime>> = std::sync::OnceLock::new();
    if let Some(rt) = RT.get() {
        return Ok(rt.clone());
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("hdfs-io")
        .enable_all()
        .build()
        .map_err(|e| err("starting the I/O runtime", e))?;
    Ok(RT.get_or_init(|| Arc::new(rt)).clone())
}

/// One HDFS file system (one NameNode or name service).
pub struct HdfsFs {
    client: Client,
    rt: Arc<tokio::runtime::Runtime>,
    /// `hdfs://authority` as given (empty for the default FS).
    prefix: String,
}

fn err(what: impl std::fmt::Display, e: impl std::fmt::Display) -> PsError {
    let e = e.to_string();
    match kerberos_hint(&e) {
        Some(hint) => PsError::Io(format!("HDFS {what}: {hint} ({e})")),
        None => PsError::Io(format!("HDFS {what}: {e}")),
    }
}

/// What to do about a Kerberos failure of a secure cluster, in words, before GSSAPI's own.
fn kerberos_hint(e: &str) -> Option<&'static str> {
    let no_cred = e.contains("GSS_S_NO_CRED") || e.contains("No Kerberos credentials");
    // In a YARN container the client tried Kerberos only because no usable token was found.
    if no_cred && std::env::var_os("HADOOP_TOKEN_FILE_LOCATION").is_some() {
        Some(
            "no usable delegation token for this file system (expired, or within its last minute, or not \
             obtained for it): submit with --principal and --keytab so the application master renews the \
             job's tokens, and name extra file systems with --access-filesystems",
        )
    } else if no_cred {
        Some("no Kerberos ticket for this secure cluster: run `kinit` first (or give yarn-submit --principal and --keytab)")
    } else if e.contains("GSS_S_CREDENTIALS_EXPIRED") || e.contains("Ticket expired") {
        Some("the Kerberos ticket has expired: run `kinit` again")
    } else {
        None
    }
}

impl HdfsFs {
    /// Connects for `url` (`hdfs://host:port/...`, `hdfs://nameservice/...` or `hdfs:///...`).
    pub fn connect(url: &str) -> Result<Self> {
        let (scheme, rest) = url
            .split_once("://")
            .filter(|(s, _)| SCHEMES.contains(s))
            .ok_or_else(|| PsError::Config(format!("{url}: not an hdfs:// or viewfs:// URL")))?;
        let authority = rest.split('/').next().unwrap_or("");
        let mut b = ClientBuilder::new();
        // hdfs-native reads $HADOOP_CONF_DIR itself; with only $YARN_CONF_DIR set (which
        // Hadoop's and Spark's tools accept too) hand it that directory's configuration.
        if std::env::var_os("HADOOP_CONF_DIR").is_none() && std::env::var_os("YARN_CONF_DIR").is_some() {
            let conf = ps_hadoop::conf::HadoopConf::from_env()
                .and_then(|c| c.all())
                .map_err(|e| PsError::Config(format!("YARN_CONF_DIR: {e}")))?;
            b = b.with_config(conf);
        }
        if !authority.is_empty() {
            b = b.with_url(format!("{scheme}://{authority}"));
        }
        // `yarn-submit --principal/--keytab` (secure clusters): a keytab login instead of the
        // ticket cache, in every process of the job.
        if let (Ok(p), Ok(k)) =
            (std::env::var(super::KERBEROS_PRINCIPAL_ENV), std::env::var(super::KERBEROS_KEYTAB_ENV))
        {
            b = b.with_kerberos_principal(p).with_kerberos_keytab(k);
        }
        let rt = io_runtime()?;
        let client = {
            let _g = rt.enter();
            b.with_io_runtime(rt.handle().clone()).build().map_err(|e| err(format!("connecting for {url}"), e))?
        };
        Ok(HdfsFs { client, rt, prefix: format!("{scheme}://{authority}") })
    }

    /// The path part of a URL on this file system.
    fn path<'a>(&self, url: &'a str) -> &'a str {
        let rest = url.split_once("://").map_or(url, |(_, r)| r);
        match rest.find('/') {
            Some(i) => &rest[i..],
            None => "/",
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.prefix, path)
    }
}

impl Storage for HdfsFs {
    fn entry(&self, url: &str) -> Result<Entry> {
        let p = self.path(url);
        let st = self.rt.block_on(self.client.get_file_info(p)).map_err(|e| err(format!("input {url}"), e))?;
        if !st.isdir {
            return Ok(Entry::File(st.length as u64));
        }
        let list = self.rt.block_on(self.client.list_status(p, false)).map_err(|e| err(format!("listing {url}"), e))?;
        Ok(Entry::Dir(
            list.into_iter()
                .map(|f| DirEntry {
                    name: f.path.rsplit('/').next().unwrap_or("").to_string(),
                    len: (!f.isdir).then_some(f.length as u64),
                })
                .collect(),
        ))
    }

    fn open(&self, url: &str, start: u64) -> Result<Box<dyn Read + Send>> {
        self.open_range(url, start, u64::MAX)
    }

    fn open_range(&self, url: &str, start: u64, end: u64) -> Result<Box<dyn Read + Send>> {
        let reader =
            self.rt.block_on(self.client.read(self.path(url))).map_err(|e| err(format!("opening {url}"), e))?;
        let len = reader.file_length() as u64;
        Ok(Box::new(RangeReader {
            reader: Arc::new(reader),
            rt: self.rt.clone(),
            pos: start.min(len),
            len,
            ahead_until: end.min(len),
            ahead: None,
            buf: Bytes::new(),
            url: url.to_string(),
        }))
    }

    fn create(&self, url: &str) -> Result<Box<dyn OutFile>> {
        let opts = WriteOptions { overwrite: true, ..WriteOptions::default() };
        let writer = self
            .rt
            .block_on(self.client.create(self.path(url), opts))
            .map_err(|e| err(format!("creating {url}"), e))?;
        Ok(Box::new(HdfsWriter {
            writer: Some(writer),
            rt: self.rt.clone(),
            buf: Vec::with_capacity(CHUNK),
            url: url.to_string(),
        }))
    }

    fn write_file(&self, url: &str, data: &[u8]) -> Result<()> {
        retry_unreplicated(url, BLOCK_RETRY_DELAY, || {
            let mut f = self.create(url)?;
            f.write_all(data).map_err(|e| PsError::io(format!("writing {url}"), e))?;
            f.close()
        })
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        let parent = self.path(to).rsplit_once('/').map(|x| x.0).unwrap_or("");
        if !parent.is_empty() {
            self.rt
                .block_on(self.client.mkdirs(parent, 0o755, true))
                .map_err(|e| err(format!("creating directory {}", self.url(parent)), e))?;
        }
        self.rt
            .block_on(self.client.rename(self.path(from), self.path(to), false))
            .map_err(|e| err(format!("renaming {from} to {to}"), e))
    }

    fn exists(&self, url: &str) -> Result<bool> {
        match self.rt.block_on(self.client.get_file_info(self.path(url))) {
            Ok(_) => Ok(true),
            Err(hdfs_native::HdfsError::FileNotFound(_)) => Ok(false),
            Err(e) => Err(err(format!("checking {url}"), e)),
        }
    }

    fn delete(&self, url: &str) -> Result<()> {
        if !self.exists(url)? {
            return Ok(());
        }
        self.rt
            .block_on(self.client.delete(self.path(url), true))
            .map(|_| ())
            .map_err(|e| err(format!("deleting {url}"), e))
    }

    fn status(&self, url: &str) -> Result<(u64, u64)> {
        let st =
            self.rt.block_on(self.client.get_file_info(self.path(url))).map_err(|e| err(format!("stat {url}"), e))?;
        Ok((st.length as u64, st.modification_time))
    }

    fn set_mode(&self, path: &str, mode: u32) -> Result<()> {
        self.rt
            .block_on(self.client.set_permission(self.path(path), mode))
            .map_err(|e| err(format!("setting the permissions of {path} to {mode:o}"), e))
    }

    fn create_private_dir(&self, dir: &str) -> Result<()> {
        // Missing parents get ordinary permissions: the NameNode gives implicitly created parents
        // the leaf's mode, and a 0700 /user would lock every other user out of their homes.
        let path = self.path(dir).trim_end_matches('/');
        if let Some((parent, _)) = path.rsplit_once('/').filter(|(p, _)| !p.is_empty()) {
            self.rt
                .block_on(self.client.mkdirs(parent, 0o755, true))
                .map_err(|e| err(format!("creating directory {}", self.url(parent)), e))?;
        }
        // mkdirs, then an explicit chmod: the permission given to mkdirs is subject to the umask.
        self.rt
            .block_on(self.client.mkdirs(path, 0o700, false))
            .map_err(|e| err(format!("creating directory {dir}"), e))?;
        self.rt
            .block_on(self.client.set_permission(path, 0o700))
            .map_err(|e| err(format!("making {dir} private (0700)"), e))
    }

    fn children(&self, dir: &str) -> Result<Vec<String>> {
        let mut v: Vec<String> = self
            .rt
            .block_on(self.client.list_status(self.path(dir), false))
            .map_err(|e| err(format!("listing {dir}"), e))?
            .into_iter()
            .map(|f| f.path.rsplit('/').next().unwrap_or("").to_string())
            .collect();
        v.sort();
        Ok(v)
    }
}

/// Streams a byte range of an HDFS file in chunks of ranged reads. While the caller consumes one
/// chunk the next is already being fetched (up to `ahead_until`), so network and parsing overlap.
struct RangeReader {
    reader: Arc<hdfs_native::file::FileReader>,
    rt: Arc<tokio::runtime::Runtime>,
    /// Offset of the next chunk to fetch.
    pos: u64,
    len: u64,
    ahead_until: u64,
    ahead: Option<tokio::task::JoinHandle<hdfs_native::Result<Bytes>>>,
    buf: Bytes,
    url: String,
}

impl RangeReader {
    fn fetch(&self, pos: u64) -> tokio::task::JoinHandle<hdfs_native::Result<Bytes>> {
        let (r, n) = (self.reader.clone(), CHUNK.min((self.len - pos) as usize));
        self.rt.spawn(async move { r.read_range(pos as usize, n).await })
    }
}

impl Drop for RangeReader {
    fn drop(&mut self) {
        if let Some(h) = self.ahead.take() {
            h.abort();
        }
    }
}

impl Read for RangeReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.buf.is_empty() {
            if self.pos >= self.len {
                return Ok(0);
            }
            let h = match self.ahead.take() {
                Some(h) => h,
                None => self.fetch(self.pos),
            };
            let what = |e: &dyn std::fmt::Display| format!("HDFS read of {} at byte {}: {e}", self.url, self.pos);
            self.buf = self
                .rt
                .block_on(h)
                .map_err(|e| std::io::Error::other(what(&e)))?
                .map_err(|e| std::io::Error::other(what(&e)))?;
            self.pos += self.buf.len() as u64;
            if self.buf.is_empty() {
                return Ok(0);
            }
            if self.pos < self.ahead_until {
                self.ahead = Some(self.fetch(self.pos));
            }
        }
        let n = out.len().min(self.buf.len());
        out[..n].copy_from_slice(&self.buf[..n]);
        let _ = self.buf.split_to(n);
        Ok(n)
    }
}

struct HdfsWriter {
    writer: Option<hdfs_native::file::FileWriter>,
    rt: Arc<tokio::runtime::Runtime>,
    buf: Vec<u8>,
    url: String,
}

impl HdfsWriter {
    fn push(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let data = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        let w = self.writer.as_mut().ok_or_else(|| std::io::Error::other("write after close"))?;
        self.rt
            .block_on(w.write_bytes(data))
            .map(|_| ())
            .map_err(|e| std::io::Error::other(format!("HDFS write of {}: {e}", self.url)))
    }
}

impl Write for HdfsWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.push()?;
        }
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.push()
    }
}

impl OutFile for HdfsWriter {
    fn close(mut self: Box<Self>) -> Result<()> {
        self.push().map_err(|e| PsError::Io(e.to_string()))?;
        let mut w = self.writer.take().ok_or_else(|| PsError::Io(format!("HDFS {}: closed twice", self.url)))?;
        self.rt.block_on(w.close()).map_err(|e| err(format!("closing {}", self.url), e))
    }
}

/// Runs `write` (a whole file's write), again while the NameNode answers that the file's last
/// block is not yet replicated (`NotReplicatedYetException`: a DataNode has not reported it
/// yet; its next block cannot be placed). Hadoop's client retries the block request itself;
/// the client library here does not, so the whole write goes again.
fn retry_unreplicated(url: &str, delay: std::time::Duration, mut write: impl FnMut() -> Result<()>) -> Result<()> {
    let mut wait = delay;
    for attempt in 1.. {
        match write() {
            Err(e) if attempt <= BLOCK_RETRIES && e.to_string().contains("NotReplicatedYetException") => {
                log::info!("{url}: the NameNode has not seen the last block replicated yet; writing again in {wait:?}");
                std::thread::sleep(wait);
                wait *= 2;
            }
            other => return other,
        }
    }
    unreachable!("the loop returns")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_refused_for_an_unreplicated_block_is_tried_again_and_nothing_else_is() {
        let refused = "HDFS write of x: RPC error: org.apache.hadoop.hdfs.server.namenode.NotReplicatedYetException: Not replicated yet";
        let mut calls = 0;
        let r = retry_unreplicated("x", std::time::Duration::ZERO, || {
            calls += 1;
            if calls < 3 {
                Err(PsError::Io(refused.into()))
            } else {
                Ok(())
            }
        });
        assert!(r.is_ok() && calls == 3, "{r:?} after {calls}");
        calls = 0;
        let r = retry_unreplicated("x", std::time::Duration::ZERO, || {
            calls += 1;
            Err(PsError::Io(refused.into()))
        });
        assert!(r.is_err() && calls == 1 + BLOCK_RETRIES as usize, "gives up: {calls}");
        calls = 0;
        let r = retry_unreplicated("x", std::time::Duration::ZERO, || {
            calls += 1;
            Err(PsError::Io("HDFS write of x: permission denied".into()))
        });
        assert!(r.is_err() && calls == 1, "other errors are not retried");
    }
}
