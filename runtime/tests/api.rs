//! Public API behaviour: user-defined rows, misuse errors, table-config agreement, async mode.

mod common;

use bytes::{BufMut, BytesMut};
use common::{demo, run_cluster, run_cluster_with};
use ps_runtime::{
    App, Consistency, DenseRow, PsContext, PsError, Result, Row, RowTypeRegistry, RowUpdate, RuntimeConfig,
    TableConfig, Worker,
};

/// A user-defined row: running count, sum, min and max of observations. Its update is an
/// observation summary, merged associatively and commutatively.
#[derive(Clone, Debug, PartialEq)]
struct Summary {
    n: i64,
    sum: f64,
    min: f64,
    max: f64,
}

impl Summary {
    fn of(x: f64) -> Self {
        Summary { n: 1, sum: x, min: x, max: x }
    }
    fn put(&self, b: &mut BytesMut) {
        b.put_i64_le(self.n);
        b.put_f64_le(self.sum);
        b.put_f64_le(self.min);
        b.put_f64_le(self.max);
    }
    fn get(b: &mut &[u8]) -> Result<Self> {
        if b.len() < 32 {
            return Err(PsError::Codec("summary: truncated".into()));
        }
        let f = |i: usize| b[i * 8..i * 8 + 8].try_into().unwrap();
        let s = Summary {
            n: i64::from_le_bytes(f(0)),
            sum: f64::from_le_bytes(f(1)),
            min: f64::from_le_bytes(f(2)),
            max: f64::from_le_bytes(f(3)),
        };
        *b = &b[32..];
        Ok(s)
    }
}

impl RowUpdate for Summary {
    fn zero(_: usize) -> Self {
        Summary { n: 0, sum: 0.0, min: f64::INFINITY, max: f64::NEG_INFINITY }
    }
    fn merge(&mut self, o: &Self) {
        self.n += o.n;
        self.sum += o.sum;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }
    fn encode(&self, b: &mut BytesMut) {
        self.put(b)
    }
    fn decode(b: &mut &[u8], _: usize) -> Result<Self> {
        Self::get(b)
    }
}

impl Row for Summary {
    type Update = Summary;
    fn type_name() -> String {
        "summary".into()
    }
    fn zero(c: usize) -> Self {
        <Self as RowUpdate>::zero(c)
    }
    fn apply(&mut self, u: &Summary) {
        self.merge(u)
    }
    fn encode(&self, b: &mut BytesMut) {
        self.put(b)
    }
    fn decode(b: &mut &[u8], _: usize) -> Result<Self> {
        Self::get(b)
    }
}

struct Observe;

impl App for Observe {
    fn initialize(&mut self, ctx: &mut PsContext) -> Result<()> {
        ctx.create_table(TableConfig::new(3, "stats", "summary", 0))
    }
    fn run_worker(&self, w: &mut Worker) -> Result<()> {
        let mut t = w.table::<Summary>(3)?;
        let g = w.global_thread_id() as f64;
        for k in 0..5 {
            t.inc(0, &Summary::of(g * 10.0 + k as f64));
            // Read-my-updates on a user-defined row.
            assert!(t.get(0)?.max >= g * 10.0 + k as f64);
            w.clock()?;
        }
        w.global_barrier()?;
        let total = w.total_threads() as f64;
        let s = t.get(0)?.clone();
        let want_sum: f64 = (0..total as i64).map(|g| (0..5).map(|k| g as f64 * 10.0 + k as f64).sum::<f64>()).sum();
        if s.n != 5 * total as i64 || s.sum != want_sum || s.min != 0.0 || s.max != (total - 1.0) * 10.0 + 4.0 {
            return Err(PsError::Violation(format!("summary after barrier: {s:?}")));
        }
        Ok(())
    }
}

#[test]
fn user_defined_rows_aggregate_across_processes() {
    let mut reg = RowTypeRegistry::with_builtins();
    reg.register::<Summary>();
    let cfg = RuntimeConfig { consistency: Consistency::Ssp, staleness: 2, ..RuntimeConfig::default() };
    for r in run_cluster_with(3, &cfg, reg, |_| Box::new(Observe)) {
        r.unwrap();
    }
}

#[test]
fn unregistered_row_type_is_a_config_error_naming_it() {
    let res = run_cluster(2, &RuntimeConfig::default(), |_| Box::new(Observe));
    for r in res {
        let e = r.unwrap_err().to_string();
        assert!(e.contains("summary") && e.contains("not registered"), "{e}");
    }
}

struct Tables(usize);

impl App for Tables {
    fn initialize(&mut self, ctx: &mut PsContext) -> Result<()> {
        let cols = if ctx.process_id() == 1 { self.0 } else { 4 };
        ctx.create_table(TableConfig::new(0, "t", "dense_f32", cols))
    }
    fn run_worker(&self, w: &mut Worker) -> Result<()> {
        // Wrong row type: a usage error, not a crash.
        let e = w.table::<DenseRow<i64>>(0).err().expect("opened with the wrong type");
        assert!(e.to_string().contains("dense_f32"), "{e}");
        let e = w.table::<DenseRow<f32>>(9).err().expect("opened a missing table");
        assert!(e.to_string().contains("table 9"), "{e}");
        let mut t = w.table::<DenseRow<f32>>(0)?;
        let e = t.inc_col(0, 4, 1.0f32).unwrap_err();
        assert!(e.to_string().contains("column 4 out of range"), "{e}");
        w.clock()
    }
}

#[test]
fn misuse_gives_clear_errors() {
    for r in run_cluster(2, &RuntimeConfig::default(), |_| Box::new(Tables(4))) {
        r.unwrap();
    }
}

#[test]
fn processes_with_different_tables_are_refused_at_startup() {
    let res = run_cluster(2, &RuntimeConfig::default(), |_| Box::new(Tables(5)));
    let msgs: Vec<String> = res.into_iter().map(|r| r.unwrap_err().to_string()).collect();
    assert!(msgs.iter().all(|m| m.contains("process 1 created different tables")), "{msgs:?}");
}

#[test]
fn async_mode_keeps_read_my_updates_and_refreshes() {
    let cfg = RuntimeConfig { consistency: Consistency::Async, ..RuntimeConfig::default() };
    let res = run_cluster(3, &cfg, |_| demo("--clocks 30 --jitter-ms 2"));
    let mut fresh = 0;
    for r in res {
        let st = r.unwrap();
        // Rows are refreshed, so some reads see data newer than the first fetch.
        fresh += st.rows_recv;
    }
    assert!(fresh > 3 * 10, "async never refreshed rows ({fresh} received)");
}

/// Two back-to-back all-to-all exchanges with buffers of many frames each (small frame limit).
struct Exchange;

fn payload(epoch: u8, from: usize, to: usize) -> Vec<u8> {
    // Sizes from empty to several chunks; contents name the sender, receiver and epoch.
    let n = (from * 7 + to * 13) % 5 * 9_000;
    (0..n).map(|i| (i as u8) ^ (from as u8) << 4 ^ (to as u8) << 1 ^ epoch).collect()
}

impl App for Exchange {
    fn initialize(&mut self, _ctx: &mut PsContext) -> Result<()> {
        Ok(())
    }
    fn run_worker(&self, w: &mut Worker) -> Result<()> {
        let (me, n) = (w.global_thread_id(), w.total_threads());
        let e = w.exchange(vec![Vec::new(); n + 1]).unwrap_err();
        assert!(e.to_string().contains("one buffer per worker thread"), "{e}");
        for epoch in 0..2u8 {
            let got = w.exchange((0..n).map(|to| payload(epoch, me, to)).collect())?;
            assert_eq!(got.len(), n);
            for (from, b) in got.iter().enumerate() {
                if *b != payload(epoch, from, me) {
                    return Err(PsError::Violation(format!("exchange {epoch}: wrong bytes from {from} at {me}")));
                }
            }
        }
        Ok(())
    }
}

#[test]
fn exchange_delivers_every_buffer_across_processes_and_threads() {
    let cfg = RuntimeConfig { threads: 2, max_frame_bytes: 16 << 10, batch_bytes: 4 << 10, ..RuntimeConfig::default() };
    for r in run_cluster(2, &cfg, |_| Box::new(Exchange)) {
        r.unwrap();
    }
}

/// Dense rows keep a thread's updates in its cached row and hand on the difference at the end of
/// the clock. Writes before the clock's first read (on a stale cached copy), between reads and
/// on rows never read, and changes through `get_mut`, must each count exactly once (and `hint`s
/// change nothing): with staleness 0 a read at clock c holds
/// every update of clocks < c and this thread's own, and at most the other threads' of clock c.
struct DenseWrites;

const DENSE_CLOCKS: i64 = 6;

impl App for DenseWrites {
    fn initialize(&mut self, ctx: &mut PsContext) -> Result<()> {
        ctx.create_table(TableConfig::new(0, "d", "dense_i64", 3))
    }
    fn run_worker(&self, w: &mut Worker) -> Result<()> {
        let mut t = w.table::<DenseRow<i64>>(0)?;
        let (g, n) = (w.global_thread_id() as i64, w.total_threads() as i64);
        // Thread g adds (g+1, 1, c) per inc, three incs per clock.
        let delta = |c: i64| [g + 1, 1, c];
        let all = |c: i64| -> [i64; 3] { [3 * c * n * (n + 1) / 2, 3 * c * n, 3 * n * c * (c - 1) / 2] };
        let check = |got: &[i64], c: i64, own: i64, what: &str| -> Result<()> {
            let (lo, hi) = (all(c), all(c + 1));
            for k in 0..3 {
                let mine = own * delta(c)[k];
                // Others' clock-c updates may or may not be there yet; this thread's must be.
                if got[k] < lo[k] + mine || got[k] > hi[k] - 3 * delta(c)[k] + mine {
                    return Err(PsError::Violation(format!("thread {g} clock {c} {what}: {got:?}")));
                }
            }
            Ok(())
        };
        for c in 0..DENSE_CLOCKS {
            let d = DenseRow(delta(c).to_vec());
            t.inc(0, &d); // before this clock's first read: the cached copy is stale
            t.inc(1, &d); // row 1 is not read until the end
            check(&t.get(0)?, c, 1, "first read")?;
            t.inc(0, &d);
            // Hints change nothing: on cached rows, on a row never read, and from a clone of the
            // handle while a row is borrowed (skipped, not a panic).
            let shared = t.clone();
            shared.hint(0);
            shared.hint(99);
            // A change in place counts like an inc of the change.
            {
                let mut row = t.get_mut(0)?;
                shared.hint(0);
                row.iter_mut().zip(&d.0).for_each(|(x, d)| *x += d);
            }
            t.inc(1, &d);
            t.inc(1, &d);
            check(&t.get(0)?, c, 3, "after incs")?;
            w.clock()?;
        }
        w.global_barrier()?;
        for row in 0..2 {
            let got = t.get(row)?.0.clone();
            if got != all(DENSE_CLOCKS) {
                return Err(PsError::Violation(format!("row {row} after barrier: {got:?}")));
            }
        }
        Ok(())
    }
}

#[test]
fn dense_updates_count_once_around_reads() {
    for consistency in [Consistency::Ssp, Consistency::Essp] {
        let cfg = RuntimeConfig { threads: 2, consistency, staleness: 0, ..RuntimeConfig::default() };
        for r in run_cluster(2, &cfg, |_| Box::new(DenseWrites)) {
            r.unwrap();
        }
    }
}

/// Thread 1 asks ahead (`fetch_ahead`) for the version of a row its next clock needs, which the
/// server can only give once thread 0 has finished its clock; thread 0 then reads that row, of
/// which the process has no copy yet. The read must not wait for the request asked ahead (the
/// two threads would wait for each other): it asks for what it needs itself.
struct AskAhead(std::sync::Barrier);

impl App for AskAhead {
    fn initialize(&mut self, ctx: &mut PsContext) -> Result<()> {
        ctx.create_table(TableConfig::new(0, "t", "dense_f64", 2).with_announced_reads(true))
    }
    fn run_worker(&self, w: &mut Worker) -> Result<()> {
        let mut t = w.table::<DenseRow<f64>>(0)?;
        if w.thread_id() == 1 {
            w.clock()?;
            t.fetch_ahead(7, 1);
            self.0.wait();
            self.0.wait();
        } else {
            self.0.wait();
            assert_eq!(t.get(7)?.0, vec![0.0, 0.0]);
            self.0.wait();
            w.clock()?;
        }
        t.inc_col(7, 0, 1.0)?;
        w.global_barrier()?;
        assert_eq!(t.get(7)?.0, vec![2.0, 0.0]);
        Ok(())
    }
}

#[test]
fn a_read_does_not_wait_for_a_version_asked_for_ahead() {
    let cfg = RuntimeConfig { consistency: Consistency::Ssp, staleness: 1, threads: 2, ..RuntimeConfig::default() };
    for r in run_cluster(1, &cfg, |_| Box::new(AskAhead(std::sync::Barrier::new(2)))) {
        r.unwrap();
    }
}

/// Thread 0 asks ahead for its next clock's version of 200 rows, which the server holds back
/// until thread 1 has finished that clock too, then refreshes the same rows for this clock (an
/// evaluation's batch). The refresh must ask for this clock's version in its batch: had it
/// counted the request ahead as good enough, each read would wait for a fetch of its own, one
/// round trip per row (across a WAN, minutes for an evaluation).
struct RefreshBehindAskAhead(std::sync::Barrier);

const ROWS: u64 = 200;

impl App for RefreshBehindAskAhead {
    fn initialize(&mut self, ctx: &mut PsContext) -> Result<()> {
        ctx.create_table(TableConfig::new(0, "t", "dense_f64", 2).with_announced_reads(true))
    }
    fn run_worker(&self, w: &mut Worker) -> Result<()> {
        let mut t = w.table::<DenseRow<f64>>(0)?;
        for r in 0..ROWS {
            t.inc_col(r, 0, 1.0)?;
        }
        w.clock()?;
        if w.thread_id() == 0 {
            t.fetch_ahead_rows(0..ROWS, 1);
            t.refresh_rows(0..ROWS);
            // The last row asked for arrives last: once it is here, all are.
            assert_eq!(t.get(ROWS - 1)?.0, vec![2.0, 0.0]);
            for r in 0..ROWS {
                assert_eq!(t.get(r)?.0, vec![2.0, 0.0]);
            }
        }
        self.0.wait();
        w.clock()
    }
}

#[test]
fn a_refresh_asks_for_this_clock_even_with_the_next_one_asked_for_ahead() {
    let cfg = RuntimeConfig { consistency: Consistency::Ssp, staleness: 0, threads: 2, ..RuntimeConfig::default() };
    for r in run_cluster(1, &cfg, |_| Box::new(RefreshBehindAskAhead(std::sync::Barrier::new(2)))) {
        let st = r.unwrap();
        // One wait for the refresh's batch, or none if it came first; never one per row.
        assert!(st.get_misses <= 1, "{} reads waited", st.get_misses);
    }
}

/// `read_with` reads what `get` would and keeps no copy: thread `g` adds 1 to row `50 + g` each
/// clock and reads every thread's row through `read_with`, twice. With staleness 0 a read at
/// clock c holds each thread's updates of clocks < c, and its own of clock c; the other
/// threads' rows, never cached by this thread, are looked up in the process cache at every
/// read (a thread-cache miss each), where `get` would have copied them once a clock.
struct ReadThrough;

const READ_CLOCKS: i64 = 5;

impl App for ReadThrough {
    fn initialize(&mut self, ctx: &mut PsContext) -> Result<()> {
        ctx.create_table(TableConfig::new(0, "r", "dense_i64", 1))
    }
    fn run_worker(&self, w: &mut Worker) -> Result<()> {
        let mut t = w.table::<DenseRow<i64>>(0)?;
        let (g, n) = (w.global_thread_id() as u64, w.total_threads() as u64);
        for c in 0..READ_CLOCKS {
            t.inc_col(50 + g, 0, 1i64)?;
            for _ in 0..2 {
                for h in 0..n {
                    let got = t.read_with(50 + h, |r| r.0[0])?;
                    let ok = if h == g { got == c + 1 } else { got == c || got == c + 1 };
                    if !ok {
                        return Err(PsError::Violation(format!("thread {g} clock {c}: row of {h} holds {got}")));
                    }
                }
            }
            w.clock()?;
        }
        w.global_barrier()?;
        for h in 0..n {
            let got = t.read_with(50 + h, |r| r.0[0])?;
            if got != READ_CLOCKS {
                return Err(PsError::Violation(format!("thread {g} after the barrier: row of {h} holds {got}")));
            }
        }
        Ok(())
    }
}

#[test]
fn read_with_reads_what_get_would_and_keeps_no_copy() {
    for consistency in [Consistency::Ssp, Consistency::Essp] {
        let cfg = RuntimeConfig { threads: 2, consistency, staleness: 0, ..RuntimeConfig::default() };
        let (procs, threads) = (2u64, 2u64);
        for r in run_cluster(procs as usize, &cfg, |_| Box::new(ReadThrough)) {
            let st = r.unwrap();
            // Per thread and clock: two reads of each of the other threads' rows, each a miss.
            let floor = threads * READ_CLOCKS as u64 * 2 * (procs * threads - 1);
            assert!(st.thread_cache_misses >= floor, "{consistency:?}: {} misses < {floor}", st.thread_cache_misses);
        }
    }
}

/// The thread cache keeps at most `thread_cache_mb` of rows past a clock: each thread reads 6
/// rows of 128 KiB in each of 3 clocks (768 KiB a clock, other rows each time), then 12 in a
/// fourth. Under a 1 MiB budget the cache drops the rows of earlier clocks at each clock's end,
/// and all of them after the fourth; under the default it keeps all 30.
struct BigRows;

const BIG_COLS: usize = 16 * 1024;
const BIG_ROW_BYTES: u64 = (BIG_COLS * 8) as u64;

impl App for BigRows {
    fn initialize(&mut self, ctx: &mut PsContext) -> Result<()> {
        ctx.create_table(TableConfig::new(0, "big", "dense_f64", BIG_COLS))
    }
    fn run_worker(&self, w: &mut Worker) -> Result<()> {
        let mut t = w.table::<DenseRow<f64>>(0)?;
        let first = 100 * w.global_thread_id() as u64;
        let mut next = first;
        for count in [6, 6, 6, 12] {
            for r in next..next + count {
                if t.get(r)?.0.len() != BIG_COLS {
                    return Err(PsError::Violation(format!("row {r} is not {BIG_COLS} wide")));
                }
            }
            next += count;
            w.clock()?;
        }
        Ok(())
    }
}

#[test]
fn the_thread_cache_keeps_to_its_byte_budget() {
    let threads = 2u64;
    let base = RuntimeConfig { threads: threads as usize, consistency: Consistency::Ssp, ..RuntimeConfig::default() };
    let peaks = |cfg: &RuntimeConfig| -> Vec<u64> {
        run_cluster(2, cfg, |_| Box::new(BigRows)).into_iter().map(|r| r.unwrap().thread_cache_peak_bytes).collect()
    };
    for peak in peaks(&RuntimeConfig { thread_cache_mb: 1, ..base.clone() }) {
        // One clock's 6 rows kept per thread, never more than the budget.
        assert!(peak >= threads * 6 * BIG_ROW_BYTES, "{peak} bytes: a clock's rows were not kept");
        assert!(peak <= threads * (1 << 20), "{peak} bytes: over the 1 MiB budget of each thread");
    }
    for peak in peaks(&base) {
        assert!(peak >= threads * 30 * BIG_ROW_BYTES, "{peak} bytes: the default budget dropped rows");
    }
}
