//! Per-thread cache and oplog of one table: the hot path of `get` and `inc`. A cache hit is one
//! hash lookup in a map owned by the thread (no lock, no allocation). The first read of a row in a
//! clock consults the process cache once, which is how pushed (ESSP) or fetched rows reach threads.

use super::process_table::{CopyTarget, ProcessTable};
use crate::clock::{Age, Clock};
use crate::consistency::ReadRule;
use crate::error::{PsError, Result};
use crate::row::{ColumnAdd, Row, RowUpdate};
use crate::stats::ThreadStats;
use rustc_hash::FxHashMap;
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
    /// Last clock in which the row was read (prefetch history, eviction).
    touched: Option<Clock>,
    /// This thread's updates of the current clock.
    pending: Option<R::Update>,
}

impl<R: Row> Entry<R> {
    fn new() -> Self {
        Entry { view: None, age: Age::NONE, version: u64::MAX, checked: None, touched: None, pending: None }
    }
}

pub(crate) struct ThreadTable<R: Row> {
    proc: Arc<ProcessTable<R>>,
    clock: Rc<ThreadClock>,
    rule: ReadRule,
    capacity: usize,
    cache: FxHashMap<u64, Entry<R>>,
    dirty: Vec<u64>,
    touched: Vec<u64>,
    pub stats: ThreadStats,
}

impl<R: Row> ThreadTable<R> {
    pub fn new(proc: Arc<ProcessTable<R>>, clock: Rc<ThreadClock>) -> Self {
        ThreadTable {
            rule: proc.rule,
            capacity: proc.shared().cfg.thread_cache_rows,
            proc,
            clock,
            cache: FxHashMap::default(),
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

    #[inline]
    fn try_hit(&mut self, row: u64, c: Clock, req: Age) -> Option<&mut R> {
        let ThreadTable { cache, stats, touched, .. } = self;
        let e = cache.get_mut(&row)?;
        if e.checked != Some(c) || !ReadRule::admits(e.age, req) {
            return None;
        }
        let v = e.view.as_mut()?;
        stats.record_get(c.get(), e.age.get());
        if e.touched != Some(c) {
            e.touched = Some(c);
            touched.push(row);
        }
        Some(v)
    }

    fn miss(&mut self, row: u64, c: Clock, req: Age) -> Result<()> {
        self.stats.thread_cache_misses += 1;
        let e = self.cache.entry(row).or_insert_with(Entry::new);
        self.proc.read(
            row,
            req,
            CopyTarget { view: &mut e.view, age: &mut e.age, version: &mut e.version, pending: e.pending.as_ref() },
            &mut self.stats,
        )?;
        e.checked = Some(c);
        self.stats.record_get(c.get(), e.age.get());
        if e.touched != Some(c) {
            e.touched = Some(c);
            self.touched.push(row);
        }
        Ok(())
    }

    fn inc_with(&mut self, row: u64, upd: impl FnOnce(&mut R::Update), view: impl FnOnce(&mut R)) {
        self.stats.incs += 1;
        let cols = self.proc.cfg.columns;
        let e = self.cache.entry(row).or_insert_with(Entry::new);
        match e.pending.as_mut() {
            Some(p) => upd(p),
            None => {
                let mut p = R::Update::zero(cols);
                upd(&mut p);
                e.pending = Some(p);
                self.dirty.push(row);
            }
        }
        if let Some(v) = e.view.as_mut() {
            view(v);
        }
    }

    /// End of clock `old`: hand this thread's updates to the process oplog, then prefetch the rows
    /// read during `old` for clock `old + 1` and trim the cache.
    pub fn end_clock(&mut self, old: Clock) {
        for row in std::mem::take(&mut self.dirty) {
            if let Some(e) = self.cache.get_mut(&row) {
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
            for &row in &touched {
                let (age, subscribed) = self.proc.cached_age(row);
                if subscribed {
                    continue;
                }
                if let Some(target) = self.rule.prefetch_target(old, age, need) {
                    self.proc.prefetch(row, target);
                }
            }
        }
        if self.cache.len() > self.capacity {
            self.cache.retain(|_, e| e.touched == Some(old));
            if self.cache.len() > self.capacity {
                self.cache.clear();
            }
        }
        self.touched = touched;
        self.touched.clear();
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
        let t = self.inner.borrow_mut();
        let c = t.clock.clock.get();
        let req = t.required(c);
        match RefMut::filter_map(t, |t| t.try_hit(row, c, req)) {
            Ok(v) => Ok(RowRef(v)),
            Err(mut t) => {
                t.miss(row, c, req)?;
                Ok(RowRef(RefMut::map(t, |t| {
                    t.cache.get_mut(&row).and_then(|e| e.view.as_mut()).expect("row was just filled")
                })))
            }
        }
    }

    /// Adds a whole-row delta. Never blocks; visible to this thread's reads at once and to other
    /// threads after the clock it belongs to is shipped.
    #[inline]
    pub fn inc(&mut self, row: u64, delta: &R::Update) {
        self.inner.borrow_mut().inc_with(row, |p| p.merge(delta), |v| v.apply(delta));
    }

    /// Non-blocking refresh: asks the server for a newer version of `row` than the cached one.
    pub fn refresh(&mut self, row: u64) {
        let t = self.inner.borrow();
        let (age, subscribed) = t.proc.cached_age(row);
        if !subscribed {
            let req = t.required(t.clock.clock.get());
            t.proc.prefetch(row, ReadRule::refresh_target(age, req));
        }
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

/// Type-erased view used by the worker at clock boundaries.
pub(crate) trait ThreadTableOps {
    fn end_clock(&self, old: Clock) -> Result<()>;
    fn stats(&self) -> ThreadStats;
}

impl<R: Row> ThreadTableOps for RefCell<ThreadTable<R>> {
    fn end_clock(&self, old: Clock) -> Result<()> {
        self.try_borrow_mut().map_err(|_| PsError::Usage("a RowRef was held across clock()".into()))?.end_clock(old);
        Ok(())
    }
    fn stats(&self) -> ThreadStats {
        self.borrow().stats.clone()
    }
}
