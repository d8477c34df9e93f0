//! Each application converges on small generated data (asserting the objective itself) and writes
//! complete, committed outputs.

mod common;

use common::run_cluster;
use ps_apps as apps;
use ps_runtime::{gen, ProcessStats, RuntimeConfig};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ps-apps-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(app: &str, args: &[String], procs: usize, cfg: &RuntimeConfig) -> Vec<ProcessStats> {
    run_cluster(procs, cfg, |_| apps::build(app, args).unwrap()).into_iter().map(|r| r.unwrap()).collect()
}

/// The objective records of process 0: (clock, value, extra key).
fn objective(stats: &[ProcessStats], key: &str) -> Vec<(i64, f64)> {
    let recs = stats[0].app.get("objective").and_then(Value::as_array).expect("objective reported");
    recs.iter().map(|r| (r["clock"].as_i64().unwrap(), r[key].as_f64().unwrap())).collect()
}

/// A number of seconds the app reported in process 0's stats.
fn stats_secs(st: &ProcessStats, key: &str) -> f64 {
    st.app.get(key).and_then(Value::as_f64).unwrap_or_else(|| panic!("{key} reported"))
}

fn args(s: String) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn mf_converges_and_writes_factors() {
    let d = tmp("mf");
    let data = d.join("r.tsv");
    let spec = gen::RatingsSpec {
        users: 800,
        items: 400,
        ratings: 40_000,
        rank: 5,
        noise: 0.3,
        item_skew: 0.5,
        user_skew: 0.3,
        seed: 3,
    };
    gen::ratings(&spec, &data).unwrap();
    let out = d.join("out");
    let a = args(format!(
        "--input {} --output {} --passes 20 --lr 0.03 --rank 10 --test-fraction 0.2 --samples 5",
        data.display(),
        out.display()
    ));
    let st = run("mf", &a, 2, &RuntimeConfig { threads: 2, ..RuntimeConfig::default() });
    let rmse = objective(&st, "rmse");
    let test = objective(&st, "test_rmse");
    eprintln!("rmse {rmse:?}\ntest {test:?}");
    assert_eq!(rmse.len(), 6, "initial + 5 samples");
    // 2 processes x 2 threads at staleness 1: 4 item slices rotating among the processes (each
    // shared by the process's threads), one clock each.
    assert_eq!(rmse.last().unwrap().0, 20 * 4, "20 passes at the default processes x (staleness + 1) clocks");
    // Worker 0's wall time splits into set-up, training, evaluations and output.
    let secs = |k: &str| stats_secs(&st[0], k);
    let phases = ["load_s", "train_s", "eval_s", "output_s"].map(secs);
    assert!(phases.iter().all(|&s| s > 0.0), "{phases:?}");
    assert!(phases.iter().sum::<f64>() <= st[0].wall_s, "{phases:?} within {}", st[0].wall_s);
    let (first, last) = (rmse[0].1, rmse.last().unwrap().1);
    assert!(first > 0.7, "initial RMSE {first}: the mean alone should be far off");
    // The initial model predicts the mean (RMSE = the ratings' spread, about 0.76 here); the
    // planted noise and rounding put the floor near 0.42.
    assert!(last < 0.55, "final training RMSE {last}");
    assert!(test.last().unwrap().1 < 0.65, "final held-out RMSE {:?}", test.last());
    assert!(rmse.windows(2).all(|w| w[1].1 <= w[0].1 * 1.02), "RMSE does not fall: {rmse:?}");
    // Traffic splits by role: each server sends the other process item rows, each client its
    // updates and clocks.
    for p in &st {
        assert!(0 < p.server_bytes_sent && p.server_bytes_sent < p.bytes_sent, "{p:?}");
    }
    // Complete output: every user and item exactly once, rank values each, and _SUCCESS.
    assert!(out.join("_SUCCESS").exists());
    assert!(!out.join("_temporary").exists());
    for (name, n) in [("user_factors", spec.users), ("item_factors", spec.items)] {
        let mut ids = Vec::new();
        for f in std::fs::read_dir(out.join(name)).unwrap() {
            for line in std::fs::read_to_string(f.unwrap().path()).unwrap().lines() {
                let cols: Vec<&str> = line.split('\t').collect();
                assert_eq!(cols.len(), 11, "{line}");
                assert!(cols[1..].iter().all(|v| v.parse::<f32>().unwrap().is_finite()));
                ids.push(cols[0].parse::<u32>().unwrap());
            }
        }
        let total = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), total, "{name}: an id was written twice");
        assert!(ids.len() <= n && ids.len() > n * 9 / 10, "{name}: {} ids", ids.len());
    }
    // Refuses to overwrite.
    let res = run_cluster(1, &RuntimeConfig::default(), |_| apps::build("mf", &a).unwrap());
    assert!(res[0].as_ref().unwrap_err().to_string().contains("exists"));
    let _ = std::fs::remove_dir_all(&d);
}

/// An `.npy` file's shape and little-endian payload (the header is checked, not trusted).
fn read_npy(path: &std::path::Path, descr: &str) -> (Vec<usize>, Vec<u8>) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..8], b"\x93NUMPY\x01\x00", "{}", path.display());
    let hlen = u16::from_le_bytes([b[8], b[9]]) as usize;
    assert_eq!((10 + hlen) % 64, 0, "data aligned");
    let dict = std::str::from_utf8(&b[10..10 + hlen]).unwrap();
    assert!(dict.contains(&format!("'descr': '{descr}'")) && dict.contains("'fortran_order': False"), "{dict}");
    let shape = dict.split("'shape': (").nth(1).unwrap().split(')').next().unwrap();
    let shape: Vec<usize> =
        shape.split(',').filter(|x| !x.trim().is_empty()).map(|x| x.trim().parse().unwrap()).collect();
    (shape, b[10 + hlen..].to_vec())
}

#[test]
fn mf_binary_output_holds_the_same_factors_as_text() {
    let d = tmp("mf-npy");
    let data = d.join("r.tsv");
    let spec = gen::RatingsSpec {
        users: 300,
        items: 100,
        ratings: 6000,
        rank: 3,
        noise: 0.3,
        item_skew: 0.5,
        user_skew: 0.3,
        seed: 5,
    };
    gen::ratings(&spec, &data).unwrap();
    let job = |format: &str| {
        let out = d.join(format);
        let a = args(format!(
            "--input {} --output {} --passes 3 --rank 4 --samples 1 --output-format {format}",
            data.display(),
            out.display()
        ));
        run("mf", &a, 1, &RuntimeConfig { threads: 1, ..RuntimeConfig::default() });
        out
    };
    let (text, bin) = (job("text"), job("binary"));
    let mut from_text = std::collections::BTreeMap::new();
    for line in std::fs::read_to_string(text.join("user_factors/part-00000")).unwrap().lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        let v: Vec<f32> = cols[1..].iter().map(|x| x.parse().unwrap()).collect();
        from_text.insert(cols[0].parse::<u64>().unwrap(), v);
    }
    let (shape, vals) = read_npy(&bin.join("user_factors/part-00000.npy"), "<f4");
    let (id_shape, ids) = read_npy(&bin.join("user_factors/part-00000.ids.npy"), "<u8");
    assert_eq!(shape, vec![from_text.len(), 4]);
    assert_eq!(id_shape, vec![from_text.len()]);
    assert_eq!(vals.len(), from_text.len() * 16);
    for (k, id) in ids.chunks_exact(8).enumerate() {
        let id = u64::from_le_bytes(id.try_into().unwrap());
        let row: Vec<f32> =
            vals[k * 16..(k + 1) * 16].chunks_exact(4).map(|x| f32::from_le_bytes(x.try_into().unwrap())).collect();
        let want = &from_text[&id];
        // One worker and a fixed seed: the same model up to the order float sums were taken in.
        assert!(
            row.iter().zip(want).all(|(a, b)| (a - b).abs() <= 1e-4 * b.abs().max(1.0)),
            "{id}: {row:?} vs {want:?}"
        );
    }
    assert!(bin.join("_SUCCESS").exists() && bin.join("global_mean/part-00000").exists());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn mf_target_stops_early() {
    let d = tmp("mf-target");
    let data = d.join("r.tsv");
    let spec = gen::RatingsSpec {
        users: 300,
        items: 200,
        ratings: 15_000,
        rank: 3,
        noise: 0.2,
        item_skew: 0.3,
        user_skew: 0.3,
        seed: 5,
    };
    gen::ratings(&spec, &data).unwrap();
    let a = args(format!("--input {} --passes 50 --samples 50 --lr 0.03 --target 0.5", data.display()));
    let st = run("mf", &a, 2, &RuntimeConfig::default());
    let rmse = objective(&st, "rmse");
    let last = rmse.last().unwrap();
    assert!(rmse[0].1 > 0.8, "{rmse:?}");
    assert!(last.0 < 400, "did not stop early: {rmse:?}");
    assert!(rmse.iter().any(|r| r.1 <= 0.5), "{rmse:?}");
    let _ = std::fs::remove_dir_all(&d);
}

/// MF's item slices rotate among processes and the threads of a process take turns at its
/// slice's sub-slices (`mf_shared`): on skewed items the held-out RMSE after the same passes is
/// that of one worker at every layout, up to 16 workers (a lost, doubled or overlapping update of a popular item
/// moves it by far more than 1%), and threads add no clocks to a pass.
#[test]
fn mf_answer_does_not_depend_on_processes_or_threads() {
    let d = tmp("mf-shapes");
    let data = d.join("r.tsv");
    let spec = gen::RatingsSpec {
        users: 1500,
        items: 600,
        ratings: 60_000,
        rank: 5,
        noise: 0.3,
        item_skew: 0.9,
        user_skew: 0.3,
        seed: 8,
    };
    gen::ratings(&spec, &data).unwrap();
    let a = args(format!("--input {} --passes 10 --rank 10 --test-fraction 0.2 --samples 1", data.display()));
    let mut finals = Vec::new();
    for (procs, threads) in [(1, 1), (1, 3), (3, 1), (2, 2), (2, 8), (1, 16)] {
        let st = run("mf", &a, procs, &RuntimeConfig { threads, ..RuntimeConfig::default() });
        let (clocks, rmse) = *objective(&st, "test_rmse").last().unwrap();
        assert!(rmse.is_finite(), "{procs} x {threads}: {rmse}");
        for p in &st {
            // Turns at the shared slice are waits, and only threads of one process take turns.
            let h = p.handoff_wait_s;
            assert!((0.0..=p.wait_s + 1e-9).contains(&h), "{procs} x {threads}: hand-offs {h} s of {} s", p.wait_s);
            assert!(threads > 1 || h == 0.0, "{procs} x 1: {h} s waiting for other threads");
        }
        finals.push(((procs, threads), clocks, rmse));
    }
    eprintln!("(shape, clocks, held-out RMSE) after 10 passes: {finals:?}");
    let (_, one_clocks, one) = finals[0];
    assert!(one < 1.0, "1 x 1 did not learn: {one}");
    for &(shape, clocks, rmse) in &finals[1..] {
        assert!((rmse / one - 1.0).abs() < 0.01, "{shape:?}: {rmse} against {one} at 1 x 1");
        // One process holds the whole model (a clock a pass); more rotate P x (staleness 1 + 1)
        // slices, a clock each.
        let per_pass = if shape.0 == 1 { 1 } else { 2 * shape.0 as i64 };
        assert_eq!(clocks / one_clocks, per_pass, "{shape:?}: clocks per pass follow the processes");
    }
    // Under BSP one process had one slice, taken for no rotation: its threads trained
    // data-parallel and diverged (NaN at 1 x 8 on skewed items).
    let bsp =
        RuntimeConfig { consistency: ps_runtime::Consistency::Bsp, staleness: 0, threads: 8, ..Default::default() };
    let (clocks, rmse) = *objective(&run("mf", &a, 1, &bsp), "test_rmse").last().unwrap();
    assert!((rmse / one - 1.0).abs() < 0.01, "1 x 8 under BSP: {rmse} against {one} at 1 x 1");
    assert_eq!(clocks, one_clocks, "1 x 8 under BSP holds the whole model a clock a pass, as 1 x 1 does");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn lda_likelihood_rises_and_topics_are_written() {
    let d = tmp("lda");
    let spec = gen::CorpusSpec {
        docs: 300,
        vocab: 400,
        topics: 5,
        doc_len: 60,
        alpha: 0.1,
        beta: 0.05,
        seed: 2,
        word_skew: 0.0,
    };
    gen::corpus(&spec, &d, "t").unwrap();
    let out = d.join("out");
    // 2 processes x 2 threads, staleness 1: the docs schedule takes 4 clocks a pass as asked;
    // the words schedule rotates 2 x 2 slices among the processes, so 8 clocks are 2 parts.
    for schedule in ["docs --clocks-per-pass 4", "words --clocks-per-pass 8"] {
        let _ = std::fs::remove_dir_all(&out);
        lda_run_checks(&d, &out, schedule);
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The rotating schedule's answer does not depend on how the workers are laid out: threads of
/// one process share their process's slice (`lda_shared`), processes rotate slices, every token
/// is counted exactly once in the model, and the log-likelihood after the same sweeps is that of
/// one worker up to the chains' own spread (about 1-2% between runs of one shape at this size;
/// a lost or doubled update moves it far more).
#[test]
fn lda_answer_does_not_depend_on_processes_or_threads() {
    let d = tmp("lda-shapes");
    let spec = gen::CorpusSpec {
        docs: 2000,
        vocab: 3000,
        topics: 20,
        doc_len: 100,
        alpha: 0.1,
        beta: 0.05,
        seed: 3,
        word_skew: 0.0,
    };
    gen::corpus(&spec, &d, "t").unwrap();
    let out = d.join("out");
    let mut finals = Vec::new();
    let bsp = ps_runtime::Consistency::Bsp;
    for (procs, threads, consistency) in
        [(1, 1, None), (1, 3, None), (3, 1, None), (2, 2, None), (1, 8, None), (1, 4, Some(bsp))]
    {
        let _ = std::fs::remove_dir_all(&out);
        let a = args(format!(
            "--input {} --output {} --topics 20 --passes 20 --samples 1",
            d.join("docword.t.txt").display(),
            out.display()
        ));
        let mut cfg = RuntimeConfig { threads, ..RuntimeConfig::default() };
        if let Some(c) = consistency {
            (cfg.consistency, cfg.staleness) = (c, 0);
        }
        let st = run("lda", &a, procs, &cfg);
        assert_eq!(counted_tokens(&out), total_tokens(&d), "{procs} x {threads}");
        let (clock, ll) = *objective(&st, "loglik_per_token").last().unwrap();
        if procs == 1 {
            // One process holds the whole vocabulary, a clock a sweep, under any bound (under BSP
            // its threads sampled data-parallel: 4 clocks a sweep, every word in every thread).
            assert_eq!(clock, 20, "{procs} x {threads} {consistency:?}: clocks");
        }
        finals.push(((procs, threads), ll));
    }
    eprintln!("log-likelihood per token after 20 sweeps: {finals:?}");
    let one = finals[0].1;
    for &(shape, ll) in &finals[1..] {
        assert!((ll / one - 1.0).abs() < 0.03, "{shape:?}: {ll} against {one} at 1 x 1");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Tokens of the corpus `d/docword.t.txt`.
fn total_tokens(d: &Path) -> u64 {
    std::fs::read_to_string(d.join("docword.t.txt"))
        .unwrap()
        .lines()
        .skip(3)
        .map(|l| l.split_whitespace().nth(2).unwrap().parse::<u64>().unwrap())
        .sum()
}

/// Tokens counted in the `word_topic` output under `out`.
fn counted_tokens(out: &Path) -> u64 {
    let mut counted = 0u64;
    for f in std::fs::read_dir(out.join("word_topic")).unwrap() {
        for line in std::fs::read_to_string(f.unwrap().path()).unwrap().lines() {
            counted +=
                line.split('\t').skip(1).map(|tc| tc.split(':').nth(1).unwrap().parse::<u64>().unwrap()).sum::<u64>();
        }
    }
    counted
}

fn lda_run_checks(d: &Path, out: &Path, schedule: &str) {
    let a = args(format!(
        "--input {} --output {} --topics 5 --passes 12 --samples 4 --schedule {schedule}",
        d.join("docword.t.txt").display(),
        out.display()
    ));
    let st = run("lda", &a, 2, &RuntimeConfig { threads: 2, ..RuntimeConfig::default() });
    let ll = objective(&st, "loglik");
    eprintln!("{schedule}: loglik {ll:?}");
    assert_eq!(ll.len(), 5);
    // Rising in trend: Gibbs sampling is noisy, and samples read counts up to s clocks stale.
    assert!(ll.windows(2).filter(|w| w[1].1 <= w[0].1).count() <= 1, "log-likelihood must rise: {ll:?}");
    assert!(ll.last().unwrap().1 > ll[0].1 * 0.85, "too little progress: {ll:?}");
    // Every token is counted exactly once in the word-topic output.
    assert_eq!(counted_tokens(out), total_tokens(d));
    let topics = std::fs::read_to_string(out.join("topics/part-00000")).unwrap();
    assert_eq!(topics.lines().count(), 5);
    assert!(topics.lines().all(|l| l.split('\t').nth(2).unwrap().split(' ').count() == 20));
}

#[test]
fn pagerank_converges_to_the_sequential_reference() {
    let d = tmp("pr");
    let g = d.join("g.tsv");
    gen::graph(&gen::GraphSpec { nodes: 2000, degree: 5, skew: 0.8, seed: 4 }, &g).unwrap();
    let out = d.join("out");
    // Staleness slows the asynchronous iteration down (about 0.9 per clock instead of 0.85 here).
    for (consistency, s, passes) in [(ps_runtime::Consistency::Bsp, 0, 90), (ps_runtime::Consistency::Ssp, 2, 170)] {
        let _ = std::fs::remove_dir_all(&out);
        let a = args(format!(
            "--input {} --output {} --passes {passes} --samples 6 --reference",
            g.display(),
            out.display()
        ));
        let cfg = RuntimeConfig { consistency, staleness: s, threads: 2, ..RuntimeConfig::default() };
        let st = run("pagerank", &a, 2, &cfg);
        let err = objective(&st, "ref_l1");
        let l1 = objective(&st, "l1_delta");
        eprintln!("{consistency:?}: ref {err:?} l1 {l1:?}");
        assert!(err.last().unwrap().1 < 1e-6, "{consistency:?}: not converged: {err:?}");
        assert!(l1.last().unwrap().1 < 1e-6);
        // Scores: every node once, sorted descending, summing to 1.
        let text = std::fs::read_to_string(out.join("ranks/part-00000")).unwrap();
        let scores: Vec<f64> = text.lines().map(|l| l.split('\t').nth(1).unwrap().parse().unwrap()).collect();
        assert_eq!(scores.len(), 2000);
        assert!(scores.windows(2).all(|w| w[0] >= w[1]));
        assert!((scores.iter().sum::<f64>() - 1.0).abs() < 1e-6);
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Under BSP the parameter-server iteration is the synchronous (Jacobi) one, so its change per
/// iteration falls at the same rate as the plain sequential loop's, far faster than the damping
/// factor (a start from the teleport term alone, total mass 1-d, once made it fall at rate d).
/// Each worker computes its own nodes' ranks from all their in-edges, so every iteration tracks
/// the plain loop's (when workers pushed partial sums to shared nodes, the rate slowed again to
/// ~0.75 per iteration from about iteration 9). The same holds for threads of one process, which
/// fill one array of their sources' shares together and wait for each other before summing.
#[test]
fn pagerank_under_bsp_converges_as_fast_as_the_sequential_loop() {
    let d = tmp("pr-rate");
    let g = d.join("g.tsv");
    gen::graph(&gen::GraphSpec { nodes: 5000, degree: 8, skew: 0.8, seed: 7 }, &g).unwrap();
    let a = args(format!("--input {} --passes 12 --samples 12", g.display()));
    let (edges, _) =
        ps_runtime::input::read_edges(g.to_str().unwrap(), 0, 1, ps_runtime::input::BadRecords::Fail).unwrap();
    let n = edges.src.iter().chain(&edges.dst).max().unwrap() + 1;
    let plain = apps::baseline::pagerank(&edges, n as usize, 0.85, 12).objective;
    let mut first: Option<Vec<(i64, f64)>> = None;
    for (procs, threads) in [(2, 1), (1, 3), (2, 2)] {
        let cfg = RuntimeConfig { consistency: ps_runtime::Consistency::Bsp, threads, ..RuntimeConfig::default() };
        let l1 = objective(&run("pagerank", &a, procs, &cfg), "l1_delta");
        // The iteration does not depend on how the nodes are split (up to rounding).
        let same = first.get_or_insert_with(|| l1.clone());
        for ((k, x), (_, y)) in l1.iter().zip(same.iter()).skip(1) {
            assert!((x / y - 1.0).abs() < 1e-9, "{procs} x {threads}, iteration {k}: change {x} vs {y} at 2 x 1");
        }
        eprintln!("{procs} x {threads}: ps {l1:?}\nplain {plain:?}");
        // PS clock k measures the change of iteration k; the plain loop's entry k-1 is iteration k.
        for k in 2..=12 {
            let (ps, pl) = (l1[k - 1].1, plain[k - 1]);
            assert!((ps / pl - 1.0).abs() < 0.1, "{procs} x {threads}, iteration {k}: PS change {ps} vs plain {pl}");
        }
        let rate = (l1[11].1 / l1[2].1).powf(1.0 / 9.0);
        assert!(rate < 0.5, "{procs} x {threads}: change per iteration falls by {rate:.3} per iteration: {l1:?}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A-BSP for PageRank (`--passes-per-clock W`, LazyTable's {wpc 4, s 0}): alone, a worker reads
/// its own pushes within the clock (read-my-updates), so W iterations a clock are exactly W
/// clocks of one; with two workers each sees the other's only at clock boundaries, and still
/// reaches the reference ranks.
#[test]
fn pagerank_runs_several_iterations_a_clock() {
    let d = tmp("pr-absp");
    let g = d.join("g.tsv");
    gen::graph(&gen::GraphSpec { nodes: 3000, degree: 6, skew: 0.8, seed: 5 }, &g).unwrap();
    let cfg = RuntimeConfig { consistency: ps_runtime::Consistency::Bsp, threads: 1, ..RuntimeConfig::default() };
    let err = |procs: usize, passes: i64, wpc: i64| {
        let a = args(format!("--input {} --passes {passes} --passes-per-clock {wpc} --reference", g.display()));
        let e = objective(&run("pagerank", &a, procs, &cfg), "ref_l1");
        eprintln!("{procs} x {passes} at {wpc}: {e:?}");
        // Clock 0 publishes the base ranks, so iteration clocks are 1..=passes/W.
        assert_eq!(e.last().unwrap().0, passes / wpc, "{passes} passes at {wpc} a clock: {e:?}");
        e.last().unwrap().1
    };
    let (one, four) = (err(1, 16, 1), err(1, 16, 4));
    assert!(one > 0.0 && (one - four).abs() <= 1e-12 * one, "alone: {one} vs {four} at 4 a clock");
    let shared = err(2, 240, 4);
    assert!(shared < 1e-6, "two workers, 4 iterations a clock: not converged ({shared})");
    let _ = std::fs::remove_dir_all(&d);
}

/// A corrupt edge whose node id is far beyond what the edges can justify fails the job with a
/// clear message instead of allocating dense rank vectors for four billion nodes.
#[test]
fn pagerank_refuses_node_ids_the_input_cannot_justify() {
    let d = tmp("pr-sparse");
    let g = d.join("g.tsv");
    std::fs::write(&g, "0\t1\n1\t2\n2\t0\n4000000000\t1\n").unwrap();
    let a = args(format!("--input {} --passes 3", g.display()));
    let res = run_cluster(2, &RuntimeConfig { threads: 1, ..RuntimeConfig::default() }, |_| {
        apps::build("pagerank", &a).unwrap()
    });
    let msgs: Vec<String> = res.iter().filter_map(|r| r.as_ref().err().map(|e| e.to_string())).collect();
    assert!(msgs.iter().any(|m| m.contains("node ids reach 4000000000") && m.contains("4 edges")), "{msgs:?}");
    let _ = std::fs::remove_dir_all(&d);
}
