//! Per-thread cache and oplog of one table: the hot path of `get` and `inc`. A cache hit is one
//! lookup in a map owned by the thread (`Slots`: an array for small ids, a hash map for the rest;
//! no lock, no allocation). The first read of a row in a
//! clock consults the process cache once, which is how pushed (ESSP) or fetched rows reach threads;
//! a pushed row is consulted again within the clock once its server has pushed a newer version.

use super::process_table::{CopyTarget, ProcessTable};
use super::slots::Slots;
use crate::clock::{Age, Clock};
use crate::consistency::ReadRule;
use crate::error::{PsError, Result};
use crate::row::{ColumnAdd, DenseRow, Element, Row, RowUpdate};
use crate::stats::ThreadStats;
use std::cell::{Cell, RefCell, RefMut};
use std::rc::Rc;
use std::sync::Arc;

/// Clock state of one worker thread, shared by its table handles.
pub(crate) struct ThreadClock {
    pub clock: Cell<Clock>,
    /// After `global_barrier()`, reads need at least this data age.
    pub floor: Cell<Age>,
}

pub(crate) struct Entry<R: Row> {
    view: Option<R>,
    age: Age,
    version: u64,
    /// Clock at which `view` was last checked against the process cache.
    checked: Option<Clock>,
    /// ESSP: the server that pushes this row, when it is subscribed.
    pushed_by: Option<u32>,
    /// Last clock in which the row was read (prefetch history, eviction).
    touched: Option<Clock>,
    /// This thread's updates of the current clock not counted by `base`.
    pending: Option<R::Update>,
    /// Rows with `Row::DIFFERENCE`: `view` as it was at the first `inc` of this clock, when
    /// `based`; this clock's updates since then are `view - base` (the allocation is reused).
    base: Option<R>,
    based: bool,
    /// Whether the row is in `dirty` (written this clock).
    written: bool,
}

impl<R: Row> Entry<R> {
    fn new() -> Self {
        Entry {
            view: None,
            age: Age::NONE,
            version: u64::MAX,
            checked: None,
            pushed_by: None,
            touched: None,
            pending: None,
            base: None,
            based: false,
            written: false,
        }
    }

    /// Moves the updates counted by `base` into `pending`, before `view` may be replaced or the
    /// clock's updates are handed on.
    fn fold_base(&mut self) -> Result<()> {
        if !std::mem::take(&mut self.based) {
            return Ok(());
        }
        let (Some(v), Some(b)) = (&self.view, &self.base) else { return Ok(()) };
        let d = v.difference(b).ok_or_else(|| {
            PsError::Usage(format!("row type {} declares DIFFERENCE but has no difference()", R::type_name()))
        })?;
        match self.pending.as_mut() {
            Some(p) => p.merge(&d),
            None => self.pending = Some(d),
        }
        Ok(())
    }
}

pub(crate) struct ThreadTable<R: Row> {
    proc: Arc<ProcessTable<R>>,
    clock: Rc<ThreadClock>,
    rule: ReadRule,
    capacity: usize,
    /// Bytes of rows the cache keeps past a clock's end (`thread_cache_mb`).
    budget: usize,
    /// The app reads this table on its own schedule (`announced_reads`): rows it did not read
    /// in the clock just ended are dropped at its end.
    announced: bool,
    cache: Slots<Entry<R>>,
    /// The row of the last `hint`, whose data the next hint asks for (its slot has arrived by then).
    /// With the columns to load (all of them when `None`).
    hinted: Cell<Option<(u64, Option<std::ops::Range<usize>>)>>,
    dirty: Vec<u64>,
    touched: Vec<u64>,
    pub stats: ThreadStats,
    /// `staleness_profile`: also split each read's staleness (one atomic load more).
    profile: bool,
}

impl<R: Row> ThreadTable<R> {
    pub fn new(proc: Arc<ProcessTable<R>>, clock: Rc<ThreadClock>) -> Self {
        ThreadTable {
            rule: proc.rule,
            capacity: proc.shared().cfg.thread_cache_rows,
            budget: proc.shared().cfg.thread_cache_mb.saturating_mul(1 << 20),
            announced: proc.cfg.announced_reads,
            profile: proc.shared().cfg.staleness_profile,
            proc,
            clock,
            cache: Slots::default(),
            hinted: Cell::new(None),
            dirty: Vec::new(),
            touched: Vec::new(),
            stats: ThreadStats::default(),
        }
    }

    /// Minimum data age a read at clock `c` may return.
    #[inline]
    fn required(&self, c: Clock) -> Age {
        self.rule.required(c, self.clock.floor.get())
    }

    /// The entry of `row` with a view fresh enough for a read at clock `c` (one hash lookup
    /// on a hit), copied from the process cache, fetched or waited for otherwise; `write`: the
    /// caller changes the view in place (`start_write`).
    #[inline]
    fn read_entry(&mut self, row: u64, c: Clock, req: Age, write: bool) -> Result<&mut Entry<R>> {
        let ThreadTable { cache, stats, touched, proc, dirty, profile, .. } = self;
        let e = cache.get_or_insert_with(row, Entry::new);
        // A pushed row is looked at again within a clock once its server has pushed a newer
        // version: a push that lands after the row's first read of a clock would otherwise
        // reach this thread only in its next clock, staler than a pull at that read would be.
        let pushed = e.pushed_by.is_some_and(|s| proc.pushed_past(s, e.age));
        if e.checked != Some(c) || pushed || !ReadRule::admits(e.age, req) || e.view.is_none() {
            stats.thread_cache_misses += 1;
            e.fold_base()?;
            let target = CopyTarget {
                view: &mut e.view,
                age: &mut e.age,
                version: &mut e.version,
                pending: e.pending.as_ref(),
                pushed_by: &mut e.pushed_by,
            };
            proc.read(row, req, target, stats)?;
            e.checked = Some(c);
        }
        Self::record_read(stats, proc, *profile, c, e.age);
        if e.touched != Some(c) {
            e.touched = Some(c);
            touched.push(row);
        }
        if write {
            stats.incs += 1;
            Self::start_write(e, dirty, row, c);
        }
        Ok(e)
    }

    /// The bytes the cached rows take: entries and the rows' heap data (`Row::heap_bytes`).
    /// One walk of the cache a clock: nanoseconds a row, against the clock's reads of them.
    fn cache_bytes(&self) -> usize {
        let heap = |r: &Option<R>| r.as_ref().map_or(0, Row::heap_bytes);
        self.cache.values().map(|e| std::mem::size_of::<Entry<R>>() + heap(&e.view) + heap(&e.base)).sum()
    }

    /// Calls `f` on `row` for a read at clock `c` that keeps no copy in this thread's cache: on
    /// the cached entry where there is one (it may hold this thread's updates of the clock),
    /// else on the process cache's row, under its shard's lock. A row not in this thread's cache
    /// has no updates of this thread that its process cache lacks (they are merged at every
    /// clock's end, and a row written this clock is in the cache), so `f` sees what `get` would.
    fn read_through<T>(&mut self, row: u64, c: Clock, req: Age, f: impl FnOnce(&R) -> T) -> Result<T> {
        if self.cache.get(row).is_some() {
            let e = self.read_entry(row, c, req, false)?;
            return e.view.as_ref().map(f).ok_or_else(|| PsError::Usage(format!("row {row} has no value")));
        }
        let ThreadTable { stats, proc, profile, .. } = self;
        stats.thread_cache_misses += 1;
        let (out, age) = proc.read_in_place(row, req, stats, |r, _, age, _| (f(r), age))?;
        Self::record_read(stats, proc, *profile, c, age);
        Ok(out)
    }

    /// Counts a read at clock `c` of data of age `age` (and, with `staleness_profile`, splits
    /// its staleness against what the servers had).
    #[inline]
    fn record_read(stats: &mut ThreadStats, proc: &ProcessTable<R>, profile: bool, c: Clock, age: Age) {
        stats.record_get(c.get(), age.get());
        if profile {
            let served = proc.shared().served_age.load(std::sync::atomic::Ordering::Relaxed);
            stats.record_profile(c.get(), age.get(), served);
        }
    }

    /// Marks `e` written this clock. Rows with `Row::DIFFERENCE` read this clock (the hot rows
    /// of a read-modify-write loop) record the view as the base of this clock's difference (once
    /// per clock) and return true: the caller then changes the view only. Writes to rows not
    /// read this clock keep a separate delta, so what is sent for them is exactly the sum of the
    /// `inc`s whether or not an older copy happens to be cached (resumed runs rely on that).
    #[inline]
    fn start_write(e: &mut Entry<R>, dirty: &mut Vec<u64>, row: u64, c: Clock) -> bool {
        if !e.written {
            e.written = true;
            dirty.push(row);
        }
        match e.view.as_ref() {
            Some(v) if R::DIFFERENCE && e.checked == Some(c) => {
                if !e.based {
                    match e.base.as_mut() {
                        Some(b) => b.copy_from(v),
                        None => e.base = Some(v.clone()),
                    }
                    e.based = true;
                }
                true
            }
            _ => false,
        }
    }

    fn inc_with(&mut self, row: u64, upd: impl FnOnce(&mut R::Update), view: impl FnOnce(&mut R)) {
        self.stats.incs += 1;
        let cols = self.proc.cfg.columns;
        let c = self.clock.clock.get();
        let e = self.cache.get_or_insert_with(row, Entry::new);
        let by_difference = Self::start_write(e, &mut self.dirty, row, c);
        if let Some(v) = e.view.as_mut() {
            view(v);
        }
        // The hot path of dense models writes the view only.
        if !by_difference {
            upd(e.pending.get_or_insert_with(|| R::Update::zero(cols)));
        }
    }

    /// End of clock `old`: hand this thread's updates to the process oplog, then prefetch the rows
    /// read during `old` for clock `old + 1` and trim the cache.
    pub fn end_clock(&mut self, old: Clock) -> Result<()> {
        for row in std::mem::take(&mut self.dirty) {
            if let Some(e) = self.cache.get_mut(row) {
                e.written = false;
                e.fold_base()?;
                if let Some(p) = e.pending.take() {
                    match self.proc.merge(row, old.age(), p, e.version) {
                        Some(v) => e.version = v,
                        None => e.version = u64::MAX,
                    }
                }
            }
        }
        let touched = std::mem::take(&mut self.touched);
        if self.rule.prefetches() {
            let need = self.required(old.next());
            let mut batch = Vec::new();
            for &row in &touched {
                let (age, subscribed) = self.proc.cached_age(row);
                if subscribed {
                    continue;
                }
                if let Some(target) = self.rule.prefetch_target(old, age, need) {
                    self.proc.prefetch_into(row, target, false, &mut batch);
                }
            }
            self.proc.send_fetches(batch);
        }
        // A table read on the app's schedule (rotating slices) is read again only when its slice
        // comes back, by then changed by other workers: kept, its rows added up to a copy of the
        // whole table in every thread over a pass. Other tables keep to their row and byte budgets
        // (`thread_cache_rows`, `thread_cache_mb`): the rows of the last clock first, none if those
        // are too many.
        // (An announced table retains anyway: its size is taken after, not also before.)
        let mut bytes = (!self.announced).then(|| self.cache_bytes());
        if self.announced || self.cache.len() > self.capacity || bytes > Some(self.budget) {
            self.cache.retain(|e| e.touched == Some(old));
            bytes = None;
        }
        let mut bytes = bytes.unwrap_or_else(|| self.cache_bytes());
        if self.cache.len() > self.capacity || bytes > self.budget {
            self.cache.clear();
            bytes = 0;
        }
        self.stats.cache_peak_bytes = self.stats.cache_peak_bytes.max(bytes as u64);
        self.touched = touched;
        self.touched.clear();
        Ok(())
    }
}

/// A worker thread's handle on one table. Obtained from [`crate::Worker::table`]; clones share the
/// same thread cache. Not `Send`: it belongs to the thread that created it.
pub struct TableHandle<R: Row> {
    pub(crate) inner: Rc<RefCell<ThreadTable<R>>>,
}

impl<R: Row> Clone for TableHandle<R> {
    fn clone(&self) -> Self {
        TableHandle { inner: self.inner.clone() }
    }
}

/// A row returned by [`TableHandle::get`]; valid until the next call on the handle.
pub struct RowRef<'a, R>(RefMut<'a, R>);

impl<R> std::ops::Deref for RowRef<'_, R> {
    type Target = R;
    #[inline]
    fn deref(&self) -> &R {
        &self.0
    }
}

impl<R: Row> TableHandle<R> {
    /// Reads `row`. At clock `c` with staleness `s` the result holds every update of every thread
    /// from clocks `<= c - s - 1` and every update this thread has made (read-my-updates); it may
    /// hold more. Blocks only if no cached copy is fresh enough. The only call that may block.
    #[inline]
    pub fn get(&mut self, row: u64) -> Result<RowRef<'_, R>> {
        self.borrow_row(row, false).map(RowRef)
    }

    /// Reads `row` as [`TableHandle::get`] does and passes it to `f`, keeping no copy in this
    /// thread's cache unless one is there already: for reading many rows once, such as an
    /// evaluation over the whole model, which through `get` leaves a copy of every row in every
    /// thread (up to `thread_cache_rows` and `thread_cache_mb`). `f` runs under a lock of the
    /// process cache: it should be short (copy what it needs). Rows read so are not prefetched
    /// for the next clock.
    pub fn read_with<T>(&mut self, row: u64, f: impl FnOnce(&R) -> T) -> Result<T> {
        let mut t = self.inner.borrow_mut();
        let c = t.clock.clock.get();
        let req = t.required(c);
        t.read_through(row, c, req, f)
    }

    /// The cached row, fresh enough for this clock, borrowed from the thread cache; `write`:
    /// the caller changes it in place.
    #[inline]
    fn borrow_row(&mut self, row: u64, write: bool) -> Result<RefMut<'_, R>> {
        let t = self.inner.borrow_mut();
        let c = t.clock.clock.get();
        let req = t.required(c);
        let mut err = None;
        let r = RefMut::filter_map(t, |t| match t.read_entry(row, c, req, write) {
            Ok(e) => e.view.as_mut(),
            Err(x) => {
                err = Some(x);
                None
            }
        });
        r.map_err(|_| err.unwrap_or_else(|| PsError::Usage(format!("row {row} has no value"))))
    }

    /// Adds a whole-row delta. Never blocks; visible to this thread's reads at once and to other
    /// threads after the clock it belongs to is shipped.
    #[inline]
    pub fn inc(&mut self, row: u64, delta: &R::Update) {
        self.inner.borrow_mut().inc_with(row, |p| p.merge(delta), |v| v.apply(delta));
    }

    /// Non-blocking refresh: asks the server for a newer version of `row` than the cached one.
    pub fn refresh(&mut self, row: u64) {
        self.refresh_rows([row]);
    }

    /// Non-blocking: makes sure that a copy of `row` fresh enough for a read `ahead` clocks from
    /// now is cached or on its way (the server answers once it has that version). For loops that
    /// know their next clock's rows (a rotating schedule): they arrive while this clock works,
    /// instead of one round trip at the start of the next. Unlike [`TableHandle::refresh`] it
    /// asks for nothing when such a copy is already cached or asked for.
    pub fn fetch_ahead(&mut self, row: u64, ahead: i64) {
        self.fetch_ahead_rows([row], ahead);
    }

    /// [`TableHandle::fetch_ahead`] for many rows, asked for together: cheaper than a call per
    /// row when a clock announces thousands.
    pub fn fetch_ahead_rows(&mut self, rows: impl IntoIterator<Item = u64>, ahead: i64) {
        let t = self.inner.borrow();
        let req = t.required(Clock::new(t.clock.clock.get().get().saturating_add(ahead)));
        let mut batch = Vec::new();
        for row in rows {
            t.proc.prefetch_into(row, req, false, &mut batch);
        }
        t.proc.send_fetches(batch);
    }

    /// [`TableHandle::refresh`] for many rows, asked for together.
    pub fn refresh_rows(&mut self, rows: impl IntoIterator<Item = u64>) {
        let t = self.inner.borrow();
        let req = t.required(t.clock.clock.get());
        let mut batch = Vec::new();
        for row in rows {
            let (age, subscribed) = t.proc.cached_age(row);
            if !subscribed {
                t.proc.prefetch_into(row, ReadRule::refresh_target(age, req), age < req, &mut batch);
            }
        }
        t.proc.send_fetches(batch);
    }

    /// The table's configured column count.
    pub fn columns(&self) -> usize {
        self.inner.borrow().proc.cfg.columns
    }
}

impl<R: Row> TableHandle<R> {
    /// Adds `value` to column `col` of `row` (`inc` of the papers).
    #[inline]
    pub fn inc_col<T: Copy>(&mut self, row: u64, col: u32, value: T) -> Result<()>
    where
        R: ColumnAdd<T>,
        R::Update: ColumnAdd<T>,
    {
        let mut t = self.inner.borrow_mut();
        let cols = t.proc.cfg.columns;
        if cols > 0 && col as usize >= cols {
            return Err(PsError::Usage(format!("table {}: column {col} out of range ({cols} columns)", t.proc.cfg.id)));
        }
        t.inc_with(row, |p| p.add(col, value), |r| r.add(col, value));
        Ok(())
    }

    /// Adds several `(column, value)` pairs to `row` in one call.
    pub fn batch_inc<T: Copy>(&mut self, row: u64, updates: &[(u32, T)]) -> Result<()>
    where
        R: ColumnAdd<T>,
        R::Update: ColumnAdd<T>,
    {
        let mut t = self.inner.borrow_mut();
        let cols = t.proc.cfg.columns;
        if cols > 0 {
            if let Some(&(c, _)) = updates.iter().find(|(c, _)| *c as usize >= cols) {
                return Err(PsError::Usage(format!(
                    "table {}: column {c} out of range ({cols} columns)",
                    t.proc.cfg.id
                )));
            }
        }
        t.inc_with(
            row,
            |p| updates.iter().for_each(|&(c, v)| p.add(c, v)),
            |r| updates.iter().for_each(|&(c, v)| r.add(c, v)),
        );
        Ok(())
    }
}

/// Rows whose updates are differences of rows (dense rows) can be changed in place.
impl<T: Element> TableHandle<DenseRow<T>> {
    /// Reads `row` like [`TableHandle::get`] and lets the caller change it in place: whatever
    /// the row holds when the returned guard is dropped, minus what it held, is this thread's
    /// update (as if by `inc`), so read-modify-write loops such as SGD write each value once
    /// instead of computing a delta and adding it.
    #[inline]
    pub fn get_mut(&mut self, row: u64) -> Result<RowMut<'_, DenseRow<T>>> {
        self.borrow_row(row, true).map(RowMut)
    }

    /// A hint for loops that know which rows they read next, given a few reads ahead in the
    /// order of the reads: starts loading this thread's cached copy of `row` into the CPU's
    /// cache. Changes nothing, never blocks, and does nothing for a row not cached yet. In two
    /// steps, so that neither waits for memory: a hint asks for `row`'s cache slot, and for the
    /// values of the row hinted before it, whose slot has arrived by then.
    #[inline]
    pub fn hint(&self, row: u64) {
        self.hint_at(row, None)
    }

    /// [`TableHandle::hint`] for the columns `cols` of `row` only: for rows that hold several
    /// records (MF keeps 16 items' factors in a row) of which the next read uses one.
    #[inline]
    pub fn hint_cols(&self, row: u64, cols: std::ops::Range<usize>) {
        self.hint_at(row, Some(cols))
    }

    #[inline]
    fn hint_at(&self, row: u64, cols: Option<std::ops::Range<usize>>) {
        // A clone of this handle may hold a row borrowed: then the hint is skipped.
        let Ok(t) = self.inner.try_borrow() else { return };
        t.cache.prefetch(row);
        let Some((p, cols)) = t.hinted.replace(Some((row, cols))) else { return };
        if let Some(v) = t.cache.get(p).and_then(|e| e.view.as_ref()) {
            match cols {
                Some(c) => crate::row::prefetch(v.get(c).unwrap_or_default()),
                None => crate::row::prefetch(v),
            }
        }
    }
}

/// A row returned by [`TableHandle::get_mut`]; changes to it are this thread's updates.
pub struct RowMut<'a, R>(RefMut<'a, R>);

impl<R> std::ops::Deref for RowMut<'_, R> {
    type Target = R;
    #[inline]
    fn deref(&self) -> &R {
        &self.0
    }
}

impl<R> std::ops::DerefMut for RowMut<'_, R> {
    #[inline]
    fn deref_mut(&mut self) -> &mut R {
        &mut self.0
    }
}

/// Type-erased view used by the worker at clock boundaries.
pub(crate) trait ThreadTableOps {
    fn end_clock(&self, old: Clock) -> Result<()>;
    fn stats(&self) -> ThreadStats;
}

impl<R: Row> ThreadTableOps for RefCell<ThreadTable<R>> {
    fn end_clock(&self, old: Clock) -> Result<()> {
        self.try_borrow_mut().map_err(|_| PsError::Usage("a RowRef was held across clock()".into()))?.end_clock(old)
    }
    fn stats(&self) -> ThreadStats {
        self.borrow().stats.clone()
    }
}
