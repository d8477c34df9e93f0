//! LazyTable's experiments (§5), on every workload of `--apps`.

use super::{cfg, wpc_args, write, Args, Run, Workload};
use ps_runtime::{Consistency, PrefetchPolicy};
use std::fmt::Write as _;

pub fn staleness(a: &Args) {
    let mut csv = String::from("app,model,wpc,slack,time_to_target_s,final_objective,train_s\n");
    for w in Workload::all(a) {
        let passes = w.quality_passes;
        let mut row = |model: &str, wpc: f64, s: u32, c: Consistency| {
            let r = w.run(
                a,
                cfg(c, s, PrefetchPolicy::Aggressive),
                &format!("--passes {passes} --samples 24 {}", wpc_args(wpc)),
            );
            writeln!(
                csv,
                "{},{model},{wpc},{s},{},{},{}",
                w.app,
                r.time_to_target(),
                r.final_value(),
                r.app("train_s")
            )
            .ok();
        };
        for wpc in [4.0, 2.0, 1.0, 0.5, 0.25, 0.125].into_iter().filter(|&x| x >= w.min_wpc) {
            row("A-BSP", wpc, 0, Consistency::Bsp);
        }
        // Slack at a quarter pass per clock where the app allows it, so that slack is a fraction
        // of a pass as in the paper's SSP runs.
        let wpc = w.min_wpc.max(0.25);
        for s in [0u32, 1, 2, 3, 5, 8] {
            row("SSP", wpc, s, Consistency::Ssp);
        }
    }
    write(a, "staleness", &csv);
}

pub fn stragglers(a: &Args) {
    let mut csv = String::new();
    for w in Workload::all(a) {
        straggle(a, &w, "delayed", 1.0, 12, &mut csv);
    }
    write(a, "stragglers", &csv);
}

/// LazyTable's background-work disruptions (PAPERS.md §7): in every clock each process is
/// disrupted (sleeps d) with probability 10%.
pub fn background(a: &Args) {
    let mut csv = String::new();
    for w in Workload::all(a) {
        // Many clocks, so that the 10% draws average out.
        straggle(a, &w, "random --straggler-p 0.1", 0.1, w.background_passes, &mut csv);
    }
    write(a, "background", &csv);
}

/// Mean pass time against the delay d for BSP, A-BSP, SSP and ESSP, under `--straggler <how>`
/// in which a process sleeps in a fraction `share` of its clocks (the ideal spreads that evenly).
fn straggle(a: &Args, w: &Workload, how: &str, share: f64, passes: i64, csv: &mut String) {
    if csv.is_empty() {
        csv.push_str("app,config,delay_s,pass_s,ideal_pass_s\n");
    }
    let configs: [(&str, Consistency, u32, f64); 4] = [
        ("BSP", Consistency::Bsp, 0, 1.0),
        ("A-BSP wpc=2", Consistency::Bsp, 0, 2.0),
        ("SSP s=3", Consistency::Ssp, 3, 1.0),
        ("ESSP s=3", Consistency::Essp, 3, 1.0),
    ];
    let mut base = std::collections::HashMap::new();
    for d in [0.0, 0.05, 0.1, 0.2, 0.3] {
        for (name, c, s, wpc) in configs {
            // --samples 1: objective evaluations would add their own synchronisation per clock.
            let extra =
                format!("--passes {passes} --samples 1 {} --straggler {how} --straggler-delay {d}", wpc_args(wpc));
            let r = w.run(a, cfg(c, s, PrefetchPolicy::Aggressive), &extra);
            let pass_s = r.app("train_s") / passes as f64;
            let b = *base.entry(name).or_insert(pass_s);
            // Ideal: the sleeping spread evenly over the processes' clocks (delayed: one of N
            // sleeps per clock; background: each sleeps in 10% of its clocks).
            let clocks_per_pass = 1.0 / wpc;
            let per_clock = if share < 1.0 { share } else { 1.0 / a.procs as f64 };
            writeln!(csv, "{},{name},{d},{pass_s},{}", w.app, b + d * clocks_per_pass * per_clock).ok();
        }
    }
}

/// LazyTable's Table 2: the same staleness bound of 3 passes reached with different clock sizes.
/// Bytes per pass are the difference between a 12-pass and a 4-pass run, divided by 8: what
/// loading costs (PageRank ships every node's in-edges to its owner before the first clock, about
/// 66 MB on the 1M-node graph, more than 12 passes of updates) and the first fetches of a cold
/// cache are in both runs and cancel out, so the figure is the steady per-pass traffic.
pub fn bytes(a: &Args) {
    let mut csv = String::from("app,config,bytes_sent_per_pass,bytes_recv_per_pass,final_objective\n");
    let (short, long) = (4.0, 12.0);
    for w in Workload::all(a) {
        for (wpc, s) in [(4.0, 0u32), (2.0, 1), (1.0, 3)] {
            let runs = [short, long].map(|passes| {
                w.run(
                    a,
                    cfg(Consistency::Ssp, s, PrefetchPolicy::Aggressive),
                    &format!("--passes {passes} --samples 2 {}", wpc_args(wpc)),
                )
            });
            // As in the paper, per client: "sent" is what clients send servers (updates, clocks,
            // fetches), "received" what servers send clients (rows, pushes, acks).
            let served = |r: &Run| r.sum(|p| p.server_bytes_sent as f64);
            let sent = |r: &Run| r.sum(|p| p.bytes_sent as f64) - served(r);
            let per = |f: &dyn Fn(&Run) -> f64| (f(&runs[1]) - f(&runs[0])) / a.procs as f64 / (long - short);
            writeln!(csv, "{},wpc={wpc} s={s},{},{},{}", w.app, per(&sent), per(&served), runs[1].final_value()).ok();
        }
    }
    write(a, "bytes", &csv);
}

/// Prefetching (LazyTable Fig. 9): compute and wait per pass at slack 1 on every workload. The
/// paper's clocks were a pass of seconds; here a pass of MF takes milliseconds, so MF and LDA run
/// a quarter pass a clock (as in the slack sweep) to give the prefetcher misses to hide. All three
/// apps also ask for their next rows themselves (`refresh`); MF runs with and without that, so
/// the runtime's automatic prefetcher is measured alone too.
pub fn prefetch(a: &Args) {
    let mut csv = String::from("app,refresh_ahead,prefetch,compute_s_per_pass,wait_s_per_pass,get_misses\n");
    let passes = 10.0;
    for w in Workload::all(a) {
        let ahead: &[bool] = if w.app == "mf" { &[false, true] } else { &[true] };
        for &refresh in ahead {
            for (name, p) in [
                ("off", PrefetchPolicy::Off),
                ("conservative", PrefetchPolicy::Conservative),
                ("aggressive", PrefetchPolicy::Aggressive),
            ] {
                let mut extra = format!("--passes {passes} --samples 1 {}", wpc_args(w.min_wpc.max(0.25)));
                if !refresh {
                    extra.push_str(" --refresh-ahead false");
                }
                let r = w.run(a, cfg(Consistency::Ssp, 1, p), &extra);
                writeln!(
                    csv,
                    "{},{refresh},{name},{},{},{}",
                    w.app,
                    r.mean(|s| s.compute_s) / passes,
                    r.mean(|s| s.wait_s) / passes,
                    r.sum(|s| s.get_misses as f64)
                )
                .ok();
            }
        }
    }
    write(a, "prefetch", &csv);
}
