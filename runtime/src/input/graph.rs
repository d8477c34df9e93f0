//! Graphs as SNAP edge lists: `src dst` per line (tab or spaces), `#` comments; or two named
//! columns of a table (CSV or Parquet).

use super::keys::KeyColumn;
use super::table::column_ids;
use super::{digits, field, on_bad, plan_splits, read_rows, BadRecords, Cell, Column, Decoded, InputFormat};
use super::{LineReader, ReadStats, RowSink};
use crate::error::{PsError, Result};
use crate::storage::storage_for;

/// Edges of this worker's share, as parallel arrays.
#[derive(Clone, Debug, Default)]
pub struct Edges {
    pub src: Vec<u32>,
    pub dst: Vec<u32>,
}

/// The fast path for `src<whitespace>dst[<whitespace>anything]` with plain digits; anything else
/// returns `None` and goes to the general parser (same values; it names what is wrong).
fn fast_edge(t: &[u8]) -> Option<(u32, u32)> {
    let (s, rest) = digits(t)?;
    let gap = rest.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let (d, rest) = digits(&rest[gap..]).filter(|_| gap > 0)?;
    rest.first().is_none_or(|b| b.is_ascii_whitespace()).then_some((s, d))
}

/// Reads worker `k`'s share (of `n`) of the edge list at `url`.
pub fn read_edges(url: &str, k: usize, n: usize, bad: BadRecords) -> Result<(Edges, ReadStats)> {
    let storage = storage_for(url)?;
    let st: &dyn crate::storage::Storage = &Decoded(storage.as_ref());
    let mut out = Edges::default();
    let mut stats = ReadStats::default();
    for split in plan_splits(&st.list(url)?, k, n) {
        let mut r = LineReader::new(st, &split)?;
        while let Some((line, at)) = r.next_line()? {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') || t.starts_with('%') {
                continue;
            }
            let parsed = match fast_edge(t.as_bytes()) {
                Some(e) => Ok(e),
                None => {
                    let mut f = t.split_whitespace();
                    field::<u32>(f.next(), "source node").and_then(|s| Ok((s, field::<u32>(f.next(), "target node")?)))
                }
            };
            match parsed {
                Ok((s, d)) => {
                    out.src.push(s);
                    out.dst.push(d);
                    stats.records += 1;
                }
                Err(why) => on_bad(bad, &mut stats, st, &split.path, at, &why)?,
            }
        }
        stats.bytes += split.bytes_read(&r);
    }
    Ok((out, stats))
}

/// Reads worker `k`'s share (of `n`) of the edges in the table at `url` (`format` Csv or
/// Parquet), columns `(src, dst)`, whose node ids must all be integers in `0..2^32`;
/// [`read_edge_table_keyed`] takes any.
pub fn read_edge_table(
    url: &str,
    k: usize,
    n: usize,
    format: InputFormat,
    cols: (&str, &str),
    bad: BadRecords,
) -> Result<(Edges, ReadStats)> {
    let (edges, stats, nodes) = read_edge_table_keyed(url, k, n, format, cols, bad)?;
    if nodes.is_keyed() {
        return Err(PsError::Config(format!(
            "{url}: not every node id is an integer in 0..4294967295 (named nodes need read_edge_table_keyed)"
        )));
    }
    Ok((edges, stats))
}

/// [`read_edge_table`] for node ids of any kind (names, 64-bit numbers): one column of keys for
/// both ends; when it [`KeyColumn::is_keyed`], the edges hold local indexes into its keys.
pub fn read_edge_table_keyed(
    url: &str,
    k: usize,
    n: usize,
    format: InputFormat,
    (src, dst): (&str, &str),
    bad: BadRecords,
) -> Result<(Edges, ReadStats, KeyColumn)> {
    let cols = [Column { flag: "--src-col", name: src }, Column { flag: "--dst-col", name: dst }];
    let mut sink = EdgeRows { out: Edges::default(), nodes: KeyColumn::default() };
    let stats = read_rows(url, k, n, format, &cols, bad, &mut sink)?;
    let EdgeRows { out, nodes } = sink;
    Ok((out, stats, nodes))
}

/// The edges of a table, with their node column.
struct EdgeRows {
    out: Edges,
    nodes: KeyColumn,
}

impl RowSink for EdgeRows {
    /// Parquet's fast path: both columns integers that fit u32 (else row by row).
    fn columns(&mut self, c: &[&dyn arrow_array::Array]) -> bool {
        if self.nodes.is_keyed() {
            return false;
        }
        let (Some(src), Some(dst)) = (column_ids(c[0]), column_ids(c[1])) else { return false };
        self.out.src.extend(src);
        self.out.dst.extend(dst);
        true
    }
    fn row(&mut self, c: &[Cell]) -> std::result::Result<(), String> {
        let EdgeRows { out, nodes } = self;
        let (mut s, switched) = nodes.id(&c[0], "source node")?;
        if switched {
            out.src.iter_mut().chain(out.dst.iter_mut()).for_each(|v| nodes.intern_earlier(v));
        }
        let (d, switched) = nodes.id(&c[1], "target node")?;
        if switched {
            // This row's source was read as a plain id too.
            out.src.iter_mut().chain(out.dst.iter_mut()).chain([&mut s]).for_each(|v| nodes.intern_earlier(v));
        }
        out.src.push(s);
        out.dst.push(d);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_edges_agree_with_the_general_parser_or_decline() {
        let general = |t: &str| {
            let mut f = t.split_whitespace();
            field::<u32>(f.next(), "s").and_then(|s| Ok((s, field::<u32>(f.next(), "d")?))).ok()
        };
        for line in ["1 2", "10\t20", "3   4  0.5", "7\t8\textra", "123456789 5"] {
            assert_eq!(fast_edge(line.as_bytes()), general(line), "{line}");
            assert!(fast_edge(line.as_bytes()).is_some(), "{line}");
        }
        for line in ["1", "1 x", "-1 2", "1 2x", "4294967295 1", "+1 2", "1,2"] {
            assert_eq!(fast_edge(line.as_bytes()), None, "{line}");
        }
    }
}
