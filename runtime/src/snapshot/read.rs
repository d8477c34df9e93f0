//! Reading complete snapshots offline: whole tables as typed rows (offline evaluation) or as
//! tab-separated text (`ps-runtime snapshot dump`).

use super::format::{payload_rows, Manifest};
use super::CheckpointStore;
use crate::error::{PsError, Result};
use crate::row::{Row, RowText};
use rustc_hash::FxHashMap;
use std::io::Write;

/// The manifest of snapshot `clock`, or of the newest complete one.
pub fn manifest(store: &CheckpointStore, clock: Option<i64>) -> Result<Manifest> {
    let t = match clock {
        Some(t) => t,
        None => store
            .list()?
            .into_iter()
            .rev()
            .find(|(_, complete)| *complete)
            .map(|(t, _)| t)
            .ok_or_else(|| PsError::Config(format!("no complete snapshot under {}", store.url())))?,
    };
    if !store.list()?.contains(&(t, true)) {
        return Err(PsError::Config(format!("{} is not a complete snapshot", store.clock_dir(t))));
    }
    store.read_manifest(t)
}

/// Every row of table `id` in snapshot `m`, decoded as `R` (checked against the table's row type).
pub fn read_table<R: Row>(store: &CheckpointStore, m: &Manifest, id: u32) -> Result<FxHashMap<u64, R>> {
    let entry =
        m.table(id).ok_or_else(|| PsError::Config(format!("{} has no table {id}", store.clock_dir(m.clock))))?;
    if entry.config.row_type != R::type_name() {
        return Err(PsError::Usage(format!(
            "table {id} has row type {}, read as {}",
            entry.config.row_type,
            R::type_name()
        )));
    }
    let mut rows = FxHashMap::default();
    for shard in &entry.shards {
        let (_, payload) = store.read_shard(m.clock, shard.owner as usize, id)?;
        for rec in payload_rows(&payload) {
            let (row, mut bytes) = rec?;
            rows.insert(row, R::decode(&mut bytes, entry.config.columns)?);
        }
    }
    Ok(rows)
}

/// Writes snapshot `m` (or only table `table`) as `table<TAB>row<TAB>values...` lines, rows in
/// id order within each shard; returns the number of rows written.
pub fn dump_tsv(
    store: &CheckpointStore,
    m: &Manifest,
    table: Option<u32>,
    registry: &dyn RowText,
    out: &mut dyn Write,
) -> Result<u64> {
    let mut n = 0;
    let mut line = String::new();
    for entry in m.tables.iter().filter(|e| table.is_none_or(|t| t == e.config.id)) {
        let cfg = &entry.config;
        for shard in &entry.shards {
            let (h, payload) = store.read_shard(m.clock, shard.owner as usize, cfg.id)?;
            for rec in payload_rows(&payload) {
                let (row, bytes) = rec?;
                line.clear();
                line.push_str(&format!("{}\t{row}\t", cfg.id));
                registry.row_tsv(&h.row_type, bytes, cfg.columns, &mut line)?;
                line.push('\n');
                out.write_all(line.as_bytes()).map_err(|e| PsError::io("writing the dump", e))?;
                n += 1;
            }
        }
    }
    if table.is_some() && n == 0 && m.tables.iter().all(|e| Some(e.config.id) != table) {
        return Err(PsError::Config(format!("{} has no table {}", store.clock_dir(m.clock), table.unwrap_or(0))));
    }
    Ok(n)
}
