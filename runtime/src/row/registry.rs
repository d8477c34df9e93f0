//! Maps row-type names to the generic table implementations, so the runtime can build server shards
//! and process caches for tables whose row type is only known from configuration. Built-in rows are
//! registered by [`RowTypeRegistry::with_builtins`]; applications add their own with `register`.

use super::{DenseRow, Row, SparseRow};
use crate::client::{Core, ProcessTable};
use crate::config::TableConfig;
use crate::error::{PsError, Result};
use crate::server::ServerTable;
use crate::wire::RowsKind;
use bytes::BytesMut;
use std::any::Any;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;

/// Server-side storage of one table, type-erased.
pub(crate) trait ServerTableOps: Send {
    fn config(&self) -> &TableConfig;
    /// Applies a batch of (row, update) pairs of clocks up to `clock`; reports each touched row.
    /// `after`: pending pure-snapshot clocks `t <= clock` whose rows must be preserved (copied
    /// before the first later update) until the snapshot is taken.
    fn apply_batch(&mut self, data: &[u8], clock: i64, after: &[i64], touched: &mut dyn FnMut(u64)) -> Result<()>;
    /// Appends the encoding of `row` (a zero row if it was never updated).
    fn encode_row(&mut self, row: u64, out: &mut BytesMut);
    /// Appends every row as of snapshot `t` (preserved copies where later updates arrived) to
    /// `out` in the shard payload format, sorted by id; returns the row count.
    fn snapshot(&mut self, t: i64, out: &mut Vec<u8>) -> u64;
    /// Loads rows from a shard payload (resume); returns the row count.
    fn load(&mut self, payload: &[u8]) -> Result<u64>;
}

/// Out-buffers for oplog batches, one list of frames per server.
pub(crate) struct BatchOut {
    pub per_server: Vec<Vec<BytesMut>>,
    pub limit: usize,
    pub entries: u64,
}

impl BatchOut {
    pub fn new(servers: usize, limit: usize) -> Self {
        BatchOut { per_server: (0..servers).map(|_| Vec::new()).collect(), limit, entries: 0 }
    }
    /// The buffer to append the next entry for `server` to (starts a new frame when full).
    pub fn buf(&mut self, server: usize) -> &mut BytesMut {
        let list = &mut self.per_server[server];
        if list.last().is_none_or(|b| b.len() >= self.limit) {
            list.push(BytesMut::with_capacity(4096));
        }
        self.entries += 1;
        list.last_mut().unwrap()
    }
}

/// Client-side process cache of one table, type-erased for the communication task.
pub(crate) trait ProcessTableOps: Send + Sync {
    /// Installs one row of a `Rows` message, advancing `buf` past it.
    fn on_row(&self, server: usize, kind: RowsKind, age: i64, rc: i64, row: u64, buf: &mut &[u8]) -> Result<()>;
    /// Encodes the process oplog of clocks in `(from, upto]` into per-server batches (kept for replay).
    fn collect_updates(&self, from: i64, upto: i64, out: &mut BatchOut);
    /// Server `server` has applied this process's updates up to `clock`: drop them from the oplog.
    fn on_ack(&self, server: usize, clock: i64);
    /// Wakes every thread blocked on this table (new push clock, failure).
    fn wake_all(&self);
}

trait RowFactory: Send + Sync {
    fn server_table(&self, cfg: &TableConfig) -> Box<dyn ServerTableOps>;
    fn process_table(
        &self,
        cfg: &TableConfig,
        core: &Arc<Core>,
    ) -> (Arc<dyn ProcessTableOps>, Arc<dyn Any + Send + Sync>);
    fn row_tsv(&self, bytes: &[u8], columns: usize, out: &mut String) -> Result<()>;
}

struct Factory<R>(PhantomData<fn() -> R>);

impl<R: Row> RowFactory for Factory<R> {
    fn server_table(&self, cfg: &TableConfig) -> Box<dyn ServerTableOps> {
        Box::new(ServerTable::<R>::new(cfg.clone()))
    }
    fn process_table(
        &self,
        cfg: &TableConfig,
        core: &Arc<Core>,
    ) -> (Arc<dyn ProcessTableOps>, Arc<dyn Any + Send + Sync>) {
        let t = Arc::new(ProcessTable::<R>::new(cfg.clone(), core.clone()));
        (t.clone(), t)
    }
    fn row_tsv(&self, mut bytes: &[u8], columns: usize, out: &mut String) -> Result<()> {
        R::decode(&mut bytes, columns)?.write_tsv(out);
        Ok(())
    }
}

/// Row types known to a process, by name. Passed to the runtime at start-up (no global state).
#[derive(Clone)]
pub struct RowTypeRegistry {
    map: HashMap<String, Arc<dyn RowFactory>>,
}

impl Default for RowTypeRegistry {
    fn default() -> Self {
        Self::with_builtins()
    }
}

impl RowTypeRegistry {
    /// A registry with dense and sparse rows over i32, i64, f32 and f64.
    pub fn with_builtins() -> Self {
        let mut r = RowTypeRegistry { map: HashMap::new() };
        r.register::<DenseRow<i32>>();
        r.register::<DenseRow<i64>>();
        r.register::<DenseRow<f32>>();
        r.register::<DenseRow<f64>>();
        r.register::<SparseRow<i32>>();
        r.register::<SparseRow<i64>>();
        r.register::<SparseRow<f32>>();
        r.register::<SparseRow<f64>>();
        r
    }

    /// Registers a (user-defined) row type under `R::type_name()`.
    pub fn register<R: Row>(&mut self) {
        self.map.insert(R::type_name(), Arc::new(Factory::<R>(PhantomData)));
    }

    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<_> = self.map.keys().cloned().collect();
        v.sort();
        v
    }

    fn get(&self, cfg: &TableConfig) -> Result<&Arc<dyn RowFactory>> {
        self.map.get(&cfg.row_type).ok_or_else(|| {
            PsError::Config(format!(
                "table {} ({}): row_type '{}' is not registered (known: {})",
                cfg.id,
                cfg.name,
                cfg.row_type,
                self.names().join(", ")
            ))
        })
    }

    /// Appends one encoded row of type `row_type` as tab-separated text (snapshot dumps).
    pub fn row_tsv(&self, row_type: &str, bytes: &[u8], columns: usize, out: &mut String) -> Result<()> {
        let f = self.map.get(row_type).ok_or_else(|| {
            PsError::Config(format!("row type '{row_type}' is not registered (known: {})", self.names().join(", ")))
        })?;
        f.row_tsv(bytes, columns, out)
    }

    pub(crate) fn server_table(&self, cfg: &TableConfig) -> Result<Box<dyn ServerTableOps>> {
        Ok(self.get(cfg)?.server_table(cfg))
    }

    pub(crate) fn process_table(
        &self,
        cfg: &TableConfig,
        core: &Arc<Core>,
    ) -> Result<(Arc<dyn ProcessTableOps>, Arc<dyn Any + Send + Sync>)> {
        Ok(self.get(cfg)?.process_table(cfg, core))
    }
}
