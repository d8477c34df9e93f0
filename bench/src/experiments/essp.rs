//! The ESSP paper's experiments: SSP-pull against SSP-push (ESSP).

use super::{cfg, write, Args, Run, Workload};
use ps_runtime::{Consistency, PrefetchPolicy};
use std::collections::BTreeMap;
use std::fmt::Write as _;

const MODELS: [(&str, Consistency); 2] = [("SSP", Consistency::Ssp), ("ESSP", Consistency::Essp)];

pub fn essp(a: &Args) {
    profile(a);
    convergence(a);
    robustness(a);
}

/// Fig. 2 left: the observed staleness of reads, split into delivery lag and the reader's lead
/// over the slowest worker, in the paper's setup as far as MovieLens-100K allows (rank 100, 1% of
/// the data per clock).
fn profile(a: &Args) {
    let mut hist = String::from("model,staleness,count\n");
    let mut profile = String::from("model,measure,value,count\n");
    let paper = Workload::mf(&Args { rank: 100, ..a.clone() });
    for (name, c) in MODELS {
        let mut conf = cfg(c, 3, PrefetchPolicy::Off);
        conf.staleness_profile = true;
        let r = paper.run(a, conf, "--passes 5 --samples 1 --clocks-per-pass 100");
        let mut h = BTreeMap::new();
        let mut prof = BTreeMap::new();
        for p in &r.stats {
            for (k, v) in &p.staleness_hist {
                *h.entry(*k).or_insert(0u64) += v;
            }
            let sp = p.staleness_profile.as_ref().expect("profiled");
            for (measure, m) in [("delivery_lag", &sp.delivery_lag), ("ahead_of_slowest", &sp.ahead_of_slowest)] {
                for (k, v) in m {
                    *prof.entry((measure, *k)).or_insert(0u64) += v;
                }
            }
        }
        for (k, v) in h {
            writeln!(hist, "{name},{k},{v}").ok();
        }
        for ((measure, k), v) in prof {
            writeln!(profile, "{name},{measure},{k},{v}").ok();
        }
    }
    write(a, "essp_staleness_hist", &hist);
    write(a, "essp_staleness_profile", &profile);
}

/// Fig. 3 and Fig. 2 right: the objective against clocks and seconds for MF and LDA under SSP and
/// ESSP across slack, and each clock's split into computation and waiting (communication and
/// synchronisation: all the time a worker is not computing).
fn convergence(a: &Args) {
    let mut curves = String::from("app,model,slack,clock,pass,time_s,objective\n");
    let mut split = String::from("app,model,slack,compute_s_per_clock,wait_s_per_clock,train_s,final_objective\n");
    const CPP: f64 = 4.0;
    for w in [Workload::mf(a), Workload::lda(a)] {
        for (name, c) in MODELS {
            for s in [0u32, 1, 3, 7] {
                let r = w.run(a, cfg(c, s, PrefetchPolicy::Aggressive), "--passes 12 --samples 24 --clocks-per-pass 4");
                for (clock, t, v) in r.objective() {
                    // Evaluations happen at the end of a clock; clock -1 is the start.
                    writeln!(curves, "{},{name},{s},{clock},{},{t},{v}", w.app, (clock + 1.0) / CPP).ok();
                }
                let per_clock = |f: fn(&ps_runtime::ProcessStats) -> f64| r.mean(|p| f(p) / p.clocks.max(1) as f64);
                writeln!(
                    split,
                    "{},{name},{s},{},{},{},{}",
                    w.app,
                    per_clock(|p| p.compute_s),
                    per_clock(|p| p.wait_s),
                    r.app("train_s"),
                    r.final_value()
                )
                .ok();
            }
        }
    }
    write(a, "essp_convergence", &curves);
    write(a, "essp_breakdown", &split);
}

/// Fig. 3 (MF): final training RMSE against slack, for several step sizes. The paper's claim is
/// that SSP diverges at large slack where ESSP does not; a diverged run has an empty objective.
fn robustness(a: &Args) {
    let mut robust = String::from("model,lr,slack,final_rmse,train_s\n");
    let w = Workload::mf(a);
    for lr in [0.01, 0.02, 0.04] {
        for (name, c) in MODELS {
            for s in [0u32, 3, 7, 15, 31] {
                let r: Run = w.run(
                    a,
                    cfg(c, s, PrefetchPolicy::Off),
                    &format!("--passes 12 --samples 2 --clocks-per-pass 8 --lr {lr}"),
                );
                writeln!(robust, "{name},{lr},{s},{},{}", r.final_value(), r.app("train_s")).ok();
            }
        }
    }
    write(a, "essp_robustness", &robust);
}
