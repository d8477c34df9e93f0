//! Master copy of the rows of one table held by one server shard.

use crate::config::TableConfig;
use crate::error::Result;
use crate::row::{ReadExt, Row, RowUpdate, ServerTableOps};
use bytes::BytesMut;
use rustc_hash::FxHashMap;

pub(crate) struct ServerTable<R: Row> {
    cfg: TableConfig,
    rows: FxHashMap<u64, R>,
}

impl<R: Row> ServerTable<R> {
    pub fn new(cfg: TableConfig) -> Self {
        ServerTable {
            cfg,
            rows: FxHashMap::default(),
        }
    }
}

impl<R: Row> ServerTableOps for ServerTable<R> {
    fn apply_batch(&mut self, mut data: &[u8], touched: &mut dyn FnMut(u64)) -> Result<()> {
        let cols = self.cfg.columns;
        while !data.is_empty() {
            let row = data.take_u64()?;
            let u = R::Update::decode(&mut data, cols)?;
            self.rows
                .entry(row)
                .or_insert_with(|| R::zero(cols))
                .apply(&u);
            touched(row);
        }
        Ok(())
    }

    fn encode_row(&mut self, row: u64, out: &mut BytesMut) {
        let cols = self.cfg.columns;
        self.rows
            .entry(row)
            .or_insert_with(|| R::zero(cols))
            .encode(out);
    }
}
