//! Model slices rotating among the workers: which part of its data each worker works on at each
//! clock, so that no two workers change the same rows within the staleness window. Shared by
//! `mf` (item slices: the DSGD / FPSGD block schedule) and `lda` (vocabulary slices: Petuum's and
//! LightLDA's model-parallel schedule).
//!
//! The data-parallel schedule (`--schedule ratings|docs`) gives each clock 1/C of a worker's data
//! with every row it touches. Then every worker changes nearly every shared row in every clock,
//! each from its own copy, and the server adds all W workers' changes together: for SGD on a
//! popular item each copy has already moved most of the way its ratings pull it, so the sum
//! overshoots by up to W times (MF diverged from 3-4 workers on skewed data, under BSP too).
//!
//! The rotating schedule cuts the model into `S = workers x (s + 1)` slices (one for a lone
//! worker, which nobody else changes) and worker `w`, at clock `c`, works only on its data of
//! slice `(w (s + 1) + c) mod S`. (With `Names::by_process`
//! the units are processes, whose threads split their process's slice among themselves: LDA.) The previous worker to
//! hold that slice had it `s + 1` clocks earlier, so under a staleness bound `s` every read of
//! the slice holds every other worker's changes: each row is changed by one worker at a time,
//! as in serial SGD or sampling, whatever the number of workers. A slice's rows are fetched and
//! sent once per worker and pass instead of once per clock. It needs the clocks per pass `C` to
//! be a multiple of `S` (each clock then also takes `S / C` of the worker's data): without
//! `--clocks-per-pass` the app takes the smallest multiple of `S` that is at least its own
//! default.

use super::options::CommonArgs;
use ps_runtime::{JobShape, Worker};
use ps_runtime::{PsError, Result};
use std::ops::Range;

/// How an app names its two schedules in flags and messages.
#[derive(Debug, Clone, Copy)]
pub struct Names {
    pub app: &'static str,
    /// `--schedule` value of the rotating schedule (`items`, `words`).
    pub rotate: &'static str,
    /// `--schedule` value of the data-parallel schedule (`ratings`, `docs`).
    pub data: &'static str,
    /// Whether slices rotate among processes, whose threads split a slice among themselves
    /// (LDA), instead of among all worker threads (MF).
    pub by_process: bool,
}

impl Names {
    /// What a slice rotates among, for messages.
    fn unit(&self) -> &'static str {
        if self.by_process {
            "processes"
        } else {
            "workers"
        }
    }
}

/// Which schedule a job asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rotation {
    /// Rotate whenever the job has a staleness bound and a clock is not several passes.
    Auto,
    Rotate,
    Data,
}

/// The blocks of a worker (data part x model slice) and which one each clock works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Model slices (1: the whole model).
    pub slices: usize,
    /// Whether the job runs the rotating (model-parallel) schedule, possibly with one slice.
    rotating: bool,
    /// Clocks between two workers' turns at a slice: staleness + 1.
    group: usize,
    /// Data parts per pass.
    pub parts: usize,
    cpp: usize,
}

impl Plan {
    /// Slices the rotating schedule needs for `workers` workers under staleness `staleness`
    /// (`None` when it cannot rotate: no staleness bound, or several passes per clock). A lone
    /// worker (one process, for apps whose threads share their process's slice) holds the whole
    /// model in every clock: nobody else changes it, so it needs no slices to be fresh, whatever
    /// the staleness bound. Cut into `s + 1` slices, a clock held `1 / (s + 1)` of the work and
    /// its threads took turns at its sub-slices, so the sub-slice of the most rated item set the
    /// clock's length: at 1 x 16 on Netflix-shaped ratings (one item row with 6% of them, 32
    /// sub-slices of 3.1% each) a clock could not be shorter than 1.92x its share, which capped
    /// the speed-up near 8.4x. Under BSP one slice was also taken for "no rotation": the threads
    /// trained data-parallel (MF diverged at 1 x 8; LDA ran 4.4x slower, 1.4% lower in
    /// log-likelihood).
    fn slices_for(rotation: Rotation, workers: usize, staleness: Option<i64>, multi_pass: bool) -> Option<usize> {
        match (rotation, staleness) {
            (Rotation::Data, _) => None,
            _ if multi_pass => None,
            _ if workers <= 1 => Some(1),
            (_, None) => None,
            (_, Some(s)) => Some(workers * (s.max(0) as usize + 1)),
        }
    }

    /// The clocks per pass a job runs when `--clocks-per-pass` is not given: one clock per slice
    /// when the job rotates; `base` (the app's data-parallel default) when it does not. Running
    /// a multiple of the slices would visit every slice, and move all its rows, several times a
    /// pass: LDA on one worker at 4 clocks (2 slices) spent 16% more CPU per sweep than at 2,
    /// for the same log-likelihood.
    pub fn default_cpp(rotation: Rotation, workers: usize, staleness: Option<i64>, multi_pass: bool, base: i64) -> i64 {
        match Self::slices_for(rotation, workers, staleness, multi_pass) {
            Some(s) => s as i64,
            None => base,
        }
    }

    /// The plan for `workers` workers (threads of the job), the rotating table's staleness bound
    /// (`None`: unbounded), `cpp` clocks per pass, and whether a clock is several passes. Refuses
    /// what cannot rotate when rotation was asked for, and clocks per pass that do not fit the
    /// slices under `auto`: falling back to the data-parallel schedule would silently change
    /// what the job computes (and, for SGD, whether it converges).
    pub fn new(
        rotation: Rotation,
        names: Names,
        workers: usize,
        staleness: Option<i64>,
        cpp: i64,
        multi_pass: bool,
    ) -> Result<Plan> {
        let Names { app, rotate, data, .. } = names;
        let unit = names.unit();
        let cpp = cpp.max(1) as usize;
        let flat = Plan { slices: 1, rotating: false, group: 1, parts: cpp, cpp };
        if rotation == Rotation::Data {
            return Ok(flat);
        }
        let Some(slices) = Self::slices_for(rotation, workers, staleness, multi_pass) else {
            return match rotation {
                Rotation::Rotate => Err(PsError::Config(format!(
                    "{app}: --schedule {rotate} needs a staleness bound (not --consistency async) and one clock \
                     per pass or less (not --passes-per-clock)"
                ))),
                _ => Ok(flat),
            };
        };
        if cpp.is_multiple_of(slices) {
            let group = slices / workers.max(1);
            return Ok(Plan { slices, rotating: true, group, parts: cpp / slices, cpp });
        }
        Err(PsError::Config(format!(
            "{app}: the rotating schedule (--schedule {rotate}) needs --clocks-per-pass to be a multiple of {unit} x \
             (staleness + 1) = {workers} x {} = {slices} (it is {cpp}): leave --clocks-per-pass out to have it sized \
             from the {unit}, give a multiple of {slices}, or choose --schedule {data} (every worker changes every row \
             it touches in every clock)",
            slices / workers.max(1)
        )))
    }

    /// Whether the job rotates slices (with one worker: holds the whole model, its threads
    /// taking turns at its sub-slices), rather than training data-parallel.
    pub fn rotates(&self) -> bool {
        self.rotating
    }

    /// Number of blocks: parts x slices; block `part * slices + slice`.
    pub fn blocks(&self) -> usize {
        self.parts * self.slices
    }

    /// Items `0..n` of part `p`, as contiguous ranges.
    pub fn part_range(&self, p: usize, n: usize) -> Range<usize> {
        let per = n.div_ceil(self.parts);
        (p * per).min(n)..((p + 1) * per).min(n)
    }

    /// The block worker `gid` works on at `clock`.
    pub fn block_at(&self, gid: usize, clock: i64) -> usize {
        let c = clock.rem_euclid(self.cpp as i64) as usize;
        let slice = (gid * self.group + c) % self.slices;
        (c / self.slices) * self.slices + slice
    }
}

/// An app's `App::shape` for a rotating schedule: sizes `c`'s clocks per pass for `job` when the
/// user left them to the app (`base`: the app's data-parallel default) and refuses, before
/// anything starts, what does not fit. Returns whether the job rotates.
pub fn size_for_job(rotation: Rotation, names: Names, base: i64, job: &JobShape, c: &mut CommonArgs) -> Result<bool> {
    let units = if names.by_process { job.processes } else { job.workers() };
    c.size_clocks(Plan::default_cpp(rotation, units, job.staleness, c.multi_pass(), base));
    Ok(Plan::new(rotation, names, units, job.staleness, c.cpp(), c.multi_pass())?.rotates())
}

/// The plan of worker `w`, whose rotating table is `table` (its own staleness bound). With
/// `by_process`, [`Plan::block_at`] takes the process id.
pub fn plan_for_worker(rotation: Rotation, names: Names, w: &Worker, table: u32, c: &CommonArgs) -> Result<Plan> {
    let units = if names.by_process { w.num_processes() } else { w.total_threads() };
    Plan::new(rotation, names, units, w.staleness(table)?, c.cpp(), c.multi_pass())
}

/// The table rows of `ids` (ascending) when a row holds `per_row` consecutive ids (MF's items,
/// LDA's words under the rotating schedules), each row once, in order.
pub fn rows_of_ids(ids: impl IntoIterator<Item = u64>, per_row: u64) -> Vec<u64> {
    let mut rows: Vec<u64> = ids.into_iter().map(|i| i / per_row).collect();
    rows.dedup();
    rows
}

/// The rows `0..rows` worker `gid` of `workers` takes for whole-table work (evaluation, output).
pub fn rows_of_worker(gid: usize, workers: usize, rows: usize) -> Vec<u64> {
    (gid as u64..rows as u64).step_by(workers.max(1)).collect()
}

/// Where each model row is under a rotating schedule whose slices are cut into `subs` sub-slices
/// (a process's threads' share of its slice; 1 where workers rotate alone): fine slice
/// `slice x subs + sub`, balanced by the job's load per row (`balance`, from `job_totals`), so
/// that every worker, and every thread in each step, has about the same work. Rows with no load
/// anywhere in the job are never worked on and go by row number.
pub struct FineSlices {
    of: rustc_hash::FxHashMap<u32, u32>,
    slices: usize,
    subs: usize,
    /// The largest fine slice's load over the mean.
    pub imbalance: f64,
}

impl FineSlices {
    pub fn new(load: &[(u32, u64)], slices: usize, subs: usize) -> Self {
        let (slices, subs) = (slices.max(1), subs.max(1));
        let (of, imbalance) = balance(load, slices * subs);
        FineSlices { of, slices, subs, imbalance }
    }

    /// The slice and the sub-slice of table row `row`. `balance` fills its bins in order where
    /// loads tie (rows fewer than bins), so bin `b` is slice `b mod slices`: a small model is
    /// spread over the clocks of a pass rather than gathered in the first slice.
    pub fn place(&self, row: u64) -> (usize, usize) {
        let bins = (self.slices * self.subs) as u64;
        let b = self.of.get(&(row as u32)).map_or(row % bins, |&b| b as u64) as usize;
        (b % self.slices, b / self.slices)
    }

    /// The fine slice of table row `row`: `slice x subs + sub`.
    pub fn fine(&self, row: u64) -> usize {
        let (slice, sub) = self.place(row);
        slice * self.subs + sub
    }
}

/// Assigns rows to `slices` slices so that the slices' loads (`load` per row, e.g. ratings per
/// item summed over every worker) are as even as the largest rows allow: largest first, each to
/// the least loaded slice (LPT), ties broken by row id so every worker computes the same
/// assignment. With Zipf-distributed items, hashing put the most popular item's slice at 3x
/// the mean at 32 slices; a clock lasts as long as its largest slice.
pub fn balance(load: &[(u32, u64)], slices: usize) -> (rustc_hash::FxHashMap<u32, u32>, f64) {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut rows: Vec<(u32, u64)> = load.to_vec();
    rows.sort_unstable_by_key(|&(r, l)| (Reverse(l), r));
    let mut heap: BinaryHeap<Reverse<(u64, u32)>> = (0..slices as u32).map(|s| Reverse((0, s))).collect();
    let mut of = rustc_hash::FxHashMap::default();
    of.reserve(rows.len());
    let mut sums = vec![0u64; slices];
    for (r, l) in rows {
        let Reverse((sum, s)) = heap.pop().expect("at least one slice");
        of.insert(r, s);
        sums[s as usize] = sum + l;
        heap.push(Reverse((sum + l, s)));
    }
    let total: u64 = sums.iter().sum();
    let max = sums.iter().copied().max().unwrap_or(0);
    let imbalance = if total == 0 { 1.0 } else { max as f64 * slices as f64 / total as f64 };
    (of, imbalance)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LDA: Names = Names { app: "lda", rotate: "words", data: "docs", by_process: false };

    /// The two properties the rotating schedule rests on, for several job shapes: in a pass each
    /// worker works on each of its blocks once, and no other worker had a worker's slice within
    /// the last `s` clocks (so the staleness bound makes its reads of the slice exact).
    #[test]
    fn each_block_once_per_pass_and_no_slice_shared_within_the_staleness() {
        for (workers, s, cpp) in [(1, 0, 1), (2, 1, 4), (2, 1, 8), (3, 0, 6), (4, 2, 12), (2, 0, 2), (16, 1, 32)] {
            let p = Plan::new(Rotation::Rotate, LDA, workers, Some(s), cpp, false).unwrap();
            assert_eq!(p.slices, workers * (s as usize + 1));
            let slice = |gid, c| p.block_at(gid, c) % p.slices;
            for gid in 0..workers {
                for pass in 0..3 {
                    let mut seen: Vec<usize> = (0..cpp).map(|c| p.block_at(gid, pass * cpp + c)).collect();
                    seen.sort_unstable();
                    assert_eq!(seen, (0..p.blocks()).collect::<Vec<_>>(), "{workers} {s} {cpp}");
                }
                for c in 0..3 * cpp {
                    for other in (0..workers).filter(|&o| o != gid) {
                        for back in 0..=s.min(c) {
                            assert_ne!(slice(gid, c), slice(other, c - back), "{workers} {s} {cpp} c{c}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn default_clocks_are_sized_from_the_workers() {
        assert_eq!(Plan::default_cpp(Rotation::Auto, 2, Some(1), false, 2), 4);
        assert_eq!(Plan::default_cpp(Rotation::Auto, 16, Some(1), false, 2), 32);
        assert_eq!(Plan::default_cpp(Rotation::Auto, 2, Some(1), false, 1), 4, "one clock a slice");
        // A lone worker holds the whole model: one slice, one clock a pass, under any bound.
        for s in [Some(0), Some(1), Some(3), None] {
            assert_eq!(Plan::default_cpp(Rotation::Auto, 1, s, false, 4), 1, "{s:?}");
            let p = Plan::new(Rotation::Auto, LDA, 1, s, 1, false).unwrap();
            assert!(p.rotates() && p.slices == 1 && p.blocks() == 1, "{s:?}: {p:?}");
            assert_eq!(Plan::new(Rotation::Rotate, LDA, 1, s, 3, false).unwrap().blocks(), 3, "{s:?}");
        }
        assert_eq!(Plan::default_cpp(Rotation::Auto, 3, Some(0), false, 4), 3);
        assert_eq!(Plan::default_cpp(Rotation::Auto, 4, None, false, 4), 4, "async cannot rotate");
        assert_eq!(Plan::default_cpp(Rotation::Data, 4, Some(1), false, 4), 4);
        assert_eq!(Plan::default_cpp(Rotation::Auto, 4, Some(1), true, 1), 1, "several passes a clock");
        for (w, s) in [(1, 0), (5, 1), (16, 2)] {
            let cpp = Plan::default_cpp(Rotation::Auto, w, Some(s), false, 4);
            assert!(Plan::new(Rotation::Auto, LDA, w, Some(s), cpp, false).unwrap().rotates());
        }
    }

    #[test]
    fn auto_never_falls_back_silently() {
        let e = Plan::new(Rotation::Auto, LDA, 4, Some(1), 4, false).unwrap_err().to_string();
        assert!(e.contains("--clocks-per-pass") && e.contains("= 8") && e.contains("--schedule docs"), "{e}");
        let e = Plan::new(Rotation::Rotate, LDA, 4, Some(1), 4, false).unwrap_err().to_string();
        assert!(e.contains("= 8"), "{e}");
        assert!(Plan::new(Rotation::Rotate, LDA, 2, None, 4, false).is_err());
        assert!(Plan::new(Rotation::Rotate, LDA, 2, Some(1), 1, true).is_err());
        // Async or several passes a clock: nothing to rotate under auto.
        assert!(!Plan::new(Rotation::Auto, LDA, 2, None, 4, false).unwrap().rotates());
        assert!(!Plan::new(Rotation::Auto, LDA, 2, Some(1), 1, true).unwrap().rotates());
        let docs = Plan::new(Rotation::Data, LDA, 4, Some(1), 4, false).unwrap();
        assert_eq!((docs.blocks(), docs.block_at(3, 6), docs.part_range(3, 10)), (4, 2, 9..10));
    }

    #[test]
    fn fine_slices_spread_few_rows_over_the_slices_and_agree_with_their_numbering() {
        // Two rows, 4 slices of 2 sub-slices: one row a slice, not both in the first.
        let f = FineSlices::new(&[(0, 5707), (1, 1613)], 4, 2);
        assert_eq!((f.place(0), f.place(1)), ((0, 0), (1, 0)));
        // Zipf-like loads over 3 x 4: every fine slice within 5% of the mean, and `fine` is
        // `slice x subs + sub` of `place`, for rows with load and without.
        let load: Vec<(u32, u64)> = (0..600u32).map(|r| (r, 1_000_000 / (r as u64 + 10))).collect();
        let f = FineSlices::new(&load, 3, 4);
        let mut per = [0u64; 12];
        load.iter().for_each(|&(r, l)| per[f.fine(r as u64)] += l);
        let mean = per.iter().sum::<u64>() as f64 / 12.0;
        assert!(per.iter().all(|&p| (p as f64 - mean).abs() < 0.05 * mean), "{per:?}");
        assert!(f.imbalance < 1.05);
        for r in [0u64, 7, 599, 600, 12345] {
            let (slice, sub) = f.place(r);
            assert!(slice < 3 && sub < 4);
            assert_eq!(f.fine(r), slice * 4 + sub);
        }
    }

    #[test]
    fn balance_spreads_the_load_evenly_and_deterministically() {
        // Zipf-like loads: the largest row sets the bound, the rest fill in around it.
        let load: Vec<(u32, u64)> = (0..1000u32).map(|r| (r * 7, 100_000 / (r as u64 + 20))).collect();
        let (of, imbalance) = balance(&load, 8);
        assert_eq!(of.len(), 1000);
        let mut sums = [0u64; 8];
        load.iter().for_each(|&(r, l)| sums[of[&r] as usize] += l);
        let (max, total) = (*sums.iter().max().unwrap(), sums.iter().sum::<u64>());
        assert!((imbalance - max as f64 * 8.0 / total as f64).abs() < 1e-12);
        assert!(imbalance < 1.05, "{sums:?}");
        let mut shuffled = load.clone();
        shuffled.reverse();
        assert_eq!(balance(&shuffled, 8).0, of, "the same assignment whatever the input order");
        // One row larger than a slice's share: the bound is that row.
        let (_, imb) = balance(&[(1, 50), (2, 10), (3, 10), (4, 10)], 4);
        assert!((imb - 50.0 * 4.0 / 80.0).abs() < 1e-12);
    }
}
