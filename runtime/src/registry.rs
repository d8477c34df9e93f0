//! Maps row-type names to the generic table implementations, so the runtime can build server shards
//! and process caches for tables whose row type is only known from configuration. Built-in rows are
//! registered by [`RowTypeRegistry::with_builtins`]; applications add their own with `register`.
//! It sits above `row`, `client` and `server` because it instantiates their generic tables; the
//! row layer itself knows nothing of them.

use crate::client::{ProcessTable, ProcessTableOps, PushClocks};
use crate::config::TableConfig;
use crate::error::{PsError, Result};
use crate::row::{DenseRow, Row, RowText, SparseRow};
use crate::server::{ServerTable, ServerTableOps};
use crate::state::Shared;
use std::any::Any;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;

/// A process cache, type-erased for the communication task and as `Any` for typed handles.
type ProcessTables = (Arc<dyn ProcessTableOps>, Arc<dyn Any + Send + Sync>);

trait RowFactory: Send + Sync {
    fn server_table(&self, cfg: &TableConfig) -> Box<dyn ServerTableOps>;
    fn process_table(&self, cfg: &TableConfig, shared: &Arc<Shared>, push: &Arc<PushClocks>) -> ProcessTables;
    fn row_tsv(&self, bytes: &[u8], columns: usize, out: &mut String) -> Result<()>;
}

struct Factory<R>(PhantomData<fn() -> R>);

impl<R: Row> RowFactory for Factory<R> {
    fn server_table(&self, cfg: &TableConfig) -> Box<dyn ServerTableOps> {
        Box::new(ServerTable::<R>::new(cfg.clone()))
    }
    fn process_table(&self, cfg: &TableConfig, shared: &Arc<Shared>, push: &Arc<PushClocks>) -> ProcessTables {
        let t = Arc::new(ProcessTable::<R>::new(cfg.clone(), shared.clone(), push.clone()));
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

    pub(crate) fn server_table(&self, cfg: &TableConfig) -> Result<Box<dyn ServerTableOps>> {
        Ok(self.get(cfg)?.server_table(cfg))
    }

    pub(crate) fn process_table(
        &self,
        cfg: &TableConfig,
        shared: &Arc<Shared>,
        push: &Arc<PushClocks>,
    ) -> Result<ProcessTables> {
        Ok(self.get(cfg)?.process_table(cfg, shared, push))
    }
}

impl RowText for RowTypeRegistry {
    fn row_tsv(&self, row_type: &str, bytes: &[u8], columns: usize, out: &mut String) -> Result<()> {
        let f = self.map.get(row_type).ok_or_else(|| {
            PsError::Config(format!("row type '{row_type}' is not registered (known: {})", self.names().join(", ")))
        })?;
        f.row_tsv(bytes, columns, out)
    }
}
