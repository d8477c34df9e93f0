//! `pagerank`: edge-scheduled PageRank (LazyTable §4). Ranks live in a table; each worker owns a
//! share of the edges and, every iteration (a clock, or W a clock with --passes-per-clock W),
//! pushes to each destination the change of its sources' ranks since it last pushed them: `inc(rank[v], d * (r[u] - pushed[u]) / outdeg(u))`,
//! pre-aggregated per destination. Dangling nodes feed a global term spread uniformly. Under BSP
//! this is the synchronous (Jacobi) iteration; under SSP it is an asynchronous one with the same
//! fixed point: r = (1-d)/N + d (P^T r + dangling mass / N).
//! Quality: L1 change per iteration (`l1_delta`) and, with `--reference`, L1 error against a
//! converged sequential run (`ref_l1`).

use super::driver::Iterative;
use super::options::{parse, CommonArgs, OutputFormat};
use super::output::Output;
use super::rows_out::RowsPart;
use super::state::SavedState;
use crate::config::TableConfig;
use crate::error::{PsError, Result};
use crate::input::{read_edges, Edges};
use crate::row::{ColumnGet, DenseRow, Element};
use crate::{PsContext, TableHandle, Worker};
use clap::Parser;
use serde_json::{json, Value};
use std::io::Write;

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
}

pub const RANK: u32 = 0;
pub const DEGREE: u32 = 1;
pub const META: u32 = 2;
pub const GLOBAL: u32 = 3;

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
}

/// A worker's edges, the nodes it owns, and what it has pushed so far.
pub struct PrWorker {
    gid: usize,
    /// Nodes (largest id + 1 over all workers).
    n: usize,
    rank: TableHandle<DenseRow<f64>>,
    global: TableHandle<DenseRow<f64>>,
    edges: LocalEdges,
    /// Blocks this worker owns (base rank, dangling nodes, quality): block = gid mod workers.
    owned: Vec<u64>,
    out_deg: Vec<f64>,
    /// Dangling nodes in the owned blocks.
    dangling: Vec<u32>,
    /// Ranks read this clock (dense, by node id).
    local: Vec<f64>,
    /// The rank last pushed per source (index into `edges.sources`) and per dangling node.
    pushed: Vec<f64>,
    pushed_dangling: Vec<f64>,
    /// Pushes of this clock per destination, before they are sent.
    acc: Vec<f64>,
    /// This clock's push per source edge: d * (rank - pushed) / out-degree, per source.
    share: Vec<f64>,
    /// The owned ranks at the last sample (or just before the next one).
    prev_owned: Option<Vec<f64>>,
    /// This clock's share of the dangling mass every node receives: d * dangling / N.
    g: f64,
    /// The converged sequential ranks (worker 0 with --reference).
    reference: Option<Vec<f64>>,
}

/// A worker's edges grouped by destination (pull form): each destination's sum gathers its
/// sources' shares and is written once. Grouped by source, every edge was a scattered
/// read-modify-write of the destination's sum, which made the edge loop twice as slow per edge
/// as the plain loop's gather.
struct LocalEdges {
    /// This worker's source nodes (sorted) and the blocks holding them.
    sources: Vec<u32>,
    src_blocks: Vec<u64>,
    /// This worker's destination nodes (sorted); the in-edges of `dsts[j]` are
    /// `srcs[offsets[j]..offsets[j + 1]]`, as indexes into `sources`.
    dsts: Vec<u32>,
    offsets: Vec<usize>,
    srcs: Vec<u32>,
}

impl LocalEdges {
    /// Groups the edges with counting sorts over the node ids (`n` = largest id + 1): linear in
    /// edges and nodes, where sorting (and a binary search per edge for the source's index) cost
    /// a third of PageRank's load time. A destination's edges keep input order, so its sum adds
    /// the same terms in the same order in every run.
    fn new(edges: &Edges, b: usize, n: usize) -> Self {
        let mut out = vec![0u32; n];
        let mut into = vec![0usize; n + 1];
        for (&s, &t) in edges.src.iter().zip(&edges.dst) {
            out[s as usize] += 1;
            into[t as usize + 1] += 1;
        }
        // out[v] becomes the index of source v among this worker's sources.
        let mut sources = Vec::new();
        for (v, o) in out.iter_mut().enumerate() {
            if *o > 0 {
                *o = sources.len() as u32;
                sources.push(v as u32);
            }
        }
        let dsts: Vec<u32> = (0..n).filter(|&v| into[v + 1] > 0).map(|v| v as u32).collect();
        for v in 0..n {
            into[v + 1] += into[v];
        }
        let mut offsets: Vec<usize> = dsts.iter().map(|&v| into[v as usize]).collect();
        offsets.push(edges.dst.len());
        // Placing each edge straight at its destination's slot scatters writes over the whole
        // array (a cache miss per edge: 8x the load time of grouping by source). So first into
        // buckets of 1024 destinations (a thousand sequential write streams), then within each
        // bucket, whose slots are close together. Both passes are stable.
        const SHIFT: u32 = 10;
        let mut bucket = vec![0usize; (n >> SHIFT) + 2];
        for &t in &edges.dst {
            bucket[(t >> SHIFT) as usize + 1] += 1;
        }
        for i in 1..bucket.len() {
            bucket[i] += bucket[i - 1];
        }
        let mut by_bucket = vec![(0u32, 0u32); edges.src.len()];
        for (&s, &t) in edges.src.iter().zip(&edges.dst) {
            let at = &mut bucket[(t >> SHIFT) as usize];
            by_bucket[*at] = (out[s as usize], t);
            *at += 1;
        }
        let mut srcs = vec![0u32; edges.src.len()];
        for &(si, t) in &by_bucket {
            let at = &mut into[t as usize];
            srcs[*at] = si;
            *at += 1;
        }
        let mut src_blocks: Vec<u64> = sources.iter().map(|&u| u as u64 / b as u64).collect();
        src_blocks.dedup();
        LocalEdges { sources, src_blocks, dsts, offsets, srcs }
    }
}

impl Iterative for PageRank {
    const NAME: &'static str = "pagerank";
    const LOWER_IS_BETTER: bool = true;
    // The change per iteration needs an iteration to compare with.
    const INITIAL_OBJECTIVE: bool = false;
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
        Ok(PageRank { args })
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
        ctx.create_table(TableConfig::new(RANK, "rank", "dense_f64", b))?;
        ctx.create_table(TableConfig::new(DEGREE, "outdegree", "dense_i64", b))?;
        ctx.create_table(TableConfig::new(META, "meta", "dense_i64", workers))?;
        ctx.create_table(TableConfig::new(GLOBAL, "dangling", "dense_f64", 1))
    }

    fn start(&self, w: &mut Worker, saved: Option<&SavedState>) -> Result<PrWorker> {
        let (a, c) = (&self.args, &self.args.common);
        let (d, b) = (a.damping, a.block);
        let (gid, nw) = (w.global_thread_id(), w.total_threads());
        let (edges, _) = read_edges(&c.input, gid, nw, c.bad_records())?;
        let mut rank = w.table::<DenseRow<f64>>(RANK)?;
        let mut deg = w.table::<DenseRow<i64>>(DEGREE)?;
        // A resumed worker finds the node count, degrees and base ranks in the restored tables.
        let fresh = saved.is_none();
        let n = self.node_count(w, &edges, fresh)?;
        if fresh {
            let mut counts = vec![0i64; n];
            for &s in &edges.src {
                counts[s as usize] += 1;
            }
            push_blocks(&mut deg, &mut counts, b, |x| x != 0)?;
            w.global_barrier()?;
        }
        let mut reference = None;
        if a.reference && gid == 0 {
            let (all, _) = read_edges(&c.input, 0, 1, c.bad_records())?;
            reference = Some(pagerank_sequential(n, &all.src, &all.dst, d, 10_000, 1e-14));
        }
        let local_edges = LocalEdges::new(&edges, b, n);
        drop(edges);
        let owned: Vec<u64> = (gid as u64..n.div_ceil(b) as u64).step_by(nw).collect();
        let mut out_deg = vec![0f64; n];
        let mut deg_blocks: Vec<u64> = local_edges.src_blocks.iter().chain(&owned).copied().collect();
        deg_blocks.sort_unstable();
        deg_blocks.dedup();
        read_blocks(&mut deg, &deg_blocks, b, n, |i, x| out_deg[i] = x as f64)?;
        let mut dangling: Vec<u32> = Vec::new();
        let mut base = vec![0f64; n];
        for &blk in &owned {
            for v in blk as usize * b..((blk as usize + 1) * b).min(n) {
                base[v] = (1.0 - d) / n as f64;
                if out_deg[v] == 0.0 {
                    dangling.push(v as u32);
                }
            }
        }
        if fresh {
            push_blocks(&mut rank, &mut base, b, |x| x != 0.0)?;
        }
        let mut st = PrWorker {
            gid,
            n,
            rank,
            global: w.table(GLOBAL)?,
            local: vec![0f64; n],
            pushed: vec![0f64; local_edges.sources.len()],
            share: vec![0f64; local_edges.sources.len()],
            pushed_dangling: vec![0f64; dangling.len()],
            acc: vec![0f64; n],
            prev_owned: None,
            g: 0.0,
            edges: local_edges,
            owned,
            out_deg,
            dangling,
            reference,
        };
        match saved {
            Some(s) => restore(&mut st, s)?,
            // The base ranks are visible from the next clock on.
            None => w.clock()?,
        }
        Ok(st)
    }

    /// One iteration, or W with --passes-per-clock W (A-BSP): the later ones read this worker's
    /// own pushes at once (read-my-updates) and the others' from the next clock on.
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
                read_blocks(&mut st.rank, &all, self.args.block, st.n, |i, x| err += (x + st.g - r[i]).abs())?;
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

    /// The rank already pushed per source and per dangling node, then the last sample.
    fn save(&self, st: &PrWorker) -> (Value, Vec<u8>) {
        let mut raw: Vec<u8> = Vec::with_capacity(8 * (st.pushed.len() + st.pushed_dangling.len()));
        for x in st.pushed.iter().chain(&st.pushed_dangling).chain(st.prev_owned.iter().flatten()) {
            raw.extend_from_slice(&x.to_le_bytes());
        }
        (json!({"prev_owned": st.prev_owned.as_ref().map(|p| p.len())}), raw)
    }

    /// `ranks/part-00000`: `node<TAB>score`, by score descending, from worker 0.
    fn write_output(&self, st: &mut PrWorker, _w: &mut Worker, out: &Output) -> Result<()> {
        if st.gid != 0 {
            return Ok(());
        }
        let n = st.n;
        let g = self.args.damping * st.global.get(0)?.col(0) / n as f64;
        let all: Vec<u64> = (0..n.div_ceil(self.args.block) as u64).collect();
        let mut scores: Vec<(f64, u64)> = Vec::with_capacity(n);
        read_blocks(&mut st.rank, &all, self.args.block, n, |i, x| scores.push((x + g, i as u64)))?;
        scores.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        match self.args.common.output_format {
            OutputFormat::Text => {
                let mut text = Vec::new();
                for (s, v) in scores {
                    writeln!(text, "{v}\t{s:.12e}").ok();
                }
                out.write_part(0, "ranks", 0, |f| f.write_all(&text))?;
            }
            OutputFormat::Binary => {
                let mut part = RowsPart::<f64>::new(OutputFormat::Binary, 1);
                scores.iter().for_each(|&(s, v)| part.push(v, &[s]));
                part.write(out, 0, "ranks", 0)?;
            }
        }
        out.commit()?;
        log::info!("ranks written to {}", out.url);
        Ok(())
    }
}

impl PageRank {
    /// One iteration: push the rank changes along this worker's edges, then fold the owned
    /// dangling nodes' changes into the global term.
    fn iterate(&self, st: &mut PrWorker, first: bool) -> Result<()> {
        let (d, b, n) = (self.args.damping, self.args.block, st.n);
        let PrWorker { rank, global, edges, local, pushed, acc, share, out_deg, .. } = st;
        let g = d * global.get(0)?.col(0) / n as f64;
        st.g = g;
        read_blocks(rank, &edges.src_blocks, b, n, |i, x| local[i] = x)?;
        // The first iteration starts from the uniform distribution, as the sequential algorithm
        // does. Starting from the table's base ranks (1-d)/N alone, whose total is 1-d, leaves a
        // mass deficit that only decays as d^t, so the change per iteration fell at rate d
        // instead of at the graph's own (much faster) rate.
        if first {
            local.iter_mut().for_each(|x| *x = 1.0 / n as f64 - g);
        }
        // Rank changes along this worker's edges: each source's share once, then each
        // destination's sum of its sources' shares.
        for ((x, p), &u) in share.iter_mut().zip(pushed.iter_mut()).zip(&edges.sources) {
            let r = local[u as usize] + g;
            *x = d * (r - *p) / out_deg[u as usize];
            *p = r;
        }
        for (j, &v) in edges.dsts.iter().enumerate() {
            let terms = &edges.srcs[edges.offsets[j]..edges.offsets[j + 1]];
            acc[v as usize] += terms.iter().map(|&si| share[si as usize]).sum::<f64>();
        }
        push_blocks(rank, acc, b, |x| x != 0.0)?;
        // Dangling nodes owned here: fold their rank changes into the global term.
        if !st.dangling.is_empty() {
            read_blocks(rank, &st.owned, b, n, |i, x| local[i] = x)?;
            if first {
                local.iter_mut().for_each(|x| *x = 1.0 / n as f64 - g);
            }
            let mut dsum = 0.0;
            for (j, &v) in st.dangling.iter().enumerate() {
                let r = local[v as usize] + g;
                dsum += r - st.pushed_dangling[j];
                st.pushed_dangling[j] = r;
            }
            if dsum != 0.0 {
                global.inc_col(0, 0, dsum)?;
            }
        }
        Ok(())
    }

    /// The node count: the largest id + 1 over all workers' edges (published on a fresh start,
    /// checked against the edge count).
    fn node_count(&self, w: &mut Worker, edges: &Edges, fresh: bool) -> Result<usize> {
        let mut meta = w.table::<DenseRow<i64>>(META)?;
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
        let mut vals = Vec::new();
        read_blocks(&mut st.rank, &st.owned, self.args.block, st.n, |_, x| vals.push(x + st.g))?;
        Ok(vals)
    }
}

/// Restores what `save` wrote.
fn restore(st: &mut PrWorker, s: &SavedState) -> Result<()> {
    let raw = &s.raw;
    let vals: Vec<f64> = raw.chunks_exact(8).map(|x| f64::from_le_bytes(x.try_into().expect("8"))).collect();
    let prev_len = s.meta["prev_owned"].as_u64().map(|x| x as usize);
    let want = st.pushed.len() + st.pushed_dangling.len() + prev_len.unwrap_or(0);
    if vals.len() != want || !raw.len().is_multiple_of(8) {
        return Err(PsError::codec(format!(
            "pagerank: saved state has {} values, this worker needs {want}",
            vals.len()
        )));
    }
    let (p, rest) = vals.split_at(st.pushed.len());
    let (pd, prev) = rest.split_at(st.pushed_dangling.len());
    st.pushed.copy_from_slice(p);
    st.pushed_dangling.copy_from_slice(pd);
    st.prev_owned = prev_len.map(|_| prev.to_vec());
    Ok(())
}

/// Adds `vals[v]` to node `v` for every node, one dense row update per block with a non-zero
/// entry, and resets `vals` to zero.
fn push_blocks<T: Element>(
    t: &mut TableHandle<DenseRow<T>>,
    vals: &mut [T],
    b: usize,
    nonzero: impl Fn(T) -> bool,
) -> Result<()> {
    let mut upd = DenseRow(vec![T::default(); b]);
    for (blk, chunk) in vals.chunks_mut(b).enumerate() {
        if chunk.iter().any(|x| nonzero(*x)) {
            upd.0[..chunk.len()].copy_from_slice(chunk);
            upd.0[chunk.len()..].iter_mut().for_each(|x| *x = T::default());
            t.inc(blk as u64, &upd);
            chunk.iter_mut().for_each(|x| *x = T::default());
        }
    }
    Ok(())
}

/// Reads the given blocks (prefetched together) and calls `f(node, value)` for each node.
fn read_blocks<T: Element>(
    t: &mut TableHandle<DenseRow<T>>,
    blocks: &[u64],
    b: usize,
    n: usize,
    mut f: impl FnMut(usize, T),
) -> Result<()> {
    for &blk in blocks {
        t.refresh(blk);
    }
    for &blk in blocks {
        let row = t.get(blk)?;
        let start = blk as usize * b;
        for (j, x) in row.iter().take(n.saturating_sub(start).min(b)).enumerate() {
            f(start + j, *x);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_edges_group_by_destination_in_input_order() {
        // Destinations on both sides of a 1024-node bucket boundary; node 5 has two in-edges.
        let src = vec![7, 3, 2000, 3, 9];
        let dst = vec![5, 1500, 5, 1023, 5];
        let e = LocalEdges::new(&Edges { src, dst }, 1024, 2001);
        assert_eq!(e.sources, vec![3, 7, 9, 2000]);
        assert_eq!(e.src_blocks, vec![0, 1]);
        assert_eq!(e.dsts, vec![5, 1023, 1500]);
        assert_eq!(e.offsets, vec![0, 3, 4, 5]);
        // Source indexes: node 7 is index 1, 2000 is 3, 9 is 2, 3 is 0.
        assert_eq!(e.srcs, vec![1, 3, 2, 0, 0]);
    }
}
