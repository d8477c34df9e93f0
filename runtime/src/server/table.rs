//! Master copy of the rows of one table held by one server shard.

use crate::config::{mix64, TableConfig};
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
        ServerTable { cfg, rows: FxHashMap::default() }
    }

    /// The row, created on first touch: zero, or the table's deterministic random init.
    fn row_mut(&mut self, row: u64) -> &mut R {
        let (cols, init) = (self.cfg.columns, self.cfg.init);
        self.rows.entry(row).or_insert_with(|| {
            let mut r = R::zero(cols);
            if let Some(i) = init {
                r.randomize(mix64(i.seed ^ row.wrapping_mul(0x2545f4914f6cdd1d)), i.low, i.high);
            }
            r
        })
    }
}

impl<R: Row> ServerTableOps for ServerTable<R> {
    fn apply_batch(&mut self, mut data: &[u8], touched: &mut dyn FnMut(u64)) -> Result<()> {
        let cols = self.cfg.columns;
        while !data.is_empty() {
            let row = data.take_u64()?;
            let u = R::Update::decode(&mut data, cols)?;
            self.row_mut(row).apply(&u);
            touched(row);
        }
        Ok(())
    }

    fn encode_row(&mut self, row: u64, out: &mut BytesMut) {
        self.row_mut(row).encode(out);
    }
}
