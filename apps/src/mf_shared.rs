//! MF's item slice, shared by the threads of one process under the rotating schedule
//! (`shared_slice`): item slices rotate among processes, a process's slice is cut into one
//! sub-slice per thread, and in a clock each thread runs SGD on its ratings of every sub-slice in
//! turn, changing the process's one copy of the item rows in place, as LIBMF's threads change
//! one model. Each thread keeps its own users' factors (`--user-factors local`, the default).
//! A process with one thread takes this path too: its slot finds a row in O(1), where the thread
//! cache's lookup per rating cost more.
//!
//! When every thread rotated on its own, each moved the whole item model through five copies
//! once a pass (server reply, process cache, thread cache, the base copy for the difference, the
//! oplog), so the row work of a pass grew with the threads while the SGD did not: at 1 x 16 on
//! 16 cores the job used 1.71x the CPU of one worker per pass.

use super::mf::{MfWorker, HINT_AHEAD};
use super::mf_kernel::sgd_step_fn;
use super::rotation::Plan;
use super::shared_slice::ThreadSlice;
use ps_runtime::Result;

/// An item row's factors as the threads change them (16 items' factors a row).
type Items = Vec<f32>;

/// A thread's part in its process's item slice.
pub(super) struct SharedItems {
    slice: ThreadSlice<Items>,
    pid: usize,
    /// The table rows of this thread's sub-slices of each slice: `rows[slice][k]` those of its
    /// `k`-th (ascending).
    rows: Vec<Vec<Vec<u64>>>,
    /// Each rating's row in the slot, for the sub-slice being trained; kept across clocks. Made
    /// afresh each clock it grew by doubling into newly mapped memory: at 1 x 1 (a clock's
    /// ratings in one sub-slice, 1M here) 19% of a 3-pass job's page faults.
    at: Vec<u32>,
}

impl SharedItems {
    /// A thread of process `pid`; `rows[f]`: the rows of fine slice `f` (slice x sub-slices +
    /// sub-slice).
    pub(super) fn new(slice: ThreadSlice<Items>, pid: usize, rows: &[Vec<u64>]) -> Self {
        let mine = rows.chunks(slice.subs()).map(|subs| subs[slice.owned()].to_vec()).collect();
        SharedItems { slice, pid, rows: mine, at: Vec::new() }
    }

    /// The rows of each of this thread's sub-slices, which it loads for the process at `clock`.
    pub(super) fn rows_at(&self, plan: &Plan, clock: i64) -> &[Vec<u64>] {
        &self.rows[plan.block_at(self.pid, clock) % plan.slices]
    }
}

/// A rotating clock of a thread that shares its process's slice: load this thread's sub-slice,
/// train on one sub-slice a step (the process's threads in turn), send this thread's
/// sub-slice's changes. `lr`: the pass's step size.
pub(super) fn run_steps(st: &mut MfWorker, clock: i64, lr: f32, lambda: f32) -> Result<()> {
    let Some(mut sh) = st.shared.take() else { return Ok(()) };
    let r = train_steps(st, &mut sh, clock, lr, lambda);
    st.shared = Some(sh);
    r
}

fn train_steps(st: &mut MfWorker, sh: &mut SharedItems, clock: i64, lr: f32, lambda: f32) -> Result<()> {
    let t = sh.slice.subs();
    let base = st.plan.block_at(sh.pid, clock);
    let rt = &mut st.rt;
    for (sub, rows) in sh.slice.owned().zip(sh.rows_at(&st.plan, clock)) {
        sh.slice.load(sub, rows, clock, |r, v| {
            let row = rt.get(r)?;
            v.clear();
            v.extend_from_slice(&row);
            Ok(())
        })?;
    }
    let MfWorker { train, mu, local, seen, ir, blocks, .. } = st;
    let Some(local) = local.as_mut() else { return Ok(()) };
    let step = sgd_step_fn();
    // Each rating's row in the slot, looked up before a step's loop so that the loop can ask for
    // the item factors a few ratings ahead: rows are visited in no order the hardware
    // prefetcher follows (without the hint, 1 x 2 used 25% more CPU than 1 x 1 on 2 cores).
    let at = &mut sh.at;
    for sub in sh.slice.visits() {
        let mut items = sh.slice.take(sub, clock)?;
        let seg = &train[blocks[base * t + sub].clone()];
        at.clear();
        at.reserve(seg.len());
        let mut last: Option<(u64, u32)> = None;
        for r in seg {
            let row = ir.row(r.item);
            let i = match last {
                Some((was, i)) if was == row => i,
                _ => items.index(row)? as u32,
            };
            last = Some((row, i));
            at.push(i);
        }
        let mut sse = 0f64;
        for (n, r) in seg.iter().enumerate() {
            if let (Some(next), Some(&j)) = (seg.get(n + HINT_AHEAD), at.get(n + HINT_AHEAD)) {
                ps_runtime::prefetch(&items.values[j as usize][ir.cols(next.item)]);
                // Users are visited in order but sparsely, which the hardware prefetcher does
                // not follow either.
                ps_runtime::prefetch(local.row(next.user));
            }
            let item = &mut items.values[at[n] as usize][ir.cols(r.item)];
            let e = step(local.row_mut(r.user), item, r.value - *mu, lr, lambda);
            sse += (e * e) as f64;
        }
        seen[0] += sse;
        seen[1] += seg.len() as f64;
    }
    // The table's copy is the row as loaded: overwriting it makes the clock's change the
    // difference the runtime computes for dense rows anyway.
    let rt = &mut st.rt;
    sh.slice.flush(|row, now| {
        rt.get_mut(row)?.copy_from_slice(now);
        Ok(())
    })
}
