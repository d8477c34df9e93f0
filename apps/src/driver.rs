//! The driver every iterative application shares. An app implements [`Iterative`] (its options,
//! tables, per-worker state and one clock of work); [`Driver`] turns it into an [`App`] and does
//! the rest the same way for all of them: resume from a checkpoint, the clock loop with straggler
//! injection, objective sampling and stopping at `--target`, per-clock checkpoint state, and the
//! committed output at the end.

use super::objective::{Objective, Tracker};
use super::options::CommonArgs;
use super::output::Output;
use super::state::SavedState;
use ps_runtime::Result;
use ps_runtime::{App, OutputPolicy, PsContext, Worker};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Instant;

/// An iterative algorithm run by [`Driver`]. One `State` per worker thread holds its share of the
/// data, its table handles and whatever it keeps between clocks. The driver calls, per worker:
/// `start`, then for each clock `begin_clock`, (clock 0 only) `evaluate`, `run_clock`, then
/// `evaluate` at sample clocks or `before_sample` just before them, `save` when a checkpoint is
/// due; at the end a global barrier, the last `evaluate`, and `write_output`.
pub trait Iterative: Sized + Send + Sync + 'static {
    /// The app's name, as in `--app` and in error messages.
    const NAME: &'static str;
    /// Whether a lower objective value is better (RMSE, L1 change) or a higher one
    /// (log-likelihood): decides when `--target` is reached.
    const LOWER_IS_BETTER: bool;
    /// Whether the objective is also evaluated before any work (recorded as clock 0).
    const INITIAL_OBJECTIVE: bool = true;
    /// The consistency model the app runs under when the job names none (`yarn-submit` applies
    /// it); `None` keeps the job-wide default. [`Iterative::consistency`] may choose by the
    /// arguments instead.
    const CONSISTENCY: Option<ps_runtime::Consistency> = None;
    /// A worker's state between clocks.
    type State;

    /// The default consistency model of this job's arguments (`App::default_consistency`).
    fn consistency(&self) -> Option<ps_runtime::Consistency> {
        Self::CONSISTENCY
    }
    /// Parses and checks the app's command-line arguments.
    fn from_args(args: &[String]) -> Result<Self>;
    /// Sizes the app to the job before it starts (see [`App::shape`]): e.g. the clocks per pass
    /// of a schedule that rotates model slices among the workers.
    fn shape(&mut self, _job: &ps_runtime::JobShape) -> Result<()> {
        Ok(())
    }
    fn common(&self) -> &CommonArgs;
    /// Turns the partial sums of an evaluation, summed over workers, into named values; the first
    /// is the objective's `value`.
    fn objective(sums: &[f64]) -> Vec<(&'static str, f64)>;
    /// The objective of this job: `objective` unless the app's arguments pick another one (MF's
    /// `--implicit` measures a ranking loss, not an RMSE).
    fn objective_fn(&self) -> fn(&[f64]) -> Vec<(&'static str, f64)> {
        Self::objective
    }
    /// Creates the app's tables (the same in every process; the driver adds the objective's).
    fn create_tables(&self, ctx: &mut PsContext) -> Result<()>;
    /// Loads this worker's data and sets up its state: on a fresh start (`saved` is `None`) also
    /// the tables' initial contents; a resumed worker finds those in the restored tables and its
    /// own state in `saved` (what `save` returned).
    fn start(&self, w: &mut Worker, saved: Option<&SavedState>) -> Result<Self::State>;
    /// The job's input rows skipped at load ([`super::bad_rows::settle`]), reported as
    /// `rows_skipped`; `None` when the app does not count them.
    fn rows_skipped(_st: &Self::State) -> Option<u64> {
        None
    }
    /// Start of clock `clock`, before straggling and before the initial evaluation: reads the work
    /// and the evaluation start from (LDA: the topic totals).
    fn begin_clock(&self, _st: &mut Self::State, _clock: i64) -> Result<()> {
        Ok(())
    }
    /// The work of clock `clock`.
    fn run_clock(&self, st: &mut Self::State, clock: i64) -> Result<()>;
    /// This worker's partial sums of the objective (every worker at the same clocks). `full` is
    /// false for intermediate samples, which may be estimated from a fixed subsample of the
    /// worker's data (an app whose evaluation costs a pass says so in its docs); it is true for
    /// the last clock, and for every sample when `--target` decides when to stop.
    fn evaluate(&self, st: &mut Self::State, full: bool) -> Result<Vec<f64>>;
    /// After the work of a clock that is not sampled when the next one is: for objectives that
    /// compare with the state one clock earlier (PageRank's change per iteration). A sampled
    /// clock's `evaluate` keeps that state itself. Its time counts as evaluation.
    fn before_sample(&self, _st: &mut Self::State) -> Result<()> {
        Ok(())
    }
    /// Writes whatever part of the model the app keeps outside the tables into them (MF's local
    /// user factors). Called during a clock whose end is a snapshot or checkpoint, and once after
    /// the last clock when the job writes snapshots, so snapshots and the final tables hold the
    /// whole model.
    fn sync_tables(&self, _st: &mut Self::State) -> Result<()> {
        Ok(())
    }
    /// What `start` needs to resume after this clock: JSON fields (an object, or null) and raw
    /// bytes, stored with the driver's own state in `SavedState`.
    fn save(&self, _st: &Self::State) -> (Value, Vec<u8>) {
        (Value::Null, Vec::new())
    }
    /// Writes this worker's part of `--output` and commits it (after the objective is final).
    fn write_output(&self, st: &mut Self::State, w: &mut Worker, out: &Output) -> Result<()>;
}

/// Builds the application `A` from its command-line arguments.
pub fn build<A: Iterative>(args: &[String]) -> Result<Box<dyn App>> {
    let alg = A::from_args(args)?;
    Ok(Box::new(Driver { obj: Objective::new(alg.objective_fn(), A::LOWER_IS_BETTER), alg, output: None }))
}

/// An [`Iterative`] algorithm as an [`App`].
pub struct Driver<A> {
    alg: A,
    obj: Arc<Objective>,
    output: Option<Output>,
}

impl<A: Iterative> App for Driver<A> {
    fn shape(&mut self, job: &ps_runtime::JobShape) -> Result<()> {
        self.alg.shape(job)
    }

    fn initialize(&mut self, ctx: &mut PsContext) -> Result<()> {
        self.alg.create_tables(ctx)?;
        Objective::create_tables(ctx)?;
        self.output = Output::for_job(ctx, self.alg.common())?;
        Ok(())
    }

    fn run_worker(&self, w: &mut Worker) -> Result<()> {
        let t = Instant::now();
        let first_worker = w.global_thread_id() == 0;
        let saved = SavedState::load(w, A::NAME)?;
        if let Some(s) = &saved {
            s.check_clocks_per_pass(A::NAME, self.alg.common().cpp())?;
        }
        let mut st = self.alg.start(w, saved.as_ref())?;
        if first_worker {
            self.obj.record_phase("load_s", t.elapsed().as_secs_f64());
            if let Some(n) = A::rows_skipped(&st) {
                self.obj.record_value("rows_skipped", n.into());
            }
        }
        let mut tracker = Tracker::new(w, self.obj.clone(), self.alg.common())?;
        let first = match &saved {
            Some(s) => {
                s.restore_tracker(&mut tracker)?;
                s.clock
            }
            None => 0,
        };
        self.run_clocks(w, &mut st, &mut tracker, first)?;
        if w.writes_snapshots() {
            self.alg.sync_tables(&mut st)?;
        }
        tracker.finish(w)?;
        if let Some(out) = &self.output {
            let t = Instant::now();
            self.alg.write_output(&mut st, w, out)?;
            if first_worker {
                self.obj.record_phase("output_s", t.elapsed().as_secs_f64());
            }
        }
        Ok(())
    }

    fn report(&self) -> Map<String, Value> {
        self.obj.report()
    }

    fn total_clocks(&self) -> Option<i64> {
        Some(self.alg.common().total_clocks())
    }

    fn locations(&self) -> Vec<(&'static str, String)> {
        let c = self.alg.common();
        std::iter::once(("--input", c.input.clone())).chain(c.output.clone().map(|o| ("--output", o))).collect()
    }
    fn default_consistency(&self) -> Option<ps_runtime::Consistency> {
        self.alg.consistency()
    }
    fn output_policy(&self) -> OutputPolicy {
        let c = self.alg.common();
        match (&c.output, c.overwrite) {
            (None, _) => OutputPolicy::NotNamed,
            (Some(_), false) => OutputPolicy::MustNotExist,
            (Some(_), true) => OutputPolicy::Replaced,
        }
    }
}

impl<A: Iterative> Driver<A> {
    /// Clocks `first..` to the end of the run, or until the target is reached.
    fn run_clocks(&self, w: &mut Worker, st: &mut A::State, tracker: &mut Tracker, first: i64) -> Result<()> {
        let (alg, c) = (&self.alg, self.alg.common());
        let last = c.total_clocks() - 1;
        for clock in first..c.total_clocks() {
            if tracker.poll(w)? {
                return Ok(());
            }
            alg.begin_clock(st, clock)?;
            // Clock 0 is only ever run by a fresh start: a checkpoint resumes after a clock.
            if clock == 0 && A::INITIAL_OBJECTIVE {
                tracker.evaluate(w, 0, || alg.evaluate(st, c.target.is_some()))?;
            }
            c.straggle(w.process_id(), w.num_processes(), clock);
            if w.thread_id() == 0 {
                self.obj.record_cpu(false, w.bytes_sent(), w.wan_bytes_sent());
            }
            alg.run_clock(st, clock)?;
            if c.is_sample_clock(clock) && clock != last {
                tracker.evaluate(w, clock + 1, || alg.evaluate(st, c.target.is_some()))?;
            } else if c.is_sample_clock(clock + 1) {
                tracker.measure(|| alg.before_sample(st))?;
            }
            if w.snapshot_due() {
                alg.sync_tables(st)?;
            }
            w.clock_saving(|buf| {
                let (meta, raw) = alg.save(st);
                SavedState::write(buf, clock + 1, c.cpp(), tracker, meta, &raw)
            })?;
        }
        // The last evaluation is of the model the job writes: after a barrier, so that it sees
        // every worker's updates of the last clocks (evaluated before them, with 4 workers the
        // held-out RMSE was up to 3% better than the written model's). The wait counts as
        // training: it is the other workers finishing their last clocks, and a job that
        // evaluated nothing would wait as long before its output. A job resumed from its last
        // checkpoint gets here directly.
        w.global_barrier()?;
        if w.thread_id() == 0 {
            self.obj.record_cpu(true, w.bytes_sent(), w.wan_bytes_sent());
        }
        tracker.evaluate(w, last + 1, || alg.evaluate(st, true))
    }
}
