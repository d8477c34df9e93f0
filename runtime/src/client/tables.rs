//! The tables of a process's client, by id: configuration, the type-erased process cache (for the
//! communication task) and the same cache as `Any` (for typed thread handles).

use super::ProcessTableOps;
use crate::config::TableConfig;
use crate::error::{PsError, Result};
use rustc_hash::FxHashMap;
use std::any::Any;
use std::sync::{Arc, RwLock, RwLockReadGuard};

pub(crate) struct TableSlot {
    pub cfg: TableConfig,
    pub ops: Arc<dyn ProcessTableOps>,
    pub any: Arc<dyn Any + Send + Sync>,
}

#[derive(Default)]
pub(crate) struct TableRegistry {
    map: RwLock<FxHashMap<u32, TableSlot>>,
}

impl TableRegistry {
    pub fn insert(&self, id: u32, slot: TableSlot) {
        self.map.write().unwrap_or_else(|e| e.into_inner()).insert(id, slot);
    }

    /// Every table (held for reading: tables are only added before the job is ready).
    pub fn all(&self) -> RwLockReadGuard<'_, FxHashMap<u32, TableSlot>> {
        self.map.read().unwrap_or_else(|e| e.into_inner())
    }

    pub fn with<T>(&self, id: u32, f: impl FnOnce(&TableSlot) -> Result<T>) -> Result<T> {
        let tables = self.all();
        let slot = tables.get(&id).ok_or_else(|| PsError::Usage(format!("table {id} was not created")))?;
        f(slot)
    }
}
