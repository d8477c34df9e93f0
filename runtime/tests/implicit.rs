//! `mf --implicit`: matrix factorization of interactions (BPR with sampled negatives). On
//! interactions with a planted group structure the lists beat chance several times; the reported
//! precision, recall and NDCG at K equal those recomputed here from the written lists and the
//! held-out split; scores are the written factors' dot products; the job does not depend on how
//! its workers are placed in processes; a table's count column is read by name.

mod common;

use ps_apps as apps;
use ps_apps::mf::held_out;
use ps_runtime::input::Rating;
use ps_runtime::{ProcessStats, RuntimeConfig};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

const GROUPS: u32 = 4;
const ITEMS_PER_GROUP: u32 = 20;
const SEED: u64 = 7;

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ps-implicit-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// 240 users in 4 groups; each chose 10 of its group's 20 items (a fixed hash picks them).
fn interactions() -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    for u in 0..240u32 {
        let g = u % GROUPS;
        let mut picked: Vec<u32> = (0..ITEMS_PER_GROUP).collect();
        picked.sort_by_key(|&i| (i * 7 + u * 13) % ITEMS_PER_GROUP);
        v.extend(picked[..10].iter().map(|&i| (u, g * ITEMS_PER_GROUP + i)));
    }
    v
}

fn run(procs: usize, threads: usize, args: &str) -> Vec<ProcessStats> {
    let a: Vec<String> = args.split_whitespace().map(String::from).collect();
    let cfg = RuntimeConfig { threads, ..RuntimeConfig::default() };
    common::run_cluster(procs, &cfg, |_| apps::build("mf", &a).unwrap()).into_iter().map(|r| r.unwrap()).collect()
}

fn last_objective(stats: &[ProcessStats]) -> Value {
    let objective = stats.iter().find_map(|s| s.app.get("objective")).expect("an objective");
    objective.as_array().unwrap().last().unwrap().clone()
}

/// Lines `a<TAB>b<TAB>c` of every part of a text dataset.
fn lines(dir: &Path) -> Vec<Vec<String>> {
    let mut v = Vec::new();
    for f in std::fs::read_dir(dir).unwrap() {
        let f = f.unwrap().path();
        if f.file_name().unwrap().to_string_lossy().starts_with("part-") {
            for l in std::fs::read_to_string(&f).unwrap().lines() {
                v.push(l.split('\t').map(String::from).collect());
            }
        }
    }
    v
}

fn factors(dir: &Path) -> BTreeMap<u32, Vec<f32>> {
    lines(dir)
        .into_iter()
        .map(|l| (l[0].parse().unwrap(), l[1..].iter().map(|x| x.parse().unwrap()).collect()))
        .collect()
}

#[test]
fn implicit_feedback_beats_chance_and_reports_what_its_lists_score() {
    let d = tmp("groups");
    let input = d.join("clicks.tsv");
    // Two ids a line; a third field (a timestamp, say) is not read.
    let text: String = interactions().iter().map(|(u, i)| format!("{u}\t{i}\t17000{u}\n")).collect();
    std::fs::write(&input, text).unwrap();
    let out = d.join("out");
    let args = format!(
        "--input {} --output {} --implicit --passes 30 --rank 8 --test-fraction 0.2 --recommend 5 --seed {SEED}",
        input.display(),
        out.display()
    );
    let stats = run(2, 1, &args);
    let last = last_objective(&stats);

    let rating = |u: u32, i: u32| Rating { user: u, item: i, value: 1.0 };
    let (mut train, mut test) = (HashSet::new(), BTreeMap::<u32, HashSet<u32>>::new());
    for (u, i) in interactions() {
        match held_out(&rating(u, i), SEED, 0.2) {
            true => test.entry(u).or_default().insert(i),
            false => train.insert((u, i)),
        };
    }
    let (users, items) = (factors(&out.join("user_factors")), factors(&out.join("item_factors")));
    let mut lists: BTreeMap<u32, Vec<(u32, f32)>> = BTreeMap::new();
    for l in lines(&out.join("recommendations")) {
        let (u, i, s): (u32, u32, f32) = (l[0].parse().unwrap(), l[1].parse().unwrap(), l[2].parse().unwrap());
        let dot: f32 = users[&u].iter().zip(&items[&i]).map(|(a, b)| a * b).sum();
        assert!((dot - s).abs() <= 1e-4 * s.abs().max(1.0), "user {u} item {i}: score {s}, factors give {dot}");
        assert!(!train.contains(&(u, i)), "user {u} was recommended item {i}, which it chose in training");
        lists.entry(u).or_default().push((i, s));
    }
    // The measures, recomputed from the lists (binary relevance: a held-out item of the user).
    let gain = |r: usize| 1.0 / ((r + 2) as f64).log2();
    let mut sums = [0f64; 3];
    for (u, list) in &lists {
        assert_eq!(list.len(), 5, "user {u}");
        assert!(list.windows(2).all(|w| w[0].1 >= w[1].1), "user {u}: best first");
        let Some(held) = test.get(u) else { continue };
        let hit: Vec<bool> = list.iter().map(|(i, _)| held.contains(i)).collect();
        let hits = hit.iter().filter(|&&h| h).count() as f64;
        let ideal: f64 = (0..held.len().min(5)).map(gain).sum();
        sums[0] += hits / 5.0;
        sums[1] += hits / held.len() as f64;
        sums[2] += hit.iter().enumerate().filter(|(_, &h)| h).map(|(r, _)| gain(r)).sum::<f64>() / ideal;
    }
    let n = test.len() as f64;
    for (k, want) in [("precision_at_k", sums[0] / n), ("recall_at_k", sums[1] / n), ("ndcg_at_k", sums[2] / n)] {
        let got = last[k].as_f64().unwrap_or_else(|| panic!("no {k} in {last}"));
        assert!((got - want).abs() < 1e-9, "{k}: reported {got}, the lists give {want}");
    }
    assert_eq!(lists.len(), 240, "a list for every user");
    // Two held-out items among the 10 unchosen of the user's group, against 70 unchosen items
    // in all: 5 random items score a precision of about 0.03.
    assert!(last["precision_at_k"].as_f64().unwrap() > 0.1, "{last}");
    assert!(last["test_auc"].as_f64().unwrap() > 0.7 && last["bpr_loss"].as_f64().unwrap() < 0.5, "{last}");
}

/// Two processes of one thread and one process of two threads run the same schedule (BSP): the
/// same model, so the same measures.
#[test]
fn where_the_workers_run_does_not_change_an_implicit_job() {
    let d = tmp("shape");
    let input = d.join("clicks.tsv");
    std::fs::write(&input, interactions().iter().map(|(u, i)| format!("{u} {i}\n")).collect::<String>()).unwrap();
    let job = |procs: usize, threads: usize| {
        let a = format!("--input {} --implicit --passes 4 --rank 8 --test-fraction 0.2 --negatives 2", input.display());
        let a: Vec<String> = a.split_whitespace().map(String::from).collect();
        let cfg = RuntimeConfig { threads, consistency: ps_runtime::Consistency::Bsp, ..RuntimeConfig::default() };
        let stats: Vec<ProcessStats> = common::run_cluster(procs, &cfg, |_| apps::build("mf", &a).unwrap())
            .into_iter()
            .map(|r| r.unwrap())
            .collect();
        last_objective(&stats)
    };
    let (a, b) = (job(2, 1), job(1, 2));
    for k in ["bpr_loss", "test_auc", "precision_at_k", "recall_at_k", "ndcg_at_k"] {
        // The workers' partial sums are added in the order they arrive: equal to the last bits.
        let (x, y) = (a[k].as_f64().unwrap(), b[k].as_f64().unwrap());
        assert!((x - y).abs() <= 1e-12 * x.abs().max(1.0), "{k}: {a} vs {b}");
    }
}

/// A table's count column, named with --rating-col: a count of zero is no interaction (the item
/// that only has zeros gets no factors), and columns are never guessed.
#[test]
fn a_count_column_is_read_by_name_and_zero_counts_are_left_out() {
    let d = tmp("counts");
    let csv = d.join("plays.csv");
    let mut text = String::from("user,item,ts,plays\n");
    for (u, i) in interactions() {
        text.push_str(&format!("u{u},i{i},1700000000,{}\n", 1 + (u + i) % 7));
    }
    text.push_str("u1,lonely,1700000000,0\n");
    std::fs::write(&csv, text).unwrap();
    let out = d.join("out");
    let args = format!(
        "--input {} --output {} --implicit --passes 3 --rank 4 --rating-col plays",
        csv.display(),
        out.display()
    );
    run(1, 2, &args);
    let items: HashSet<String> = lines(&out.join("item_factors")).into_iter().map(|l| l[0].clone()).collect();
    assert_eq!(items.len(), 80, "every played item");
    assert!(items.contains("i3") && !items.contains("lonely"), "string ids come back; zero plays are left out");
    // Without --rating-col the table's rows are interactions of weight 1: the job runs.
    run(1, 1, &format!("--input {} --input-format csv --implicit --passes 1 --rank 4", csv.display()));
    // A count column that is not there is named.
    let a: Vec<String> = format!("--input {} --implicit --passes 1 --rating-col count", csv.display())
        .split_whitespace()
        .map(String::from)
        .collect();
    let e = common::run_cluster(1, &RuntimeConfig::default(), |_| apps::build("mf", &a).unwrap()).pop().unwrap();
    let e = e.unwrap_err().to_string();
    assert!(e.contains("'count'") && e.contains("plays"), "{e}");
}

#[test]
fn implicit_settings_that_cannot_work_are_refused() {
    let build = |a: &str| {
        let a: Vec<String> = a.split_whitespace().map(String::from).collect();
        apps::build("mf", &a).err().map(|e| e.to_string()).unwrap_or_default()
    };
    assert!(build("--input x --implicit --negatives 0").contains("--negatives"));
    assert!(build("--input x --implicit --user-factors table").contains("--user-factors local"));
}

/// One worker under BSP does not rotate: its negatives come from every item, and it learns.
#[test]
fn one_worker_under_bsp_draws_from_every_item() {
    let d = tmp("one");
    let input = d.join("clicks.tsv");
    std::fs::write(&input, interactions().iter().map(|(u, i)| format!("{u},{i}\n")).collect::<String>()).unwrap();
    let a = format!("--input {} --implicit --passes 30 --rank 8 --test-fraction 0.2", input.display());
    let a: Vec<String> = a.split_whitespace().map(String::from).collect();
    let cfg = RuntimeConfig { threads: 1, consistency: ps_runtime::Consistency::Bsp, ..RuntimeConfig::default() };
    let stats: Vec<ProcessStats> =
        common::run_cluster(1, &cfg, |_| apps::build("mf", &a).unwrap()).into_iter().map(|r| r.unwrap()).collect();
    let last = last_objective(&stats);
    assert!(last["precision_at_k"].as_f64().unwrap() > 0.05, "{last}");
    assert!(last["test_auc"].as_f64().unwrap() > 0.7, "{last}");
}
