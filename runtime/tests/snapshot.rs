//! Snapshots and checkpoints on the local file system: pure snapshots hold exactly the first `t`
//! clocks' updates under deliberately uneven workers, approximate ones say so, resuming continues
//! a job to the same final tables, and damaged or mismatched checkpoints are refused clearly.

mod common;

use common::{demo, run_cluster};
use ps_apps::demo::{OWN, SHARED};
use ps_runtime::snapshot::read::read_table;
use ps_runtime::snapshot::CheckpointStore;
use ps_runtime::SnapshotMode;
use ps_runtime::{Consistency, DenseRow, RuntimeConfig, SparseRow};
use std::path::PathBuf;

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ps-snap-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn cfg(dir: &std::path::Path, every: i64, mode: SnapshotMode) -> RuntimeConfig {
    let mut c = RuntimeConfig { consistency: Consistency::Ssp, staleness: 2, threads: 2, ..Default::default() };
    c.checkpoint.url = Some(dir.to_string_lossy().into_owned());
    c.checkpoint.every = every;
    // These tests count and resume from particular checkpoints: every due one is written.
    c.checkpoint.when_busy = ps_runtime::WhenBusy::Wait;
    c.checkpoint.snapshot = mode;
    c.checkpoint.keep = 0;
    c
}

fn all_ok(r: Vec<ps_runtime::Result<ps_runtime::ProcessStats>>) {
    for (i, s) in r.into_iter().enumerate() {
        s.unwrap_or_else(|e| panic!("process {i} failed: {e}"));
    }
}

/// Per snapshot: does every demo cell hold exactly its clocks `< t` value? Returns the number of
/// cells holding updates of clocks `>= t` (only allowed for approximate snapshots) and checks
/// that every cell of a clock `< t` is exact in any case.
fn check_demo_snapshot(store: &CheckpointStore, t: i64, threads: u64, clocks: i64) -> u64 {
    let m = store.read_manifest(t).unwrap();
    let own = read_table::<DenseRow<i64>>(store, &m, OWN.id()).unwrap();
    let shared = read_table::<SparseRow<i32>>(store, &m, SHARED.id()).unwrap();
    let mut extra = 0;
    for g in 0..threads {
        let row = own.get(&g).unwrap_or_else(|| panic!("snapshot {t}: own row {g} missing"));
        assert_eq!(row.len() as i64, clocks);
        for k in 0..clocks {
            let v = row[k as usize];
            if k < t {
                assert_eq!(v, 1, "snapshot {t}: own[{g}][{k}] misses an update of clock {k}");
            } else {
                assert!(v == 0 || v == 1, "snapshot {t}: own[{g}][{k}] = {v}");
                extra += v as u64;
            }
        }
    }
    for (r, row) in &shared {
        for (k, v) in row.iter() {
            if (k as i64) < t {
                assert_eq!(v as u64, threads, "snapshot {t}: shared[{r}][{k}]");
            } else {
                extra += v as u64;
            }
        }
        for k in 0..t.min(clocks) {
            assert!(row.iter().any(|(c, _)| c as i64 == k), "snapshot {t}: shared[{r}][{k}] missing");
        }
    }
    extra
}

#[test]
fn pure_snapshots_hold_exactly_the_first_t_clocks_and_approximate_ones_say_so() {
    let (procs, threads, clocks) = (3usize, 2usize, 26i64);
    let n = (procs * threads) as u64;
    // Thread g sleeps 3g ms per clock, so fast workers run up to the staleness bound ahead and
    // their later updates reach the servers before the slow ones finish a snapshot's clock.
    let args = format!("--clocks {clocks} --skew-ms 3 --shared-rows 3");
    let mut extras = Vec::new();
    for mode in [SnapshotMode::Pure, SnapshotMode::Approx] {
        let dir = tmp(&format!("{mode:?}"));
        all_ok(run_cluster(procs, &cfg(&dir, 4, mode), |_| demo(&args)));
        let store = CheckpointStore::open(dir.to_str().unwrap()).unwrap();
        let list = store.list().unwrap();
        let clocks_seen: Vec<i64> = list.iter().map(|(t, _)| *t).collect();
        assert_eq!(clocks_seen, vec![4, 8, 12, 16, 20, 24, 26], "{mode:?}");
        let mut extra = 0;
        for (t, complete) in list {
            assert!(complete, "{mode:?} snapshot {t} has no manifest");
            let m = store.read_manifest(t).unwrap();
            assert_eq!(m.mode, if mode == SnapshotMode::Pure { "pure" } else { "approx" });
            assert_eq!(m.is_final, t == clocks);
            // The end-of-job snapshot (26) is not a checkpoint clock, so workers saved no state.
            assert_eq!(m.resumable, mode == SnapshotMode::Pure && t != clocks, "{mode:?} snapshot {t}");
            let (h, _) = store.read_shard(t, 1, OWN.id()).unwrap();
            assert_eq!(h.is_approx(), mode == SnapshotMode::Approx);
            let e = check_demo_snapshot(&store, t, n, clocks);
            if mode == SnapshotMode::Pure {
                assert_eq!(e, 0, "pure snapshot {t} holds {e} updates of clocks >= {t}");
            }
            extra += e;
        }
        extras.push(extra);
    }
    // The same workload really did deliver later updates early: the approximate snapshots hold
    // some, so the pure check above is not vacuous.
    assert!(extras[1] > 0, "approximate snapshots held no later updates; the workload was not uneven");
}

#[test]
fn resumed_job_ends_with_the_same_tables_as_an_uninterrupted_one() {
    let args = "--clocks 14 --shared-rows 2 --jitter-ms 2";
    let full = tmp("full");
    all_ok(run_cluster(2, &cfg(&full, 4, SnapshotMode::Pure), |_| demo(args)));
    // A job that "died" after clock 8's checkpoint was complete but before clock 12's was: drop
    // 12's manifest (half-written) and the end-of-job snapshot.
    let part = tmp("part");
    std::fs::create_dir_all(&part).unwrap();
    for t in [4, 8, 12] {
        let status = std::process::Command::new("cp")
            .arg("-r")
            .arg(full.join(format!("clock-{t}")))
            .arg(&part)
            .status()
            .unwrap();
        assert!(status.success());
    }
    std::fs::remove_file(part.join("clock-12/MANIFEST.json")).unwrap();
    let mut c = cfg(&part, 4, SnapshotMode::Pure);
    c.checkpoint.resume = true;
    // The demo checks every read against the guarantee, so restored tables must be right.
    let stats = run_cluster(2, &c, |_| demo(args));
    for s in &stats {
        assert_eq!(s.as_ref().unwrap().clocks, 14);
    }
    let a = CheckpointStore::open(full.to_str().unwrap()).unwrap();
    let b = CheckpointStore::open(part.to_str().unwrap()).unwrap();
    // The incomplete clock-12 directory was replaced by the resumed run's own.
    assert_eq!(b.list().unwrap().iter().map(|x| x.0).collect::<Vec<_>>(), vec![4, 8, 12, 14]);
    for t in [12, 14] {
        let (ma, mb) = (a.read_manifest(t).unwrap(), b.read_manifest(t).unwrap());
        for id in [OWN.id(), SHARED.id()] {
            for s in 0..2 {
                let (ha, pa) = a.read_shard(t, s, id).unwrap();
                let (hb, pb) = b.read_shard(t, s, id).unwrap();
                assert_eq!((ha.rows, &pa), (hb.rows, &pb), "clock {t} table {id} server {s} differs");
            }
        }
        assert_eq!(ma.tables.len(), mb.tables.len());
    }
}

#[test]
fn old_snapshots_are_pruned_and_a_fresh_run_refuses_a_used_directory() {
    let dir = tmp("prune");
    let mut c = cfg(&dir, 2, SnapshotMode::Pure);
    c.checkpoint.keep = 2;
    all_ok(run_cluster(2, &c, |_| demo("--clocks 11")));
    let store = CheckpointStore::open(dir.to_str().unwrap()).unwrap();
    assert_eq!(store.list().unwrap(), vec![(10, true), (11, true)]);
    let r = run_cluster(2, &c, |_| demo("--clocks 11"));
    let e = r.into_iter().find_map(|s| s.err()).expect("a fresh run over old snapshots must fail");
    assert!(e.to_string().contains("already holds snapshots"), "{e}");
}

#[test]
fn damaged_or_mismatched_checkpoints_are_refused_naming_the_problem() {
    let dir = tmp("damaged");
    all_ok(run_cluster(2, &cfg(&dir, 3, SnapshotMode::Pure), |_| demo("--clocks 7")));
    let mut c = cfg(&dir, 3, SnapshotMode::Pure);
    c.checkpoint.resume = true;
    // Different table shapes (demo's width is its clock count).
    let r = run_cluster(2, &c, |_| demo("--clocks 9"));
    let e = r.into_iter().find_map(|s| s.err()).expect("mismatch must fail");
    assert!(e.to_string().contains("table 0 differs"), "{e}");
    // A flipped byte in a shard of the checkpoint being resumed (clock 6).
    let f = dir.join("clock-6/server-1.table-1");
    let mut bytes = std::fs::read(&f).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&f, bytes).unwrap();
    let r = run_cluster(2, &c, |_| demo("--clocks 7"));
    let e = r.into_iter().find_map(|s| s.err()).expect("corruption must fail");
    let msg = e.to_string();
    assert!(msg.contains("checksum") && msg.contains("clock-6/server-1.table-1"), "{msg}");
    // A different job shape.
    let mut c3 = c.clone();
    c3.threads = 3;
    let r = run_cluster(2, &c3, |_| demo("--clocks 7"));
    let e = r.into_iter().find_map(|s| s.err()).expect("shape mismatch must fail");
    assert!(e.to_string().contains("2 processes x 2 threads"), "{e}");
}

/// Runs `app` uninterrupted, then "kills" it (keeps only the checkpoints up to the middle
/// resumable one, plus the next one without its manifest, as a job dying mid-write leaves them)
/// and resumes. Returns both runs' final objective values.
fn resume_vs_full(tag: &str, app: &str, args: &str, procs: usize, mut cfg: RuntimeConfig, key: &str) -> (f64, f64) {
    let a: Vec<String> = args.split_whitespace().map(String::from).collect();
    let run = |cfg: &RuntimeConfig| -> f64 {
        let stats = run_cluster(procs, cfg, |_| ps_apps::build(app, &a).unwrap());
        let s0 = stats.into_iter().next().unwrap().unwrap_or_else(|e| panic!("{app}: {e}"));
        let recs = s0.app["objective"].as_array().cloned().unwrap_or_default();
        recs.last().and_then(|r| r[key].as_f64()).unwrap_or_else(|| panic!("{app}: no objective {key}"))
    };
    let full = tmp(&format!("{tag}-full"));
    cfg.checkpoint.url = Some(full.to_string_lossy().into_owned());
    cfg.checkpoint.keep = 0;
    let a_val = run(&cfg);
    let store = CheckpointStore::open(full.to_str().unwrap()).unwrap();
    let resumable: Vec<i64> = store
        .list()
        .unwrap()
        .into_iter()
        .filter(|(t, _)| store.read_manifest(*t).unwrap().resumable)
        .map(|x| x.0)
        .collect();
    assert!(resumable.len() >= 3, "{app}: resumable checkpoints {resumable:?}");
    let (mid, next) = (resumable[resumable.len() / 2], resumable[resumable.len() / 2 + 1]);
    let part = tmp(&format!("{tag}-part"));
    std::fs::create_dir_all(&part).unwrap();
    for t in resumable.iter().filter(|t| **t <= next) {
        let st = std::process::Command::new("cp")
            .arg("-r")
            .arg(full.join(format!("clock-{t}")))
            .arg(&part)
            .status()
            .unwrap();
        assert!(st.success());
    }
    std::fs::remove_file(part.join(format!("clock-{next}/MANIFEST.json"))).unwrap();
    cfg.checkpoint.url = Some(part.to_string_lossy().into_owned());
    cfg.checkpoint.resume = true;
    let b_val = run(&cfg);
    let resumed = CheckpointStore::open(part.to_str().unwrap()).unwrap();
    // The resumed run rewrote the half-written checkpoint and went on to the end.
    assert!(resumed.list().unwrap().iter().all(|x| x.1), "{app}: {:?}", resumed.list().unwrap());
    assert!(resumed.list().unwrap().len() > resumable.iter().filter(|t| **t <= mid).count());
    (a_val, b_val)
}

fn app_inputs(tag: &str) -> (PathBuf, String, String, String) {
    use ps_runtime::gen;
    let dir = tmp(&format!("inputs-{tag}"));
    std::fs::create_dir_all(&dir).unwrap();
    let r = dir.join("r.tsv");
    let spec = gen::RatingsSpec {
        users: 400,
        items: 150,
        ratings: 15_000,
        rank: 3,
        noise: 0.3,
        item_skew: 0.3,
        user_skew: 0.3,
        seed: 4,
    };
    gen::ratings(&spec, &r).unwrap();
    let cs = gen::CorpusSpec {
        docs: 150,
        vocab: 300,
        topics: 5,
        doc_len: 40,
        alpha: 0.1,
        beta: 0.05,
        seed: 2,
        word_skew: 0.0,
    };
    gen::corpus(&cs, &dir, "t").unwrap();
    let g = dir.join("g.tsv");
    gen::graph(&gen::GraphSpec { nodes: 800, degree: 5, skew: 0.8, seed: 3 }, &g).unwrap();
    let s = |p: PathBuf| p.to_string_lossy().into_owned();
    (dir.clone(), s(r), s(dir.join("docword.t.txt")), s(g))
}

/// One process, one thread, BSP: reads depend only on the tables and the worker's own state, both
/// of which a checkpoint holds bit for bit, so every app's resumed run ends exactly where an
/// uninterrupted one does. With several processes and SSP only the statistics match (next test).
#[test]
fn every_app_resumes_exactly_with_one_thread_and_bsp() {
    let (dir, r, c, g) = app_inputs("bsp");
    let mut cfg = RuntimeConfig { consistency: Consistency::Bsp, staleness: 0, threads: 1, ..Default::default() };
    cfg.checkpoint.every = 4;
    // These tests count and resume from particular checkpoints: every due one is written.
    cfg.checkpoint.when_busy = ps_runtime::WhenBusy::Wait;
    for (app, args) in [
        // Two samples: the training errors summed between them cross a checkpoint.
        ("mf", format!("--input {r} --passes 6 --clocks-per-pass 3 --rank 4 --samples 2")),
        // Two blocks per pass: a checkpoint falls inside a pass.
        ("lda", format!("--input {c} --topics 5 --passes 6 --clocks-per-pass 2")),
        ("pagerank", format!("--input {g} --passes 20 --block 64")),
    ] {
        let (a, b) = resume_vs_full(&format!("exact-{app}"), app, &args, 1, cfg.clone(), "value");
        assert_eq!(a, b, "{app}: uninterrupted {a} vs resumed {b}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A worker's saved state remembers its clocks per pass: resumed at another number, a job would
/// count its passes (and pick its blocks) apart from the model it continues, so it is refused,
/// naming the number to resume with; at the same number it resumes.
#[test]
fn a_resume_at_other_clocks_per_pass_is_refused() {
    let (dir, r, _, _) = app_inputs("cpp");
    let ck = tmp("cpp-ck");
    let mut c = RuntimeConfig { consistency: Consistency::Ssp, staleness: 1, threads: 2, ..Default::default() };
    c.checkpoint.url = Some(ck.to_string_lossy().into_owned());
    c.checkpoint.every = 2;
    c.checkpoint.when_busy = ps_runtime::WhenBusy::Wait;
    let mf = |cpp: i64| {
        let a = format!("--input {r} --passes 3 --clocks-per-pass {cpp} --rank 4");
        let a: Vec<String> = a.split_whitespace().map(String::from).collect();
        move |_| ps_apps::build("mf", &a).unwrap()
    };
    all_ok(run_cluster(1, &c, mf(2)));
    c.checkpoint.resume = true;
    let e = run_cluster(1, &c, mf(1)).into_iter().find_map(|s| s.err()).expect("another clocks per pass must fail");
    let msg = e.to_string();
    assert!(msg.contains("taken at 2 clocks per pass") && msg.contains("--clocks-per-pass 2"), "{msg}");
    all_ok(run_cluster(1, &c, mf(2)));
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::remove_dir_all(ck);
}

#[test]
fn every_app_resumes_to_the_same_quality_with_ssp() {
    let (dir, r, c, g) = app_inputs("ssp");
    let mut cfg = RuntimeConfig { consistency: Consistency::Ssp, staleness: 1, threads: 2, ..Default::default() };
    cfg.checkpoint.every = 4;
    // These tests count and resume from particular checkpoints: every due one is written.
    cfg.checkpoint.when_busy = ps_runtime::WhenBusy::Wait;
    for (app, args, key, tol) in [
        // 4 workers, staleness 1: 8 item slices rotate; checkpoints fall inside passes.
        ("mf", format!("--input {r} --passes 6 --clocks-per-pass 8 --rank 4"), "value", 0.01),
        // 4 workers, staleness 1: 8 vocabulary slices rotate; checkpoints fall inside passes.
        ("lda", format!("--input {c} --topics 5 --passes 3 --clocks-per-pass 8 --schedule words"), "value", 0.01),
        // PageRank: both runs must reach the same fixed point (L1 distance to the exact ranks).
        ("pagerank", format!("--input {g} --passes 100 --block 64 --reference"), "ref_l1", 0.0),
    ] {
        let (a, b) = resume_vs_full(&format!("ssp-{app}"), app, &args, 2, cfg.clone(), key);
        eprintln!("{app}: {key} uninterrupted {a} vs resumed {b}");
        if tol > 0.0 {
            assert!((a - b).abs() <= tol * a.abs(), "{app}: uninterrupted {a} vs resumed {b}");
        } else {
            assert!(a < 1e-5 && b < 1e-5, "{app}: {key} uninterrupted {a} vs resumed {b}");
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// An ASP job of `procs` processes in two data centers whose significance filter holds back
/// what `significance` says, over a WAN of 5 ms each way.
fn asp_cfg(dir: &std::path::Path, significance: f64) -> RuntimeConfig {
    let mut c = cfg(dir, 4, SnapshotMode::Pure);
    c.geo = ps_runtime::GeoConfig {
        datacenters: 2,
        inter_dc: ps_runtime::InterDc::Asp,
        significance,
        mirror_clock_bound: 1,
        wan_delay_ms: 5.0,
        ..Default::default()
    };
    c
}

/// Under ASP every data center holds its own copy of the tables, yet a pure checkpoint is one
/// model: every data center's updates of clocks `< t` and none after. With a filter that holds
/// every update back, the other data center's updates reach process 0's (the copy that is
/// written) only through the syncs at snapshot clocks; with every change mirrored, updates of
/// later clocks keep arriving from the data center ahead while the other is still behind.
#[test]
fn asp_checkpoints_hold_exactly_every_data_centers_first_t_clocks() {
    let (procs, threads, clocks) = (4usize, 2usize, 18i64);
    let args = format!("--clocks {clocks} --skew-ms 2 --shared-rows 3 --barrier-checks-only");
    for significance in [1e12, 0.0] {
        let dir = tmp(&format!("asp-{significance}"));
        let mut c = asp_cfg(&dir, significance);
        // Thread g pauses 2g ms a clock: the data center written (processes 0 and 3) is the slower.
        c.geo.dc_of = vec![0, 1, 1, 0];
        all_ok(run_cluster(procs, &c, |_| demo(&args)));
        let store = CheckpointStore::open(dir.to_str().unwrap()).unwrap();
        let list = store.list().unwrap();
        assert_eq!(list.iter().map(|x| x.0).collect::<Vec<_>>(), vec![4, 8, 12, 16, 18], "{significance}");
        for (t, complete) in list {
            assert!(complete, "snapshot {t} has no manifest");
            let m = store.read_manifest(t).unwrap();
            assert_eq!(m.resumable, t != clocks, "snapshot {t}");
            for e in &m.tables {
                let owners: Vec<u32> = e.shards.iter().map(|s| s.owner).collect();
                assert_eq!(owners, [0, 3], "table {}: only process 0's data center writes shards", e.config.id);
            }
            let extra = check_demo_snapshot(&store, t, (procs * threads) as u64, clocks);
            assert_eq!(extra, 0, "significance {significance}: snapshot {t} holds {extra} updates of clocks >= {t}");
        }
        let _ = std::fs::remove_dir_all(dir);
    }
    // Checkpoints skipped while the last is written: process 0 decides for every data center,
    // so they all skip the same ones and every snapshot listed is complete. The last clock's is
    // skipped before the job is known to end there, and is still written as the final one.
    for asp in [true, false] {
        let dir = tmp(&format!("skip-{asp}"));
        let mut c = asp_cfg(&dir, 0.01);
        if !asp {
            c.geo = Default::default();
        }
        c.checkpoint.when_busy = ps_runtime::WhenBusy::Skip;
        c.checkpoint.every = 1;
        all_ok(run_cluster(procs, &c, |_| demo(&args)));
        let store = CheckpointStore::open(dir.to_str().unwrap()).unwrap();
        let list = store.list().unwrap();
        assert!(list.iter().all(|x| x.1) && list.last() == Some(&(clocks, true)), "asp {asp}: {list:?}");
        assert!(list.len() < clocks as usize, "asp {asp}: nothing was skipped: {list:?}");
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// A resumed ASP job: every process of the other data center loads its rows from process 0's
/// data center's shards (with 3 processes, its one server reads both shards and keeps all),
/// and the job ends with the same tables as an uninterrupted one.
#[test]
fn asp_jobs_resume_from_one_data_centers_shards_to_the_same_tables() {
    let args = "--clocks 14 --shared-rows 2 --jitter-ms 2 --barrier-checks-only";
    let full = tmp("asp-full");
    all_ok(run_cluster(3, &asp_cfg(&full, 1e12), |_| demo(args)));
    let part = tmp("asp-part");
    std::fs::create_dir_all(&part).unwrap();
    for t in [4, 8] {
        let from = full.join(format!("clock-{t}"));
        assert!(std::process::Command::new("cp").arg("-r").arg(from).arg(&part).status().unwrap().success());
    }
    let mut c = asp_cfg(&part, 1e12);
    c.checkpoint.resume = true;
    all_ok(run_cluster(3, &c, |_| demo(args)));
    let a = CheckpointStore::open(full.to_str().unwrap()).unwrap();
    let b = CheckpointStore::open(part.to_str().unwrap()).unwrap();
    assert_eq!(b.list().unwrap().iter().map(|x| x.0).collect::<Vec<_>>(), vec![4, 8, 12, 14]);
    for t in [12, 14] {
        let (ma, mb) = (a.read_manifest(t).unwrap(), b.read_manifest(t).unwrap());
        let own = |s: &CheckpointStore, m| read_table::<DenseRow<i64>>(s, m, OWN.id()).unwrap();
        let shared = |s: &CheckpointStore, m| read_table::<SparseRow<i32>>(s, m, SHARED.id()).unwrap();
        assert_eq!(own(&a, &ma), own(&b, &mb), "own rows at {t}");
        assert_eq!(shared(&a, &ma), shared(&b, &mb), "shared rows at {t}");
        assert_eq!(check_demo_snapshot(&b, t, 6, 14), 0);
    }
    let _ = std::fs::remove_dir_all(full);
    let _ = std::fs::remove_dir_all(part);
}
