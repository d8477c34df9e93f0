//! `pagerank`: PageRank (LazyTable §4) with the ranks in a table. Each worker owns blocks of
//! consecutive nodes, and at load every edge goes to the worker owning its destination
//! (`Worker::exchange`), so a worker alone computes its nodes' new ranks from their in-edges:
//! it reads its sources' ranks from the table and writes only its own blocks (as the change since
//! its last write). A block's owner is chosen so that the block lives in the owner's own process's
//! server shard (`Placement::Modulo`), so those writes never cross a socket; only the reads of
//! other workers' ranks do. Dangling nodes feed a global term spread uniformly. Under BSP this is
//! exactly the synchronous (Jacobi) iteration; under SSP it is an asynchronous one with the same
//! fixed point: r = (1-d)/N + d (P^T r + dangling mass / N). The threads of a process compute
//! each source's share once, into one array of f32 (`pagerank_shares`). The table keeps ranks as
//! f32, the owners sum and compute in f64 (`pagerank_table`).
//! Quality: L1 change per iteration (`l1_delta`) and, with `--reference`, L1 error against a
//! converged sequential run (`ref_l1`).

use super::dictionary::{check_resumed, fingerprints, keys_for, settle_ids, Dictionary};
use super::driver::Iterative;
use super::options::{parse, CommonArgs, OutputFormat};
use super::output::Output;
use super::pagerank_edges::{exchange_by_destination, LocalEdges, Owners};
use super::pagerank_shares::{share, Place, ProcessShares, ThreadShares};
use super::pagerank_table::{push_blocks, push_counts, read_blocks, Mirror, Owned};
use super::rows_out::RowsPart;
use super::state::SavedState;
use clap::Parser;
use ps_runtime::input::{read_edge_table_keyed, read_edges, resolve_format, Edges, InputFormat, KeyColumn, ReadStats};
use ps_runtime::{ColumnGet, DenseRow};
use ps_runtime::{Placement, TableKey};
use ps_runtime::{PsContext, TableHandle, Worker};
use ps_runtime::{PsError, Result};
use serde_json::{json, Value};
use std::io::Write;
use std::sync::{Arc, OnceLock};

#[derive(Parser, Debug, Clone)]
#[command(name = "pagerank", about = "Edge-scheduled PageRank")]
pub struct PageRankArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[arg(long, default_value_t = 0.85)]
    pub damping: f64,
    /// Also compute a converged sequential run and report the L1 error against it.
    #[arg(long)]
    pub reference: bool,
    /// Nodes per table row (ranks travel in blocks of consecutive ids).
    #[arg(long, default_value_t = 1024)]
    pub block: usize,
    /// The source node column of a table input (CSV with a header line, or Parquet; a 0-based
    /// column number in a CSV without one). Tables default to `src` and `dst`.
    #[arg(long)]
    pub src_col: Option<String>,
    /// The destination node column of a table input.
    #[arg(long)]
    pub dst_col: Option<String>,
}

pub const RANK: TableKey<DenseRow<f32>> = TableKey::new(0);
pub const DEGREE: TableKey<DenseRow<i64>> = TableKey::new(1);
pub const META: TableKey<DenseRow<i64>> = TableKey::new(2);
pub const GLOBAL: TableKey<DenseRow<f64>> = TableKey::new(3);

/// Sequential PageRank on a CSR built from the edge list (the baseline and the reference).
/// Returns the ranks after `iters` Jacobi iterations or once the L1 change drops below `tol`.
pub fn pagerank_sequential(n: usize, src: &[u32], dst: &[u32], d: f64, iters: usize, tol: f64) -> Vec<f64> {
    let csr = Csr::new(n, src, dst);
    let mut r = vec![1.0 / n as f64; n];
    let mut next = vec![0.0; n];
    for _ in 0..iters {
        let l1 = csr.step(&r, &mut next, d);
        std::mem::swap(&mut r, &mut next);
        if l1 < tol {
            break;
        }
    }
    r
}

/// Refuses node ids far sparser than the edges can justify. Ranks, degrees and their updates are
/// dense vectors of the largest id + 1 (about 40 bytes per node on every worker), so one corrupt
/// line such as `4000000000 1` would otherwise allocate 160 GB. An edge list names at most two
/// nodes per edge; some slack is left for isolated ids, and small graphs always pass.
fn check_node_count(input: &str, n: usize, edges: u64) -> Result<()> {
    let limit = edges.saturating_mul(16).saturating_add(1 << 20);
    if n as u64 > limit {
        return Err(PsError::Config(format!(
            "pagerank: {input}: node ids reach {} but the input has only {edges} edges (at most {limit} nodes \
             are accepted; dense rank vectors would need {:.1} GB per worker): renumber the nodes 0..N-1",
            n - 1,
            n as f64 * 40.0 / 1e9
        )));
    }
    Ok(())
}

/// In-edges in compressed rows (pull form) and out-degrees.
pub struct Csr {
    pub offsets: Vec<usize>,
    pub sources: Vec<u32>,
    pub outdeg: Vec<u32>,
}

impl Csr {
    pub fn new(n: usize, src: &[u32], dst: &[u32]) -> Self {
        let mut outdeg = vec![0u32; n];
        let mut offsets = vec![0usize; n + 1];
        for (&s, &t) in src.iter().zip(dst) {
            outdeg[s as usize] += 1;
            offsets[t as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut sources = vec![0u32; src.len()];
        for (&s, &t) in src.iter().zip(dst) {
            sources[fill[t as usize]] = s;
            fill[t as usize] += 1;
        }
        Csr { offsets, sources, outdeg }
    }

    /// One Jacobi step `next = (1-d)/N + d (P^T r + dangling/N)`; returns the L1 change.
    pub fn step(&self, r: &[f64], next: &mut [f64], d: f64) -> f64 {
        let n = r.len();
        let dangling: f64 = (0..n).filter(|&u| self.outdeg[u] == 0).map(|u| r[u]).sum();
        let base = (1.0 - d) / n as f64 + d * dangling / n as f64;
        let contrib: Vec<f64> =
            (0..n).map(|u| if self.outdeg[u] > 0 { r[u] / self.outdeg[u] as f64 } else { 0.0 }).collect();
        let mut l1 = 0.0;
        for v in 0..n {
            let s: f64 = self.sources[self.offsets[v]..self.offsets[v + 1]].iter().map(|&u| contrib[u as usize]).sum();
            next[v] = base + d * s;
            l1 += (next[v] - r[v]).abs();
        }
        l1
    }
}

pub struct PageRank {
    args: PageRankArgs,
    /// The shares this process's threads compute together (made by the first thread to start).
    shares: OnceLock<Arc<ProcessShares>>,
}

/// A worker's edges, the nodes it owns, and what it has pushed so far.
pub struct PrWorker {
    gid: usize,
    /// The job's input rows skipped at load.
    skipped: u64,
    /// Nodes (largest id + 1 over all workers).
    n: usize,
    rank: TableHandle<DenseRow<f32>>,
    global: TableHandle<DenseRow<f64>>,
    edges: LocalEdges,
    /// Blocks this worker owns and alone writes ([`Owners`]), ascending.
    owned: Vec<u64>,
    /// The places ([`Owned`]) of the dangling nodes in the owned blocks.
    dangling: Vec<u32>,
    /// The rank last pushed into the global dangling term, per owned dangling node.
    pushed_dangling: Vec<f64>,
    /// The owned nodes' table values (rank without the global term), at their places (`at`):
    /// this worker is their only writer, so it knows them exactly.
    mine: Vec<f64>,
    at: Owned,
    /// What the table holds for the owned nodes.
    held: Mirror,
    /// This iteration's contribution of each source (d * rank / out-degree), shared by the
    /// process's threads; `edges.srcs` index it.
    shares: ThreadShares,
    /// The owned ranks at the last sample (or just before the next one).
    prev_owned: Option<Vec<f64>>,
    /// This clock's share of the dangling mass every node receives: d * dangling / N.
    g: f64,
    /// The converged sequential ranks (worker 0 with --reference).
    reference: Option<Vec<f64>>,
    /// The node names, when the input's node ids needed a dictionary.
    dict: Option<Dictionary>,
}

impl Iterative for PageRank {
    const NAME: &'static str = "pagerank";
    const LOWER_IS_BETTER: bool = true;
    // The change per iteration needs an iteration to compare with.
    const INITIAL_OBJECTIVE: bool = false;
    // BSP is the Jacobi iteration: on the 1M-node benchmark graph its change in the 10th
    // iteration is the sequential loop's (0.00046), against 0.011-0.013 under ESSP with
    // staleness 1, whose stale reads slow convergence per iteration far more than they save in
    // time per iteration (about none here: every clock moves every rank anyway).
    const CONSISTENCY: Option<ps_runtime::Consistency> = Some(ps_runtime::Consistency::Bsp);
    type State = PrWorker;

    fn from_args(args: &[String]) -> Result<Self> {
        let mut args: PageRankArgs = parse("pagerank", args)?;
        args.common.validate("pagerank", 1)?;
        if args.block == 0 {
            return Err(PsError::Config("pagerank: --block must be positive".into()));
        }
        if !(0.0..1.0).contains(&args.damping) {
            return Err(PsError::Config("pagerank: --damping must be in [0, 1)".into()));
        }
        if args.common.cpp() != 1 {
            return Err(PsError::Config(
                "pagerank: an iteration cannot be split over clocks (--clocks-per-pass 1; --passes-per-clock W runs W a clock)"
                    .into(),
            ));
        }
        Ok(PageRank { args, shares: OnceLock::new() })
    }

    fn common(&self) -> &CommonArgs {
        &self.args.common
    }

    fn objective(s: &[f64]) -> Vec<(&'static str, f64)> {
        let mut v = vec![("l1_delta", s[0])];
        if s[2] > 0.0 {
            v.push(("ref_l1", s[1]));
        }
        v
    }

    fn create_tables(&self, ctx: &mut PsContext) -> Result<()> {
        let workers = ctx.num_processes() * ctx.config().threads;
        let b = self.args.block;
        // Block k lives on server k mod processes: its owner (`Owners`) is a thread of
        // that process, so the owner's writes stay in its own process.
        ctx.create_table(RANK.config("rank", b).with_placement(Placement::Modulo))?;
        ctx.create_table(DEGREE.config("outdegree", b))?;
        ctx.create_table(META.config("meta", workers))?;
        ctx.create_table(GLOBAL.config("dangling", 1))
    }

    fn start(&self, w: &mut Worker, saved: Option<&SavedState>) -> Result<PrWorker> {
        let a = &self.args;
        let (d, b) = (a.damping, a.block);
        let (gid, nw) = (w.global_thread_id(), w.total_threads());
        // Taken first: should this thread stop, the others are not left waiting at the shares.
        let threads = w.threads_per_process();
        let shared = self.shares.get_or_init(|| Arc::new(ProcessShares::new(threads))).clone();
        let mut shares = ThreadShares::new(shared, w.wait_meter());
        let (mut edges, read, nodes) = self.read(gid, nw)?;
        let skipped = super::bad_rows::settle(w, &a.common, "pagerank", &read)?;
        // Named nodes (or ids beyond u32) are numbered job-wide: their ranks.
        let dict = settle_ids(w, nodes, &mut |f| edges.src.iter_mut().chain(edges.dst.iter_mut()).for_each(&mut *f))?;
        if let Some(s) = saved {
            check_resumed("pagerank", &[dict.as_ref()], s.meta.get("ids"))?;
        }
        if a.reference && dict.is_some() {
            return Err(PsError::Config("pagerank: --reference needs node ids that are integers in 0..2^32".into()));
        }
        let mut rank = w.open(RANK)?;
        let mut deg = w.open(DEGREE)?;
        // A resumed worker finds the node count, degrees and base ranks in the restored tables.
        let fresh = saved.is_none();
        let n = self.node_count(w, &edges, fresh)?;
        if fresh {
            // u32: a count per node of the graph in every thread at once (edges per source
            // beyond 2^32 would not fit a worker's memory anyway).
            let mut counts = vec![0u32; n];
            for &s in &edges.src {
                counts[s as usize] += 1;
            }
            push_counts(&mut deg, &counts, b)?;
            drop(counts);
            w.global_barrier()?;
        }
        let mut reference = None;
        if a.reference && gid == 0 {
            let (all, _, _) = self.read(0, 1)?;
            reference = Some(pagerank_sequential(n, &all.src, &all.dst, d, 10_000, 1e-14));
        }
        let owners = Owners::balanced(w, &edges, b, n)?;
        let edges = exchange_by_destination(w, edges, &owners, b, n)?;
        let owned = owners.owned_by(gid);
        let at = Owned::new(&owners, b);
        let mut local_edges = LocalEdges::new(&edges, n, &owned, &at);
        drop(edges);
        let place = Place { pid: w.process_id(), tid: w.thread_id(), b, owners };
        let map = shares.join(&local_edges.sources, &place)?;
        local_edges.srcs.iter_mut().for_each(|s| *s = map[*s as usize]);
        drop(map);
        // The out-degrees of this thread's shares' nodes and of its owned nodes, by block.
        let mut deg_blocks: Vec<u64> = shares.blocks().chain(owned.iter().copied()).collect();
        deg_blocks.sort_unstable();
        deg_blocks.dedup();
        let deg_at = |v: usize| match deg_blocks.binary_search(&((v / b) as u64)) {
            Ok(j) => j * b + v % b,
            Err(_) => unreachable!("pagerank: the out-degree of node {v}, whose block was not read"),
        };
        let mut out_deg = vec![0f64; deg_blocks.len() * b];
        read_blocks(&mut deg, &[], |_| 0, &deg_blocks, b, n, |i, x| out_deg[deg_at(i)] = x as f64)?;
        let out_deg = |v: usize| out_deg[deg_at(v)];
        let mut dangling: Vec<u32> = Vec::new();
        let mut mine = vec![0f64; owned.len() * b];
        for &blk in &owned {
            for v in blk as usize * b..((blk as usize + 1) * b).min(n) {
                mine[at.at(v)] = (1.0 - d) / n as f64;
                if out_deg(v) == 0.0 {
                    dangling.push(at.at(v) as u32);
                }
            }
        }
        // What the table holds (a resumed worker restores it with its state).
        let held: Vec<f32> = mine.iter().map(|&x| x as f32).collect();
        if fresh {
            push_blocks(&mut rank, &mut held.clone(), owned.iter().copied(), b, |x| x != 0.0)?;
        }
        // d / out-degree: a multiplication per source and iteration instead of a division.
        let scale = shares.nodes().map(|u| out_deg(u as usize)).map(|o| if o > 0.0 { d / o } else { 0.0 }).collect();
        shares.set_scale(scale);
        let mut st = PrWorker {
            skipped,
            gid,
            n,
            rank,
            global: w.open(GLOBAL)?,
            shares,
            pushed_dangling: vec![0f64; dangling.len()],
            mine,
            held: Mirror::new(held, at.clone()),
            at,
            prev_owned: None,
            g: 0.0,
            edges: local_edges,
            owned,
            dangling,
            reference,
            dict,
        };
        match saved {
            Some(s) => restore(&mut st, s, b)?,
            // The base ranks are visible from the next clock on.
            None => w.clock()?,
        }
        Ok(st)
    }

    /// One iteration, or W with --passes-per-clock W (A-BSP): the later ones read this worker's
    /// own pushes at once (read-my-updates) and the others' from the next clock on.
    fn rows_skipped(st: &PrWorker) -> Option<u64> {
        Some(st.skipped)
    }

    fn run_clock(&self, st: &mut PrWorker, clock: i64) -> Result<()> {
        for (i, _) in self.args.common.segments(clock, 0).into_iter().enumerate() {
            self.iterate(st, clock == 0 && i == 0)?;
        }
        Ok(())
    }

    /// The L1 change of the owned ranks since the last sample (or the clock before), and
    /// worker 0's L1 error against the reference.
    fn evaluate(&self, st: &mut PrWorker, _full: bool) -> Result<Vec<f64>> {
        let vals = self.owned_ranks(st)?;
        let l1 = st.prev_owned.as_ref().map(|p| p.iter().zip(&vals).map(|(a, b)| (a - b).abs()).sum()).unwrap_or(1.0);
        // Worker 0 holds the reference and measures the error; the others add 0.
        let err = match &st.reference {
            Some(r) => {
                let all: Vec<u64> = (0..st.n.div_ceil(self.args.block) as u64).collect();
                let mut err = 0.0;
                let g = st.g;
                let held = &st.held;
                read_blocks(
                    &mut st.rank,
                    &st.owned,
                    |v| held.own(v),
                    &all,
                    self.args.block,
                    st.n,
                    |i, x| err += (x as f64 + g - r[i]).abs(),
                )?;
                err
            }
            None => 0.0,
        };
        st.prev_owned = Some(vals);
        Ok(vec![l1, err, if self.args.reference { 1.0 } else { 0.0 }])
    }

    fn before_sample(&self, st: &mut PrWorker) -> Result<()> {
        st.prev_owned = Some(self.owned_ranks(st)?);
        Ok(())
    }

    /// The rank already pushed per dangling node, the owned nodes' values, what the table holds
    /// for them, then the last sample.
    fn save(&self, st: &PrWorker) -> (Value, Vec<u8>) {
        let mine: Vec<f64> = st.owned_nodes(self.args.block).map(|v| st.mine[st.at.at(v)]).collect();
        let held = st.owned_nodes(self.args.block).map(|v| st.held.own(v) as f64);
        let mut raw: Vec<u8> = Vec::with_capacity(8 * (st.pushed_dangling.len() + 2 * mine.len()));
        for x in
            st.pushed_dangling.iter().copied().chain(mine).chain(held).chain(st.prev_owned.iter().flatten().copied())
        {
            raw.extend_from_slice(&x.to_le_bytes());
        }
        (json!({"prev_owned": st.prev_owned.as_ref().map(|p| p.len()), "ids": fingerprints(&[st.dict.as_ref()])}), raw)
    }

    /// `ranks/part-00000`: `node<TAB>score`, by score descending, from worker 0.
    fn write_output(&self, st: &mut PrWorker, w: &mut Worker, out: &Output) -> Result<()> {
        let n = st.n;
        let mut scores: Vec<(f64, u64)> = Vec::with_capacity(if st.gid == 0 { n } else { 0 });
        if st.gid == 0 {
            let g = self.args.damping * st.global.get(0)?.col(0) / n as f64;
            let all: Vec<u64> = (0..n.div_ceil(self.args.block) as u64).collect();
            read_blocks(
                &mut st.rank,
                &[],
                |_| 0.0,
                &all,
                self.args.block,
                n,
                |i, x| scores.push((x as f64 + g, i as u64)),
            )?;
            scores.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        }
        // Named nodes: every worker takes part in looking worker 0's ids up (collective).
        let ids: Vec<u64> = scores.iter().map(|s| s.1).collect();
        let keys = keys_for(st.dict.as_ref(), w, &ids)?;
        if st.gid != 0 {
            return Ok(());
        }
        match self.args.common.output_format {
            OutputFormat::Text => {
                let mut text = Vec::new();
                for (j, (s, v)) in scores.into_iter().enumerate() {
                    match &keys {
                        Some(k) => writeln!(text, "{}\t{s:.12e}", k.keys[j]).ok(),
                        None => writeln!(text, "{v}\t{s:.12e}").ok(),
                    };
                }
                out.write_part(0, "ranks", 0, |f| f.write_all(&text))?;
            }
            format => {
                let mut part = RowsPart::<f64>::new(format, 1).named("id", "rank");
                scores.iter().for_each(|&(s, v)| part.push(v, &[s]));
                part.with_keys(keys).write(out, 0, "ranks", 0)?;
            }
        }
        out.commit()?;
        log::info!("ranks written to {}", out.url);
        Ok(())
    }
}

impl PageRank {
    /// Worker `gid`'s share (of `nw`) of the edges: a table's columns (CSV, Parquet) or an edge
    /// list.
    fn read(&self, gid: usize, nw: usize) -> Result<(Edges, ReadStats, KeyColumn)> {
        let (a, c) = (&self.args, &self.args.common);
        match resolve_format(&c.input, c.input_format, a.src_col.is_some() || a.dst_col.is_some())? {
            InputFormat::Text | InputFormat::Auto => {
                let (edges, stats) = read_edges(&c.input, gid, nw, c.bad_records())?;
                Ok((edges, stats, KeyColumn::default()))
            }
            table => {
                let cols = (a.src_col.as_deref().unwrap_or("src"), a.dst_col.as_deref().unwrap_or("dst"));
                read_edge_table_keyed(&c.input, gid, nw, table, cols, c.bad_records())
            }
        }
    }

    /// One iteration: push the rank changes along this worker's edges, then fold the owned
    /// dangling nodes' changes into the global term.
    fn iterate(&self, st: &mut PrWorker, first: bool) -> Result<()> {
        let (d, b, n) = (self.args.damping, self.args.block, st.n);
        let PrWorker { rank, global, edges, mine, at, held, shares, owned, dangling, pushed_dangling, .. } = st;
        // The first iteration reads the uniform distribution, whose dangling mass it pushes itself:
        // no global term yet. The row is still read, so that the runtime prefetches it for the
        // next clock: a first read fetched on demand may already hold a faster worker's pushes of
        // this clock (a read is at least, not exactly, one clock old), which made the measured
        // change of iteration 2 differ between runs by up to 0.3%.
        let read = d * global.get(0)?.col(0) / n as f64;
        let g = if first { 0.0 } else { read };
        st.g = g;
        // The first iteration starts from the uniform distribution, as the sequential algorithm
        // does. Starting from the table's base ranks (1-d)/N alone, whose total is 1-d, leaves a
        // mass deficit that only decays as d^t, so the change per iteration fell at rate d
        // instead of at the graph's own (much faster) rate.
        let previous = |t: f64| if first { 1.0 / n as f64 } else { t + g };
        // Every source's share, filled by the process's threads together.
        let buf = shares.fill(rank, |blk| held.block(blk, n), previous, b)?;
        // The owned dangling nodes' mass of the ranks this iteration reads (so that under BSP the
        // next iteration reads exactly the Jacobi step), as the change since the last push.
        let mut dsum = 0.0;
        for (p, &at) in pushed_dangling.iter_mut().zip(dangling.iter()) {
            let r = previous(held.at_place(at as usize) as f64);
            dsum += r - *p;
            *p = r;
        }
        // Each owned node's new value: the teleport term plus its in-edges' shares. Owned nodes
        // and destinations are both ascending, so one walk pairs them.
        let base = (1.0 - d) / n as f64;
        let mut j = 0;
        for &blk in owned.iter() {
            let start = blk as usize * b;
            for (v, m) in (start..).zip(mine[at.block(blk, n)].iter_mut()) {
                let mut new = base;
                if edges.dsts.get(j).is_some_and(|&t| t as usize == v) {
                    new += edges.srcs[edges.offsets[j]..edges.offsets[j + 1]]
                        .iter()
                        .map(|&si| share(buf, si))
                        .sum::<f64>();
                    j += 1;
                }
                *m = new;
            }
        }
        held.write(rank, owned, mine, n);
        debug_assert_eq!(j, edges.dsts.len(), "an in-edge of a node this worker does not own");
        if dsum != 0.0 {
            global.inc_col(0, 0, dsum)?;
        }
        Ok(())
    }

    /// The node count: the largest id + 1 over all workers' edges (published on a fresh start,
    /// checked against the edge count).
    fn node_count(&self, w: &mut Worker, edges: &Edges, fresh: bool) -> Result<usize> {
        let mut meta = w.open(META)?;
        let gid = w.global_thread_id();
        if fresh {
            let local_max = edges.src.iter().chain(&edges.dst).map(|&x| x as i64 + 1).max().unwrap_or(0);
            meta.inc_col(0, gid as u32, local_max)?;
            meta.inc_col(1, gid as u32, edges.src.len() as i64)?;
            w.global_barrier()?;
        }
        let n = meta.get(0)?.iter().copied().max().unwrap_or(0) as usize;
        if n == 0 {
            return Err(PsError::Config(format!("pagerank: {} has no edges", self.args.common.input)));
        }
        if fresh {
            check_node_count(&self.args.common.input, n, meta.get(1)?.iter().sum::<i64>() as u64)?;
        }
        Ok(n)
    }

    /// The owned nodes' current ranks (with the global term).
    fn owned_ranks(&self, st: &mut PrWorker) -> Result<Vec<f64>> {
        Ok(st.owned_nodes(self.args.block).map(|v| st.mine[st.at.at(v)] + st.g).collect())
    }
}

/// Restores what `save` wrote.
fn restore(st: &mut PrWorker, s: &SavedState, b: usize) -> Result<()> {
    let raw = &s.raw;
    let vals: Vec<f64> = raw.chunks_exact(8).map(|x| f64::from_le_bytes(x.try_into().expect("8"))).collect();
    let prev_len = s.meta["prev_owned"].as_u64().map(|x| x as usize);
    let owned: Vec<usize> = st.owned_nodes(b).collect();
    let want = st.pushed_dangling.len() + 2 * owned.len() + prev_len.unwrap_or(0);
    if vals.len() != want || !raw.len().is_multiple_of(8) {
        return Err(PsError::codec(format!(
            "pagerank: saved state has {} values, this worker needs {want}",
            vals.len()
        )));
    }
    let (pd, rest) = vals.split_at(st.pushed_dangling.len());
    let (mine, rest) = rest.split_at(owned.len());
    let (held, prev) = rest.split_at(owned.len());
    st.pushed_dangling.copy_from_slice(pd);
    owned.iter().zip(mine).for_each(|(&v, &x)| st.mine[st.at.at(v)] = x);
    owned.iter().zip(held).for_each(|(&v, &x)| st.held.set(v, x as f32));
    st.prev_owned = prev_len.map(|_| prev.to_vec());
    Ok(())
}

impl PrWorker {
    /// The owned nodes, ascending.
    fn owned_nodes(&self, b: usize) -> impl Iterator<Item = usize> + '_ {
        self.owned.iter().flat_map(move |&k| k as usize * b..((k as usize + 1) * b).min(self.n))
    }
}
