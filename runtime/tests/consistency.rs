//! The consistency guarantee as a property: for random job shapes and random per-clock delays,
//! every read at clock c with staleness s sees every update of every thread from clocks <= c-s-1
//! and all of the reader's own updates (checked exactly by the demo app on every read), in both
//! pull (SSP) and push (ESSP) modes. Clock numbering: see `ps_runtime::Worker`.

mod common;

use common::{demo, summary};
use proptest::prelude::*;
use ps_runtime::{
    App, Consistency, DenseRow, PrefetchPolicy, ProcessStats, PsContext, PsError, Result, RuntimeConfig, TableConfig,
    Worker,
};
use std::sync::RwLock;

/// Jobs of this file run in parallel on a small machine. The one test that compares
/// timing-dependent freshness (ESSP against SSP) takes the machine alone, so jobs of other tests
/// starving its push threads cannot decide its outcome; the rest share it.
static MACHINE: RwLock<()> = RwLock::new(());

fn run_cluster(n: usize, cfg: &RuntimeConfig, app: impl Fn(usize) -> Box<dyn App>) -> Vec<Result<ProcessStats>> {
    let _shared = MACHINE.read().unwrap_or_else(|e| e.into_inner());
    common::run_cluster(n, cfg, app)
}

fn cfg(consistency: Consistency, staleness: u32, threads: usize, prefetch: PrefetchPolicy) -> RuntimeConfig {
    RuntimeConfig { consistency, staleness, threads, prefetch, ..RuntimeConfig::default() }
}

/// One randomised job shape.
struct Shape {
    consistency: Consistency,
    s: u32,
    procs: usize,
    threads: usize,
    clocks: i64,
    jitter: u64,
    seed: u64,
    prefetch: PrefetchPolicy,
    /// `demo --window`: columns reused every W clocks (None: one column per clock).
    window: Option<u64>,
}

fn check_job(j: Shape) {
    let mut args = format!("--clocks {} --jitter-ms {} --seed {} --shared-rows 3", j.clocks, j.jitter, j.seed);
    if let Some(w) = j.window {
        args += &format!(" --window {w}");
    }
    let res = run_cluster(j.procs, &cfg(j.consistency, j.s, j.threads, j.prefetch), |_| demo(&args));
    let (mean, _, reads) = summary(&res);
    assert!(reads > 0);
    // Observed staleness (data age - reader clock) must lie in [-s-1, -1].
    for r in &res {
        for k in r.as_ref().unwrap().staleness_hist.keys() {
            assert!(*k <= -1 && *k >= -(j.s as i64) - 1, "staleness {k} outside [-{}-1, -1]", j.s);
        }
    }
    assert!(mean <= -1.0);
}

fn prefetch_strategy() -> impl Strategy<Value = PrefetchPolicy> {
    prop_oneof![Just(PrefetchPolicy::Off), Just(PrefetchPolicy::Conservative), Just(PrefetchPolicy::Aggressive)]
}

proptest! {
    // Failing shapes are persisted (proptest-regressions/) and replayed first on later runs.
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn ssp_pull_guarantee(s in prop::sample::select(vec![0u32, 1, 3]), procs in 3usize..=4, threads in 2usize..=3,
                          clocks in 8i64..20, jitter in 0u64..4, seed in any::<u64>(), pf in prefetch_strategy(),
                          window in prop::option::of(2u64..6)) {
        check_job(Shape { consistency: Consistency::Ssp, s, procs, threads, clocks, jitter, seed, prefetch: pf, window });
    }

    #[test]
    fn essp_push_guarantee(s in prop::sample::select(vec![0u32, 1, 3]), procs in 3usize..=4, threads in 2usize..=3,
                           clocks in 8i64..20, jitter in 0u64..4, seed in any::<u64>(), window in prop::option::of(2u64..6)) {
        check_job(Shape { consistency: Consistency::Essp, s, procs, threads, clocks, jitter, seed, prefetch: PrefetchPolicy::Aggressive, window });
    }
}

/// Every (s, mode) pair named by the issue runs at least once with uneven workers.
#[test]
fn every_staleness_in_both_modes() {
    for s in [0, 1, 3] {
        for c in [Consistency::Ssp, Consistency::Essp] {
            check_job(Shape {
                consistency: c,
                s,
                procs: 3,
                threads: 2,
                clocks: 12,
                jitter: 3,
                seed: 7 + s as u64,
                prefetch: PrefetchPolicy::Aggressive,
                window: None,
            });
        }
    }
}

#[test]
fn bsp_observes_exactly_previous_clock() {
    let res = run_cluster(3, &cfg(Consistency::Bsp, 5, 2, PrefetchPolicy::Off), |_| demo("--clocks 10 --jitter-ms 2"));
    for r in res {
        let h = r.unwrap().staleness_hist;
        assert_eq!(h.keys().copied().collect::<Vec<_>>(), vec![-1], "BSP reads must be exactly one clock old");
    }
}

fn caught(res: &[Result<ProcessStats>]) -> bool {
    res.iter().any(|r| match r {
        Err(PsError::Violation(_)) => true,
        Err(PsError::Aborted(m)) => m.contains("consistency violation"),
        _ => false,
    })
}

/// Runs a job with a deliberate fault and asserts that the demo's checks catch it. Workers are
/// skewed (global thread g sleeps 4g ms more per clock), so fast threads always reach the bound
/// and read rows whose slowest updates are exactly one clock too old if the bound is off by one.
fn assert_fault_caught(what: &str, set: impl Fn(&mut RuntimeConfig)) {
    assert_fault_caught_by(what, "", set)
}

fn assert_fault_caught_by(what: &str, extra: &str, set: impl Fn(&mut RuntimeConfig)) {
    for c in [Consistency::Ssp, Consistency::Essp] {
        for s in [0, 2] {
            let mut bad = cfg(c, s, 2, PrefetchPolicy::Off);
            set(&mut bad);
            let res =
                run_cluster(3, &bad, |_| demo(&format!("--clocks 40 --delay-ms 1 --skew-ms 4 --jitter-ms 1 {extra}")));
            assert!(caught(&res), "{c:?}, staleness {s}: {what} went unnoticed: {res:?}");
        }
    }
}

/// The checks can fail: servers that overstate data age break the guarantee, and the demo
/// catches it on some read, down to an overstatement of a single clock.
#[test]
fn forced_stale_replies_are_caught() {
    assert_fault_caught("servers overstating data age by 2", |c| c.fault.overstate_age = 2);
    assert_fault_caught("servers overstating data age by 1", |c| c.fault.overstate_age = 1);
}

/// The windowed demo (columns reused every W clocks, as the soak runs it) still catches an
/// off-by-one: its per-column counts carry the same rule.
#[test]
fn windowed_checks_catch_an_off_by_one() {
    assert_fault_caught_by("servers overstating data age by 1 (window 3)", "--window 3", |c| c.fault.overstate_age = 1);
}

/// A client whose bound is `c - s - 2` instead of `c - s - 1` (an off-by-one) is caught too.
#[test]
fn client_bound_off_by_one_is_caught() {
    assert_fault_caught("a client accepting c - s - 2", |c| c.fault.loosen_client_bound = 1);
}

/// Fault injection cannot be switched on from a job's configuration: only tests set it.
#[test]
fn fault_injection_is_refused_in_configuration_files() {
    let e = RuntimeConfig::from_json(r#"{"fault": {"overstate_age": 1}}"#, "conf.json").unwrap_err().to_string();
    assert!(e.contains("conf.json") && e.contains("fault") && e.contains("test suite only"), "{e}");
    let job = r#"{"runtime": {"staleness": 2, "fault": {}}, "app": "demo", "hostfile": "h", "secret_file": "s", "stats_dir": "."}"#;
    let e = ps_runtime::JobConfig::parse(job, "job.json").unwrap_err().to_string();
    assert!(e.contains("job.json") && e.contains("fault"), "{e}");
    // Everything else still loads, and the loaded configuration has no fault set.
    let ok = ps_runtime::JobConfig::parse(&job.replace(r#", "fault": {}"#, ""), "job.json").unwrap();
    assert_eq!((ok.runtime.staleness, ok.runtime.fault.overstate_age), (2, 0));
    assert!(!serde_json::to_string(&ok.runtime).unwrap().contains("fault"));
}

/// After `global_barrier()` every thread reads every update made before it (checked by the demo
/// on every row after each barrier), even with large staleness and uneven threads.
#[test]
fn global_barrier_makes_all_updates_visible() {
    for c in [Consistency::Ssp, Consistency::Essp] {
        let res =
            run_cluster(3, &cfg(c, 5, 2, PrefetchPolicy::Off), |_| demo("--clocks 24 --jitter-ms 4 --barrier-every 6"));
        for r in res {
            let st = r.unwrap();
            assert_eq!(st.clocks, 24);
        }
    }
}

/// ESSP vs SSP (pull, as in the ESSP paper's baseline) on the same balanced workload: pushes keep
/// caches filled, so far fewer reads block. The mean clock differential (data age minus reader
/// clock) is printed but not compared: ESSP workers that block less run ahead to the edge of the
/// slack window, which lowers it (a clean-clone CI run saw ESSP -2.71 against SSP -2.50), so it
/// is not a measure of freshness; issue 15 asks for the delivery lag, which is.
#[test]
fn essp_blocks_less_than_ssp() {
    let args = "--clocks 40 --delay-ms 3 --shared-rows 4";
    let _alone = MACHINE.write().unwrap_or_else(|e| e.into_inner());
    let ssp = common::run_cluster(3, &cfg(Consistency::Ssp, 3, 2, PrefetchPolicy::Off), |_| demo(args));
    let essp = common::run_cluster(3, &cfg(Consistency::Essp, 3, 2, PrefetchPolicy::Off), |_| demo(args));
    let (ssp_mean, ssp_blocked, n1) = summary(&ssp);
    let (essp_mean, essp_blocked, n2) = summary(&essp);
    assert_eq!(n1, n2, "same workload, same number of reads");
    eprintln!("ssp: mean staleness {ssp_mean:.3}, blocked {ssp_blocked}; essp: {essp_mean:.3}, {essp_blocked}");
    assert!(essp_blocked < ssp_blocked, "ESSP blocked {essp_blocked} times, SSP {ssp_blocked}");
}

/// `staleness_profile` splits every read's staleness d (reader clock - data age) into delivery
/// lag (how much older than what the servers could serve) and the reader's lead over the slowest
/// worker: both histograms count every read, their parts add up to at least d (each part is
/// clamped at 0, so a lagging local estimate can only add), and deliberately uneven workers
/// (thread g sleeps 4g ms more per clock) show fast readers ahead of the slowest.
#[test]
fn the_staleness_profile_accounts_for_every_read() {
    for c in [Consistency::Ssp, Consistency::Essp] {
        let mut on = cfg(c, 2, 2, PrefetchPolicy::Off);
        on.staleness_profile = true;
        let res = run_cluster(3, &on, |_| demo("--clocks 30 --delay-ms 1 --skew-ms 4"));
        for r in &res {
            let st = r.as_ref().expect("process failed");
            let p = st.staleness_profile.as_ref().expect("a profile");
            let (lag, ahead): (u64, u64) = (p.delivery_lag.values().sum(), p.ahead_of_slowest.values().sum());
            assert_eq!((lag, ahead), (st.gets, st.gets), "{c:?}: every read in both histograms");
            let parts: i64 = p.delivery_lag.iter().chain(&p.ahead_of_slowest).map(|(k, n)| k * *n as i64).sum::<i64>()
                + st.gets as i64;
            let d: i64 = st.staleness_hist.iter().map(|(k, n)| -k * *n as i64).sum();
            assert!(parts >= d, "{c:?}: lag + ahead + 1 summed {parts} < staleness summed {d}");
        }
        let ahead = res.iter().flat_map(|r| r.as_ref().unwrap().staleness_profile.clone().unwrap().ahead_of_slowest);
        assert!(ahead.filter(|(k, _)| *k >= 1).count() > 0, "{c:?}: no reader ever ahead of the slowest worker");
    }
    let off = run_cluster(2, &cfg(Consistency::Ssp, 1, 1, PrefetchPolicy::Off), |_| demo("--clocks 5"));
    assert!(off.iter().all(|r| r.as_ref().unwrap().staleness_profile.is_none()), "profiled without asking");
}

/// Process 0 reads a row early in its clock 1; only then does process 1 complete clock 0, whose
/// update of the row the server pushes. Process 0's later reads in the same clock see it (and
/// still see process 0's own changes of that clock exactly once), instead of the copy its thread
/// cache took at the clock's first read.
struct LatePush;

impl App for LatePush {
    fn initialize(&mut self, ctx: &mut PsContext) -> Result<()> {
        ctx.create_table(TableConfig::new(0, "late", "dense_f64", 1))
    }

    fn run_worker(&self, w: &mut Worker) -> Result<()> {
        let mut t = w.table::<DenseRow<f64>>(0)?;
        let me = w.process_id();
        t.get(0)?; // subscribes the row
        if me == 0 {
            w.clock()?;
            // Clock 1: the first read copies the row as of before process 1's update.
            let first = t.get(0)?[0];
            t.get_mut(0)?[0] += 10.0; // in place: read-my-updates across the refresh below
            w.exchange(vec![Vec::new(), Vec::new()])?; // "read": process 1 may now clock
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            let mut seen = t.get(0)?[0];
            while seen != 11.0 && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(1));
                seen = t.get(0)?[0];
            }
            if first != 0.0 || seen != 11.0 {
                return Err(PsError::Violation(format!("clock 1 read {first}, then {seen} (want 0, then 11)")));
            }
        } else {
            t.inc_col(0, 0, 1.0)?;
            w.exchange(vec![Vec::new(), Vec::new()])?;
            w.clock()?;
        }
        w.clock()?;
        w.global_barrier()?;
        let end = t.get(0)?[0];
        if end != 11.0 {
            return Err(PsError::Violation(format!("process {me} read {end} after the barrier (want 11)")));
        }
        Ok(())
    }
}

#[test]
fn essp_reads_see_a_push_within_the_clock_it_lands_in() {
    let cfg = cfg(Consistency::Essp, 1, 1, PrefetchPolicy::Off);
    for r in run_cluster(2, &cfg, |_| Box::new(LatePush)) {
        r.expect("process failed");
    }
}
