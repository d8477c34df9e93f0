//! `demo`: the SSP demo of JBösen, turned into a checker. Every worker, every clock, sets
//! column `c` of its own row of a dense table and adds 1 to column `c` of every row of a shared
//! sparse table; then it reads everything back and checks the consistency guarantee exactly:
//! with staleness `s`, a read at clock `c` must show every update of clocks `<= c - s - 1` from
//! every thread and all of the reader's own updates (in geo-distributed ASP jobs, `s` plus the
//! mirror clock bound DS, which is what ASP promises when every change is mirrored).
//!
//! With `--window W` the tables are W columns wide and clock `c` writes column `c % W`, so long
//! runs (soaks) keep rows, reads and checks bounded; the checks then compare each column against
//! how many of its clocks must and may be visible, which is the same rule.

use clap::Parser;
use ps_runtime::TableKey;
use ps_runtime::{App, PsContext, TableHandle, Worker};
use ps_runtime::{ColumnGet, DenseRow, SparseRow};
use ps_runtime::{PsError, Result};
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Parser, Debug, Clone)]
#[command(name = "demo", about = "Per-worker counters that check the SSP guarantee on every read")]
pub struct DemoArgs {
    /// Clocks each worker runs.
    #[arg(long, default_value_t = 20)]
    pub clocks: i64,
    /// Each worker sleeps N ms per clock (simulated computation).
    #[arg(long, default_value_t = 0)]
    pub delay_ms: u64,
    /// Plus a random 0..=N ms per clock (uneven workers, for testing the bound).
    #[arg(long, default_value_t = 0)]
    pub jitter_ms: u64,
    /// Global worker thread g also sleeps g*N ms per clock (deliberately uneven workers).
    #[arg(long, default_value_t = 0)]
    pub skew_ms: u64,
    /// Rows of the shared sparse table every worker updates.
    #[arg(long, default_value_t = 4)]
    pub shared_rows: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Call global_barrier() every N clocks (0 = never) and check that it makes every update visible.
    #[arg(long, default_value_t = 0)]
    pub barrier_every: i64,
    /// Check other threads' updates only after barriers (own updates and upper bounds at every
    /// read): under ASP with a significance threshold the copies differ by the updates held
    /// back, and only what a barrier promises is exact.
    #[arg(long)]
    pub barrier_checks_only: bool,
    /// Columns per row; clock c updates column c % W (default: one column per clock).
    #[arg(long, value_name = "W")]
    pub window: Option<u64>,
    /// For tests of failure handling: worker `--fail-worker` panics when it reaches clock K.
    #[arg(long, value_name = "K")]
    pub fail_at_clock: Option<i64>,
    /// The global worker thread id that `--fail-at-clock` makes panic.
    #[arg(long, default_value_t = 0, value_name = "G")]
    pub fail_worker: u64,
}

pub const OWN: TableKey<DenseRow<i64>> = TableKey::new(0);
pub const SHARED: TableKey<SparseRow<i32>> = TableKey::new(1);

pub struct Demo {
    args: DemoArgs,
    checks: AtomicU64,
}

impl Demo {
    pub fn from_args(args: &[String]) -> Result<Self> {
        let args: DemoArgs = super::options::parse("demo", args)?;
        if args.clocks <= 0 {
            return Err(PsError::Config("demo: --clocks must be positive".into()));
        }
        if args.window == Some(0) {
            return Err(PsError::Config("demo: --window must be positive".into()));
        }
        Ok(Demo { args, checks: AtomicU64::new(0) })
    }
}

impl Demo {
    fn width(&self) -> i64 {
        self.args.window.map_or(self.args.clocks, |w| (w as i64).min(self.args.clocks))
    }
}

/// How many clocks in `0..=upto` write column `k` of a `w`-column window.
fn writes(k: i64, upto: i64, w: i64) -> u64 {
    if upto < k {
        0
    } else {
        ((upto - k) / w + 1) as u64
    }
}

/// The visibility checks of one worker thread (`me` of `n`), for staleness `s` (`None`: async).
struct Checker {
    me: u64,
    n: u64,
    s: Option<i64>,
    width: i64,
    last: i64,
    /// No lower bound on other threads' updates outside barriers.
    only_barriers: bool,
}

impl Checker {
    fn fail(&self, what: String, c: i64) -> PsError {
        PsError::Violation(format!("thread {} at clock {c} (staleness {:?}): {what}", self.me, self.s))
    }

    /// Everything from clocks <= c - s - 1 must be visible; own updates always. Others may be
    /// ahead, but (under a bound) by at most s clocks.
    fn window(&self, c: i64) -> (i64, i64) {
        let lower = self.s.filter(|_| !self.only_barriers).map(|s| c - s - 1);
        (lower.unwrap_or(-1), self.s.map_or(self.last, |s| (c + s).min(self.last)))
    }

    /// Checks every thread's own row at clock `c`; returns the number of values checked.
    fn own_rows(&self, own: &mut TableHandle<DenseRow<i64>>, c: i64) -> Result<u64> {
        let (bound, ahead) = self.window(c);
        let mut checks = 0;
        for t in 0..self.n {
            let row = own.get(t)?;
            for k in 0..=c.min(self.width - 1) {
                let v = row.col(k as u32) as u64;
                let lo = writes(k, if t == self.me { c } else { bound }, self.width);
                let hi = writes(k, if t == self.me { c } else { ahead }, self.width);
                if v < lo || v > hi {
                    return Err(self.fail(format!("row {t} column {k} = {v}, expected {lo}..={hi}"), c));
                }
                checks += 1;
            }
        }
        Ok(checks)
    }

    /// Checks the rows every thread increments at clock `c`; returns the number of values checked.
    fn shared_rows(&self, shared: &mut TableHandle<SparseRow<i32>>, rows: u64, c: i64) -> Result<u64> {
        let (bound, ahead) = self.window(c);
        let (n, w) = (self.n, self.width);
        let mut checks = 0;
        for r in 0..rows {
            let row = shared.get(r)?;
            for k in 0..=c.min(w - 1) {
                let v = row.col(k as u32) as u64;
                let lo = n * writes(k, bound, w) + (writes(k, c, w) - writes(k, bound, w));
                let hi = n * writes(k, ahead, w);
                if v < lo || v > hi {
                    return Err(self.fail(format!("shared row {r} column {k} = {v}, expected {lo}..={hi}"), c));
                }
                checks += 1;
            }
        }
        Ok(checks)
    }

    /// After a barrier at the end of clock `c` every update made before it is visible: all clocks
    /// <= c (others may already be further, the barrier counting as this clock's end).
    fn after_barrier(&self, own: &mut TableHandle<DenseRow<i64>>, c: i64) -> Result<()> {
        let ahead = self.s.map_or(self.last, |s| (c + 1 + s).min(self.last));
        for t in 0..self.n {
            let row = own.get(t)?;
            for k in 0..=c.min(self.width - 1) {
                let v = row.col(k as u32) as u64;
                let (lo, hi) = (writes(k, c, self.width), writes(k, if t == self.me { c } else { ahead }, self.width));
                if v < lo || v > hi {
                    return Err(self.fail(format!("after barrier row {t} column {k} = {v}, expected {lo}..={hi}"), c));
                }
            }
        }
        Ok(())
    }
}

impl App for Demo {
    fn total_clocks(&self) -> Option<i64> {
        Some(self.args.clocks)
    }

    fn initialize(&mut self, ctx: &mut PsContext) -> Result<()> {
        let cols = self.width() as usize;
        ctx.create_table(OWN.config("own", cols))?;
        ctx.create_table(SHARED.config("shared", cols))?;
        Ok(())
    }

    fn run_worker(&self, w: &mut Worker) -> Result<()> {
        let me = w.global_thread_id() as u64;
        let mut own = w.open(OWN)?;
        let mut shared = w.open(SHARED)?;
        let mut rng = ps_runtime::SeededRng::seed_from_u64(self.args.seed ^ (me + 1).wrapping_mul(0x9e3779b97f4a7c15));
        // A resumed worker continues at its checkpoint's clock; its check count is its state.
        let mut checks = match w.resume_state()? {
            Some(b) => u64::from_le_bytes(
                b.as_slice().try_into().map_err(|_| PsError::codec("demo: saved state is not 8 bytes"))?,
            ),
            None => 0,
        };
        let chk = Checker {
            me,
            n: w.total_threads() as u64,
            // Under ASP another data center's updates may lag (or lead) by DS more clocks.
            s: w.staleness(OWN.id())?.map(|s| s + w.mirror_lag()),
            width: self.width(),
            last: self.args.clocks - 1,
            only_barriers: self.args.barrier_checks_only,
        };
        while w.current_clock() < self.args.clocks {
            let c = w.current_clock();
            if self.args.fail_at_clock == Some(c) && me == self.args.fail_worker {
                panic!("demo: injected failure of worker {me} at clock {c} (--fail-at-clock)");
            }
            let col = (c % chk.width) as u32;
            own.inc_col(me, col, 1)?;
            for r in 0..self.args.shared_rows {
                shared.inc_col(r, col, 1)?;
            }
            // Simulated computation between the updates and the reads of the clock.
            let pause = self.args.delay_ms + rng.gen_range(0..=self.args.jitter_ms) + me * self.args.skew_ms;
            if pause > 0 {
                std::thread::sleep(Duration::from_millis(pause));
            }
            checks += chk.own_rows(&mut own, c)? + chk.shared_rows(&mut shared, self.args.shared_rows, c)?;
            if self.args.barrier_every > 0 && (c + 1) % self.args.barrier_every == 0 {
                w.global_barrier()?;
                chk.after_barrier(&mut own, c)?;
            } else {
                w.clock_saving(|buf| {
                    buf.extend_from_slice(&checks.to_le_bytes());
                    Ok(())
                })?;
            }
        }
        self.checks.fetch_add(checks, Ordering::Relaxed);
        Ok(())
    }

    fn report(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("checks".into(), Value::from(self.checks.load(Ordering::Relaxed)));
        m
    }
}
