//! On-disk formats of snapshots, version 1. All integers are little-endian.
//!
//! **Table shard** (`clock-<t>/server-<s>.table-<id>`): one table's rows held by one server.
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `PSSNAP\r\n` |
//! | 8 | 4 | format version (1) |
//! | 12 | 4 | flags: bit 0 approximate, bit 1 taken at the end of the job |
//! | 16 | 8 | clock `t`: the shard holds the updates of clocks `0..t` (the first `t` clocks) |
//! | 24 | 4 | server (process) id |
//! | 28 | 4 | table id |
//! | 32 | 8 | columns (the table's configured width) |
//! | 40 | 8 | row count |
//! | 48 | 8 | payload length in bytes |
//! | 56 | 4 | CRC-32C (Castagnoli, as HDFS uses) of the payload |
//! | 60 | 4 | length `n` of the row type name |
//! | 64 | n | row type name (UTF-8), e.g. `dense_f32` |
//!
//! The payload follows: for each row, sorted by id, `row id u64`, `length u32` and the row's own
//! encoding (`Row::encode`) of that length.
//!
//! **Worker state** (`clock-<t>/worker-<g>.state`): magic `PSSTATE\n`, version u32, reserved u32,
//! clock i64, global worker thread id u32, payload length u64, CRC-32C u32, then the payload the
//! application saved (opaque to the runtime).
//!
//! The manifest (`clock-<t>/MANIFEST.json`) is written last, under a temporary name then renamed;
//! a `clock-<t>` directory without it is incomplete and never read.

use crate::config::TableConfig;
use crate::error::{PsError, Result};
use crate::row::ReadExt;
use serde::{Deserialize, Serialize};

pub const SHARD_MAGIC: &[u8; 8] = b"PSSNAP\r\n";
pub const STATE_MAGIC: &[u8; 8] = b"PSSTATE\n";
pub const FORMAT_VERSION: u32 = 1;
pub const FLAG_APPROX: u32 = 1;
pub const FLAG_FINAL: u32 = 2;
pub const MANIFEST: &str = "MANIFEST.json";

const CASTAGNOLI: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);

/// CRC-32C (Castagnoli) of `data`: the checksum of every snapshot file, as HDFS uses for blocks.
pub fn crc32c(data: &[u8]) -> u32 {
    CASTAGNOLI.checksum(data)
}

/// Header of a table shard file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardHeader {
    pub flags: u32,
    pub clock: i64,
    pub server: u32,
    pub table: u32,
    pub columns: u64,
    pub rows: u64,
    pub payload_len: u64,
    pub crc: u32,
    pub row_type: String,
}

impl ShardHeader {
    pub fn is_approx(&self) -> bool {
        self.flags & FLAG_APPROX != 0
    }
    pub fn is_final(&self) -> bool {
        self.flags & FLAG_FINAL != 0
    }

    /// The complete file: header then `payload`.
    pub fn file_bytes(&self, payload: &[u8]) -> Vec<u8> {
        let mut b = Vec::with_capacity(64 + self.row_type.len() + payload.len());
        b.extend_from_slice(SHARD_MAGIC);
        b.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        b.extend_from_slice(&self.flags.to_le_bytes());
        b.extend_from_slice(&self.clock.to_le_bytes());
        b.extend_from_slice(&self.server.to_le_bytes());
        b.extend_from_slice(&self.table.to_le_bytes());
        b.extend_from_slice(&self.columns.to_le_bytes());
        b.extend_from_slice(&self.rows.to_le_bytes());
        b.extend_from_slice(&self.payload_len.to_le_bytes());
        b.extend_from_slice(&self.crc.to_le_bytes());
        b.extend_from_slice(&(self.row_type.len() as u32).to_le_bytes());
        b.extend_from_slice(self.row_type.as_bytes());
        b.extend_from_slice(payload);
        b
    }

    /// Parses a shard file and checks its length and checksum; returns the header and payload.
    /// `what` names the file in errors.
    pub fn parse<'a>(bytes: &'a [u8], what: &str) -> Result<(ShardHeader, &'a [u8])> {
        let bad = |why: String| PsError::codec(format!("snapshot file {what}: {why}"));
        let mut s = bytes;
        let magic = s.take_bytes(8).map_err(|_| bad("too short for a header".into()))?;
        if magic != SHARD_MAGIC {
            return Err(bad("not a table snapshot (bad magic)".into()));
        }
        let h = (|| -> Result<ShardHeader> {
            let version = s.take_u32()?;
            if version != FORMAT_VERSION {
                return Err(PsError::codec(format!("format version {version}, this build reads {FORMAT_VERSION}")));
            }
            let flags = s.take_u32()?;
            let clock = s.take_i64()?;
            let server = s.take_u32()?;
            let table = s.take_u32()?;
            let columns = s.take_u64()?;
            let rows = s.take_u64()?;
            let payload_len = s.take_u64()?;
            let crc = s.take_u32()?;
            let n = s.take_u32()? as usize;
            let row_type = String::from_utf8(s.take_bytes(n)?.to_vec())
                .map_err(|_| PsError::codec("row type name is not UTF-8"))?;
            Ok(ShardHeader { flags, clock, server, table, columns, rows, payload_len, crc, row_type })
        })()
        .map_err(|e| bad(e.to_string()))?;
        if s.len() as u64 != h.payload_len {
            return Err(bad(format!("payload is {} bytes, header says {} (truncated?)", s.len(), h.payload_len)));
        }
        let got = crc32c(s);
        if got != h.crc {
            return Err(bad(format!("checksum mismatch (stored {:08x}, computed {got:08x})", h.crc)));
        }
        Ok((h, s))
    }
}

/// Iterates the `(row id, encoded row)` records of a shard payload.
pub fn payload_rows(mut payload: &[u8]) -> impl Iterator<Item = Result<(u64, &[u8])>> {
    std::iter::from_fn(move || {
        if payload.is_empty() {
            return None;
        }
        let r = (|| {
            let id = payload.take_u64()?;
            let len = payload.take_u32()? as usize;
            if payload.len() < len {
                return Err(PsError::codec(format!("row {id}: {len} bytes announced, {} left", payload.len())));
            }
            let (row, rest) = payload.split_at(len);
            payload = rest;
            Ok((id, row))
        })();
        if r.is_err() {
            payload = &[];
        }
        Some(r)
    })
}

/// A worker state file: header then `payload`.
pub fn state_file_bytes(clock: i64, worker: u32, payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(40 + payload.len());
    b.extend_from_slice(STATE_MAGIC);
    b.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&clock.to_le_bytes());
    b.extend_from_slice(&worker.to_le_bytes());
    b.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    b.extend_from_slice(&crc32c(payload).to_le_bytes());
    b.extend_from_slice(payload);
    b
}

/// Parses a worker state file written for (`clock`, `worker`) and returns its payload.
pub fn parse_state(bytes: &[u8], clock: i64, worker: u32, what: &str) -> Result<Vec<u8>> {
    let bad = |why: String| PsError::codec(format!("worker state {what}: {why}"));
    let mut s = bytes;
    let r = (|| -> Result<(u32, i64, u32, u64, u32)> {
        if s.take_bytes(8)? != STATE_MAGIC {
            return Err(PsError::codec("bad magic"));
        }
        let version = s.take_u32()?;
        let _reserved = s.take_u32()?;
        Ok((version, s.take_i64()?, s.take_u32()?, s.take_u64()?, s.take_u32()?))
    })();
    let (version, c, w, len, crc) = r.map_err(|e| bad(e.to_string()))?;
    if version != FORMAT_VERSION || c != clock || w != worker {
        return Err(bad(format!("header says version {version}, clock {c}, worker {w}; expected {clock}, {worker}")));
    }
    if s.len() as u64 != len || crc32c(s) != crc {
        return Err(bad("length or checksum mismatch (truncated or corrupt)".into()));
    }
    Ok(s.to_vec())
}

/// One file of a snapshot as listed in the manifest.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct FileEntry {
    /// Name inside the `clock-<t>` directory.
    pub file: String,
    /// Server id (table shards) or global worker thread id (worker states).
    pub owner: u32,
    pub rows: u64,
    pub bytes: u64,
    pub crc32c: u32,
}

/// A table of a snapshot and its shards.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TableEntry {
    pub config: TableConfig,
    pub shards: Vec<FileEntry>,
}

impl TableEntry {
    /// The shards a resumed process `p` reads its rows from, when the job's processes serve
    /// rows as `servers` lists them (a row goes to `servers[slot mod len]`, as it went to the
    /// shard owners' list when the snapshot was written), and whether rows of other servers must
    /// be left out: the same layout reads one shard whole; another (an ASP job's other data
    /// centers, whose copies are in the shards of process 0's) reads the shards whose rows can
    /// map to `p` and keeps its own.
    pub fn shards_for(&self, servers: &[usize], p: usize) -> (Vec<usize>, bool) {
        let owners: Vec<usize> = self.shards.iter().map(|f| f.owner as usize).collect();
        if owners == servers {
            return (vec![p], false);
        }
        let Some(i) = servers.iter().position(|&q| q == p) else { return (Vec::new(), true) };
        let g = gcd(owners.len(), servers.len()).max(1);
        let read = owners.iter().enumerate().filter(|(j, _)| j % g == i % g).map(|(_, &o)| o).collect();
        (read, true)
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// What one process contributed to a snapshot (sent to the name node).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ProcessPart {
    pub process: u32,
    pub shards: Vec<(TableConfig, FileEntry)>,
    pub workers: Vec<FileEntry>,
    pub approx: bool,
    pub is_final: bool,
    /// Sent twice: first when the files are encoded (`false`: the name node stages the manifest
    /// meanwhile), then once they are stored (`true`: the snapshot may be completed).
    #[serde(default)]
    pub stored: bool,
    /// With `stored`: why its files could not be stored (the snapshot is then abandoned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

/// `MANIFEST.json`: written last; its presence makes a snapshot complete.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Manifest {
    pub format_version: u32,
    /// The snapshot holds the updates of the first `clock` clocks.
    pub clock: i64,
    /// "pure" or "approx".
    pub mode: String,
    /// Taken when every process finished the job.
    pub is_final: bool,
    /// Pure, and every worker thread saved its state: a job can continue from here.
    pub resumable: bool,
    pub processes: usize,
    pub threads: usize,
    pub created_unix_s: u64,
    pub tables: Vec<TableEntry>,
    pub workers: Vec<FileEntry>,
}

impl Manifest {
    pub fn table(&self, id: u32) -> Option<&TableEntry> {
        self.tables.iter().find(|t| t.config.id == id)
    }
    /// Bytes of all the snapshot's files (shards and worker states).
    pub fn total_bytes(&self) -> u64 {
        self.tables.iter().flat_map(|t| &t.shards).chain(&self.workers).map(|f| f.bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(payload: &[u8]) -> ShardHeader {
        ShardHeader {
            flags: FLAG_APPROX,
            clock: 7,
            server: 1,
            table: 3,
            columns: 4,
            rows: 1,
            payload_len: payload.len() as u64,
            crc: crc32c(payload),
            row_type: "dense_i64".into(),
        }
    }

    #[test]
    fn a_resumed_process_reads_the_shards_its_rows_can_be_in() {
        let entry = |owners: &[u32]| TableEntry {
            config: crate::config::TableConfig::new(1, "t", "dense_f64", 1),
            shards: owners
                .iter()
                .map(|&owner| FileEntry { file: String::new(), owner, rows: 0, bytes: 0, crc32c: 0 })
                .collect(),
        };
        let asp = entry(&[0, 1]);
        assert_eq!(asp.shards_for(&[0, 1], 1), (vec![1], false), "the data center that wrote them");
        assert_eq!(asp.shards_for(&[2, 3], 3), (vec![1], true), "as many processes: one shard each");
        assert_eq!(asp.shards_for(&[2], 2), (vec![0, 1], true), "one process: all of them");
        // Slots 1 and 3 mod 4 are 1 mod 2: written by 4 servers, read by the second of 2.
        assert_eq!(entry(&[0, 1, 2, 3]).shards_for(&[0, 1], 1), (vec![1, 3], true));
        assert_eq!(entry(&[0, 1, 2]).shards_for(&[3, 4], 4), (vec![0, 1, 2], true));
    }

    #[test]
    fn crc32c_matches_the_standard_check_value() {
        // The CRC catalogue's check value for CRC-32/ISCSI over "123456789".
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn shard_roundtrip_and_corruption_is_caught() {
        let mut payload = Vec::new();
        payload.extend_from_slice(&42u64.to_le_bytes());
        payload.extend_from_slice(&3u32.to_le_bytes());
        payload.extend_from_slice(b"abc");
        let h = header(&payload);
        let file = h.file_bytes(&payload);
        let (h2, p2) = ShardHeader::parse(&file, "f").unwrap();
        assert_eq!(h2, h);
        assert!(h2.is_approx() && !h2.is_final());
        let rows: Vec<_> = payload_rows(p2).collect::<Result<_>>().unwrap();
        assert_eq!(rows, vec![(42, &b"abc"[..])]);
        let mut flipped = file.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(ShardHeader::parse(&flipped, "f").unwrap_err().to_string().contains("checksum"));
        assert!(ShardHeader::parse(&file[..file.len() - 1], "f").unwrap_err().to_string().contains("truncated"));
        assert!(ShardHeader::parse(b"garbage", "f").is_err());
    }

    #[test]
    fn state_roundtrip_checks_clock_and_worker() {
        let f = state_file_bytes(5, 2, b"hello");
        assert_eq!(parse_state(&f, 5, 2, "s").unwrap(), b"hello");
        assert!(parse_state(&f, 6, 2, "s").is_err());
        assert!(parse_state(&f[..f.len() - 2], 5, 2, "s").is_err());
    }
}
