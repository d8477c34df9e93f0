//! Sparse logistic regression by SGD, the classic parameter-server workload (Bösen, ps-lite,
//! Angel), written as a user would: against `ps_runtime`'s public API only, through the same
//! iterative driver as the built-in apps (objective sampling, `--target`, checkpoints and resume,
//! committed output).
//!
//! Input: LibSVM lines, `label index:value ...` (label > 0 is the positive class; indices from 1;
//! a bias feature 0 is added). The weights live in one table, `block` features per row, so a
//! worker reads and updates only the rows of the features its examples use. Each clock a worker
//! runs SGD over its next minibatch (1/C of its examples, `--clocks-per-pass C`) with AdaGrad step
//! sizes per feature; L2 regularisation is applied lazily, to the features an example touches.

use clap::Parser;
use ps_apps::driver::Iterative;
use ps_apps::options::{parse, CommonArgs};
use ps_apps::output::Output;
use ps_apps::state::SavedState;
use ps_runtime::input::{plan_splits, BadRecords, Decoded, LineReader};
use ps_runtime::storage::{storage_for, Storage};
use ps_runtime::{DenseRow, PsContext, PsError, Result, TableHandle, TableKey, Worker};

const WEIGHTS: TableKey<DenseRow<f32>> = TableKey::new(0);
/// Row 0, one column per worker: the largest feature index each worker read.
const DIMS: TableKey<DenseRow<i64>> = TableKey::new(1);

#[derive(Parser, Debug, Clone)]
#[command(name = "logreg", about = "Sparse logistic regression by SGD (LibSVM input: label index:value ...)")]
pub struct LogRegArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// AdaGrad step size: feature f moves by lr * g / sqrt(sum of g^2 so far), g its gradient,
    /// so rare features take large steps and frequent ones (the bias, which every worker
    /// updates every example) small ones.
    #[arg(long, default_value_t = 0.1)]
    pub lr: f32,
    /// L2 regularisation strength.
    #[arg(long, default_value_t = 1e-6)]
    pub lambda: f32,
    /// Hold out this fraction of examples for test log-loss and accuracy.
    #[arg(long, default_value_t = 0.2)]
    pub test_fraction: f64,
    /// Test examples from this input instead (a file, directory or pattern; then every example
    /// of --input trains and --test-fraction is not used).
    #[arg(long, value_name = "URL")]
    pub test_input: Option<String>,
    /// Features per table row.
    #[arg(long, default_value_t = 64)]
    pub block: usize,
}

pub struct LogReg {
    args: LogRegArgs,
}

/// A worker's examples, flattened: example `e` has features `idx[off[e]..off[e+1]]`.
#[derive(Default)]
struct Examples {
    y: Vec<f32>,
    off: Vec<usize>,
    idx: Vec<u32>,
    val: Vec<f32>,
}

impl Examples {
    fn len(&self) -> usize {
        self.y.len()
    }
    fn push(&mut self, y: f32, feats: &[(u32, f32)]) {
        if self.off.is_empty() {
            self.off.push(0);
        }
        self.y.push(y);
        self.idx.extend(feats.iter().map(|f| f.0));
        self.val.extend(feats.iter().map(|f| f.1));
        self.off.push(self.idx.len());
    }
    fn features(&self, e: usize) -> impl Iterator<Item = (u32, f32)> + '_ {
        let r = self.off[e]..self.off[e + 1];
        self.idx[r.clone()].iter().copied().zip(self.val[r].iter().copied())
    }
}

pub struct LogRegWorker {
    gid: usize,
    nw: usize,
    train: Examples,
    test: Examples,
    w: Weights,
    dims: u32,
    /// AdaGrad's sum of squared gradients per feature, this worker's own (saved in checkpoints).
    sq: Vec<f32>,
}

/// The weight table: feature `f` is column `f % block` of row `f / block`.
struct Weights {
    t: TableHandle<DenseRow<f32>>,
    block: u32,
}

impl Weights {
    fn get(&mut self, f: u32) -> Result<f32> {
        Ok(self.t.get((f / self.block) as u64)?[(f % self.block) as usize])
    }

    fn inc(&mut self, f: u32, delta: f32) -> Result<()> {
        self.t.inc_col((f / self.block) as u64, f % self.block, delta)
    }

    /// The predicted probability of the positive class.
    fn prob(&mut self, feats: impl Iterator<Item = (u32, f32)>) -> Result<f32> {
        let mut m = 0f32;
        for (f, x) in feats {
            m += self.get(f)? * x;
        }
        Ok(1.0 / (1.0 + (-m).exp()))
    }
}

/// A stable hash of an example's position, for the held-out split (the same in every run).
fn held_out(path: &str, offset: u64, seed: u64, fraction: f64) -> bool {
    let mut h = seed ^ 0x9e37_79b9_7f4a_7c15;
    for b in path.bytes().chain(offset.to_le_bytes()) {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    fraction > 0.0 && ((h >> 11) as f64 / (1u64 << 53) as f64) < fraction
}

/// One LibSVM line: the label and the features (bias 0 first), or what is wrong with it.
fn parse_line(line: &str, feats: &mut Vec<(u32, f32)>) -> std::result::Result<Option<f32>, String> {
    let line = line.split('#').next().unwrap_or("").trim();
    if line.is_empty() {
        return Ok(None);
    }
    let mut it = line.split_ascii_whitespace();
    let label: f32 = it.next().and_then(|l| l.parse().ok()).ok_or("the label is not a number")?;
    feats.clear();
    feats.push((0, 1.0));
    for tok in it {
        let (i, v) = tok.split_once(':').ok_or_else(|| format!("'{tok}' is not index:value"))?;
        let i: u32 = i.parse().map_err(|_| format!("feature index '{i}' is not a non-negative integer"))?;
        let v: f32 = v.parse().map_err(|_| format!("feature value '{v}' is not a number"))?;
        if i == 0 || i == u32::MAX {
            return Err(format!("feature index {i} is out of range (1..{})", u32::MAX));
        }
        feats.push((i, v));
    }
    Ok(Some(if label > 0.0 { 1.0 } else { 0.0 }))
}

impl LogReg {
    /// This worker's training and test examples and the largest feature index it read.
    fn read(&self, gid: usize, nw: usize) -> Result<(Examples, Examples, u32)> {
        let (mut train, mut test) = (Examples::default(), Examples::default());
        let fraction = if self.args.test_input.is_some() { 0.0 } else { self.args.test_fraction };
        let mut maxf = self.read_into(&self.args.common.input, gid, nw, fraction, &mut train, &mut test)?;
        if let Some(url) = &self.args.test_input {
            let mut none = Examples::default();
            maxf = maxf.max(self.read_into(url, gid, nw, 1.0, &mut none, &mut test)?);
        }
        Ok((train, test, maxf))
    }

    /// Reads worker `gid`'s share of `url`: a `fraction` of the examples (by a hash of their
    /// position; all with 1.0) go to `test`, the others to `train`.
    fn read_into(
        &self,
        url: &str,
        gid: usize,
        nw: usize,
        fraction: f64,
        train: &mut Examples,
        test: &mut Examples,
    ) -> Result<u32> {
        let c = &self.args.common;
        let storage = storage_for(url)?;
        let st: &dyn Storage = &Decoded(storage.as_ref());
        let (mut maxf, mut feats) = (0u32, Vec::new());
        for split in plan_splits(&st.list(url)?, gid, nw) {
            let mut r = LineReader::new(st, &split)?;
            while let Some((line, at)) = r.next_line()? {
                match parse_line(line, &mut feats) {
                    Ok(None) => {}
                    Ok(Some(y)) => {
                        maxf = feats.iter().fold(maxf, |m, f| m.max(f.0));
                        let to_test = fraction >= 1.0 || held_out(&split.path, at, c.seed, fraction);
                        if to_test { &mut *test } else { &mut *train }.push(y, &feats);
                    }
                    Err(why) if c.bad_records() == BadRecords::Skip => log::debug!("{}: skipped: {why}", split.path),
                    Err(why) => {
                        let n = st.line_number(&split.path, at)?;
                        return Err(PsError::Config(format!("{}:{n}: {why}", split.path)));
                    }
                }
            }
        }
        Ok(maxf)
    }
}

impl Iterative for LogReg {
    const NAME: &'static str = "logreg";
    const LOWER_IS_BETTER: bool = true;
    type State = LogRegWorker;

    fn from_args(args: &[String]) -> Result<Self> {
        let mut args: LogRegArgs = parse("logreg", args)?;
        args.common.validate("logreg", 4)?;
        if args.block == 0 || !(0.0..1.0).contains(&args.test_fraction) || args.lr <= 0.0 {
            return Err(PsError::Config("logreg: --block and --lr must be positive, --test-fraction in [0, 1)".into()));
        }
        Ok(LogReg { args })
    }

    fn common(&self) -> &CommonArgs {
        &self.args.common
    }

    /// Sums: train log-loss and count, test log-loss, count and correct predictions.
    fn objective(s: &[f64]) -> Vec<(&'static str, f64)> {
        let mut v = vec![("logloss", s[0] / s[1].max(1.0))];
        if s[3] > 0.0 {
            v.push(("test_logloss", s[2] / s[3]));
            v.push(("test_accuracy", s[4] / s[3]));
        }
        v
    }

    fn create_tables(&self, ctx: &mut PsContext) -> Result<()> {
        let workers = ctx.num_processes() * ctx.config().threads;
        ctx.create_table(WEIGHTS.config("weights", self.args.block))?;
        ctx.create_table(DIMS.config("dims", workers))
    }

    fn start(&self, w: &mut Worker, saved: Option<&SavedState>) -> Result<LogRegWorker> {
        let (gid, nw) = (w.global_thread_id(), w.total_threads());
        let (train, test, maxf) = self.read(gid, nw)?;
        log::info!("worker {gid}: {} training and {} held-out examples", train.len(), test.len());
        let mut dims = w.open(DIMS)?;
        // A resumed job finds the dimensions in the restored table.
        if saved.is_none() {
            dims.inc_col(0, gid as u32, maxf as i64)?;
            w.global_barrier()?;
        }
        let dims = dims.get(0)?.iter().copied().max().unwrap_or(0) as u32;
        let wt = Weights { t: w.open(WEIGHTS)?, block: self.args.block as u32 };
        let mut sq = vec![0f32; dims as usize + 1];
        if let Some(s) = saved {
            if s.raw.len() != sq.len() * 4 {
                return Err(PsError::Config(format!(
                    "logreg: the checkpoint holds {} bytes of AdaGrad state, {} features need {}",
                    s.raw.len(),
                    sq.len(),
                    sq.len() * 4
                )));
            }
            for (v, b) in sq.iter_mut().zip(s.raw.chunks_exact(4)) {
                *v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        Ok(LogRegWorker { gid, nw, train, test, w: wt, dims, sq })
    }

    fn run_clock(&self, st: &mut LogRegWorker, clock: i64) -> Result<()> {
        let a = &self.args;
        let LogRegWorker { train, w, sq, .. } = st;
        for (_, range) in a.common.segments(clock, train.len()) {
            for e in range {
                let g = w.prob(train.features(e))? - train.y[e];
                for (f, x) in train.features(e) {
                    let grad = g * x + a.lambda * w.get(f)?;
                    let sq = &mut sq[f as usize];
                    *sq += grad * grad;
                    w.inc(f, -a.lr * grad / (sq.sqrt() + 1e-6))?;
                }
            }
        }
        Ok(())
    }

    /// Intermediate samples look at every k-th example (at most 20K of each set); the last
    /// evaluation at all of them.
    fn evaluate(&self, st: &mut LogRegWorker, full: bool) -> Result<Vec<f64>> {
        let step = |n: usize| if full { 1 } else { n.div_ceil(20_000).max(1) };
        let mut s = vec![0f64; 5];
        let LogRegWorker { train, test, w, .. } = st;
        for (set, base) in [(&*train, 0), (&*test, 2)] {
            for e in (0..set.len()).step_by(step(set.len())) {
                let p = w.prob(set.features(e))?.clamp(1e-7, 1.0 - 1e-7) as f64;
                let y = set.y[e] as f64;
                s[base] -= y * p.ln() + (1.0 - y) * (1.0 - p).ln();
                s[base + 1] += 1.0;
                if base == 2 && (p >= 0.5) == (y > 0.5) {
                    s[4] += 1.0;
                }
            }
        }
        Ok(s)
    }

    /// The AdaGrad sums, for an exact resume (the weights are in the tables).
    fn save(&self, st: &LogRegWorker) -> (serde_json::Value, Vec<u8>) {
        (serde_json::Value::Null, st.sq.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    /// `weights/part-*`: `feature<TAB>weight` for the non-zero weights (feature 0 is the bias);
    /// worker k writes the features `f` with `f mod workers = k`.
    fn write_output(&self, st: &mut LogRegWorker, w: &mut Worker, out: &Output) -> Result<()> {
        let mut text = String::new();
        for f in (st.gid as u32..=st.dims).step_by(st.nw) {
            let v = st.w.get(f)?;
            if v != 0.0 {
                text += &format!("{f}\t{v}\n");
            }
        }
        out.write_part(st.gid, "weights", st.gid, |o| o.write_all(text.as_bytes()))?;
        out.commit_when_all_wrote(w, "weights")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libsvm_lines_parse_with_a_bias_and_bad_ones_say_why() {
        let mut f = Vec::new();
        assert_eq!(parse_line("+1 3:0.5 10:2", &mut f), Ok(Some(1.0)));
        assert_eq!(f, [(0, 1.0), (3, 0.5), (10, 2.0)]);
        assert_eq!(parse_line("-1 2:1 # comment", &mut f), Ok(Some(0.0)));
        assert_eq!(parse_line("  ", &mut f), Ok(None));
        assert!(parse_line("x 1:1", &mut f).unwrap_err().contains("label"));
        assert!(parse_line("1 1-1", &mut f).unwrap_err().contains("index:value"));
        assert!(parse_line("1 0:1", &mut f).unwrap_err().contains("out of range"));
    }

    #[test]
    fn the_held_out_split_is_stable_and_near_its_fraction() {
        let n = (0..10_000).filter(|o| held_out("p", *o, 1, 0.2)).count();
        assert!((1800..2200).contains(&n), "{n}");
        assert_eq!(held_out("p", 17, 1, 0.2), held_out("p", 17, 1, 0.2));
        assert!(!(0..1000).any(|o| held_out("p", o, 1, 0.0)));
    }
}
