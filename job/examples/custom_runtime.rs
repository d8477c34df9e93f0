//! A runtime binary with an application of its own, written only against the public API, as a
//! user's crate would: `main` is one line, the app `tally` joins the built-in ones. The tests
//! submit it with `yarn-submit --runtime-bin .../custom_runtime tally --clocks N`.

use clap::Parser;
use ps_job::AppCatalog;
use ps_runtime::{DenseRow, PsContext, PsError, Result, TableKey, Worker};
use std::sync::atomic::{AtomicI64, Ordering};

/// Every worker adds 1 to its own column each clock; after a global barrier worker 0 checks
/// that the row holds every worker's clocks.
#[derive(Parser)]
#[command(name = "tally", about = "Counts clocks per worker and checks the totals")]
struct Tally {
    /// Clocks to run.
    #[arg(long, default_value_t = 10)]
    clocks: i64,
    #[arg(skip)]
    total: AtomicI64,
}

/// The one table: a column per worker thread, counting its clocks.
const TALLY: TableKey<DenseRow<i64>> = TableKey::new(0);

impl Tally {
    fn build(args: &[String]) -> Result<Box<dyn ps_runtime::App>> {
        let t = Tally::try_parse_from(std::iter::once("tally".to_string()).chain(args.iter().cloned()))
            .map_err(|e| PsError::Config(format!("tally: {e}")))?;
        Ok(Box::new(t))
    }
}

impl ps_runtime::App for Tally {
    fn initialize(&mut self, ctx: &mut PsContext) -> Result<()> {
        let workers = ctx.num_processes() * ctx.config().threads;
        ctx.create_table(TALLY.config("tally", workers))
    }

    fn run_worker(&self, w: &mut Worker) -> Result<()> {
        let mut t = w.open(TALLY)?;
        let gid = w.global_thread_id() as u32;
        for _ in 0..self.clocks {
            t.inc_col(0, gid, 1i64)?;
            w.clock()?;
        }
        w.global_barrier()?;
        let row = t.get(0)?.to_vec();
        if row.iter().any(|c| *c != self.clocks) {
            return Err(PsError::Usage(format!("tally: expected {} in every column, read {row:?}", self.clocks)));
        }
        self.total.fetch_add(row.iter().sum::<i64>(), Ordering::Relaxed);
        Ok(())
    }

    fn total_clocks(&self) -> Option<i64> {
        Some(self.clocks)
    }

    fn report(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert("tally".into(), self.total.load(Ordering::Relaxed).into());
        m
    }
}

fn main() {
    ps_job::runtime_main(AppCatalog::builtin().with_app("tally", "counts clocks per worker", Tally::build))
}
