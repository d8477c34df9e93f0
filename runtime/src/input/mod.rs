//! Input layer: line-aligned byte-range splits (like Hadoop's text input), tables (CSV and
//! Parquet, read by column name), and readers for the formats of the applications. Each worker
//! reads only its share of the input: a line belongs to the split that holds its first byte, so
//! any number of workers covers every line exactly once. Malformed lines are reported with file and line number. Compressed files
//! (`.gz`, `.bz2`, `.zst`) are read whole by one worker each.

mod compressed;
mod corpus;
mod graph;
mod keys;
mod parquet;
mod ratings;
mod sparse_corpus;
mod split;
mod table;

pub use compressed::{Codec, Decoded};
pub use corpus::{read_corpus, read_vocab, Corpus, Doc};
pub use graph::{read_edge_table, read_edge_table_keyed, read_edges, Edges};
pub use keys::{Key, KeyColumn, VisitIds};
pub use ratings::{
    read_interactions, read_rating_table, read_rating_table_keyed, read_ratings, Rating, RatingColumns, RatingFormat,
    RatingTable,
};
pub use split::{plan_splits, plan_spread_splits, LineReader, Split, MAX_LINE_BYTES};
pub use table::{column_ids, column_values, is_parquet, read_rows, resolve_format, Cell, Column, InputFormat, RowSink};
pub use table::{MAX_COLS, PARQUET_MAGIC};

use crate::error::{PsError, Result};
use crate::storage::Storage;

/// What to do with a malformed record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BadRecords {
    /// Stop with an error naming the file and line.
    #[default]
    Fail,
    /// Count and skip (`--skip-bad-records`).
    Skip,
}

/// Counts kept while reading.
#[derive(Clone, Debug, Default)]
pub struct ReadStats {
    pub records: u64,
    pub skipped: u64,
    pub bytes: u64,
}

/// Parses one decimal field of a record.
pub(crate) fn field<T: std::str::FromStr>(s: Option<&str>, what: &str) -> std::result::Result<T, String> {
    let s = s.ok_or_else(|| format!("missing {what}"))?;
    s.trim().parse::<T>().map_err(|_| format!("{what} '{s}' is not a valid number"))
}

/// Up to 9 leading ASCII digits as a number, then the rest (the parsers' fast paths; longer
/// numbers go to the general parser). One pass over the digits: this runs three times per line
/// of every input.
#[inline]
pub(crate) fn digits(s: &[u8]) -> Option<(u32, &[u8])> {
    let mut v = 0u32;
    let mut n = 0;
    // Looks at one byte past nine digits, to decline a tenth.
    while n < s.len() && n < 10 {
        let d = s[n].wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(d as u32);
        n += 1;
    }
    if n == 0 || n > 9 {
        return None;
    }
    Some((v, &s[n..]))
}

/// Handles one bad record according to the policy.
pub(crate) fn on_bad(
    policy: BadRecords,
    stats: &mut ReadStats,
    storage: &dyn Storage,
    path: &str,
    offset: u64,
    why: &str,
) -> Result<()> {
    let place = || {
        let line = storage.line_number(path, offset).map(|l| format!(":{l}"));
        format!("{path}{}", line.unwrap_or_else(|_| format!(" (byte {offset})")))
    };
    on_bad_at(policy, stats, &place, why)
}

/// Handles one bad record at `place` (a file and line or row) according to the policy.
pub(crate) fn on_bad_at(
    policy: BadRecords,
    stats: &mut ReadStats,
    place: &dyn Fn() -> String,
    why: &str,
) -> Result<()> {
    match policy {
        BadRecords::Fail => Err(PsError::Config(format!("{}: {why}", place()))),
        BadRecords::Skip => {
            if stats.skipped < 5 {
                log::warn!("skipping bad record: {}: {why}", place());
            }
            stats.skipped += 1;
            Ok(())
        }
    }
}
