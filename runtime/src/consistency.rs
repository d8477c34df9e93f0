//! The consistency models of the papers in one place: which data a read may return (the
//! admission rule), which rows servers push (ESSP), and what to prefetch at a clock boundary.
//!
//! | model | staleness `s` | a read at clock `c` returns data age | rows reach the cache by |
//! |---|---|---|---|
//! | BSP | 0 | `>= c - 1` (everything before this clock) | fetch |
//! | SSP | `s` | `>= c - s - 1` | fetch |
//! | ESSP (SSP-push) | `s` | `>= c - s - 1` | push after the first fetch |
//! | async | unbounded | any | fetch, refreshed every clock |
//!
//! Plus read-my-updates (the caches apply the reader's own pending updates, see `oplog`) and the
//! barrier floor: after `global_barrier()` at `B`, reads need age `>= B - 1` whatever the model.
//! A-BSP is BSP with several work units per clock; it is the application's choice, not a rule.
//!
//! The clients enforce [`ReadRule`]; the servers decide what they may claim with [`ServeRule`].
//! The test-only fault knobs (`fault.*`) are parameters of these two types, so the property
//! tests that prove an off-by-one is caught exercise the real rule, not a copy.
//!
//! ## How clocks travel
//!
//! Thread clocks (`Clock`) start at 0; a row of data age (`Age`) `a` holds all updates of clocks
//! `<= a`; completing clock `c` yields age `c`. A read at clock `c` needs `ReadRule::required(c, floor)`
//! = age `>= c - s - 1` (any age for async; at least the barrier floor). The process clock is the
//! minimum of its threads' clocks; when it moves past `t` the client task sends every server the oplog
//! of clock `t` followed by `Clock{t}`. A server applies a client's buffered updates only at its
//! `Clock` message, sets `vc[p] = t`, acks, and when `global = min(vc)` grows it answers parked reads
//! (`ServeRule::can_serve`: `min_age <= global`) and, in ESSP, pushes changed subscribed rows plus
//! `PushDone{age=global}` (which also freshens unchanged subscribed rows). Clocks and ages travel as
//! raw little-endian `i64`; inside the runtime they are only ever the two types.

use crate::clock::{Age, Clock};
use crate::config::{Consistency, PrefetchPolicy, RuntimeConfig};

/// A client's rule for one table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReadRule {
    /// Clocks of slack: `None` is unbounded (async).
    slack: Option<i64>,
    /// Test-only fault: accept rows this many clocks too old (`fault.loosen_client_bound`).
    loosen: i64,
    push: bool,
    prefetch: PrefetchPolicy,
}

impl ReadRule {
    /// The rule of a table with optional per-table staleness `table_staleness`.
    pub fn new(cfg: &RuntimeConfig, table_staleness: Option<u32>) -> Self {
        let slack = cfg.slack(table_staleness);
        ReadRule {
            slack,
            loosen: cfg.fault.loosen_client_bound as i64,
            push: cfg.consistency == Consistency::Essp,
            // Async has no staleness bound to trigger fetches: without refresh a row would
            // never change, so it always refreshes aggressively.
            prefetch: if slack.is_none() { PrefetchPolicy::Aggressive } else { cfg.prefetch },
        }
    }

    /// The rule of table `t`: a table whose reads the app announces (`announced_reads`) is
    /// neither prefetched nor pushed, unless it has no staleness bound (async refreshes anyway).
    pub fn for_table(cfg: &RuntimeConfig, t: &crate::config::TableConfig) -> Self {
        let mut r = Self::new(cfg, t.staleness);
        if t.announced_reads && r.slack.is_some() {
            r.push = false;
            r.prefetch = PrefetchPolicy::Off;
        }
        r
    }

    /// The oldest data age a read at clock `c` may return; `floor` is the barrier floor.
    #[inline]
    pub fn required(&self, c: Clock, floor: Age) -> Age {
        let by_slack = match self.slack {
            Some(s) => c.minus(s + 1 + self.loosen),
            None => Age::ANY,
        };
        by_slack.max(floor)
    }

    /// True if a cached copy of age `have` may serve a read that requires `required`.
    #[inline]
    pub fn admits(have: Age, required: Age) -> bool {
        have >= required
    }

    /// ESSP: rows are subscribed on first fetch and pushed by the servers from then on.
    pub fn pushes(&self) -> bool {
        self.push
    }

    pub fn prefetches(&self) -> bool {
        self.prefetch != PrefetchPolicy::Off
    }

    /// At the end of clock `old`, for a row read during it and cached at age `cached`: the age
    /// to prefetch it at for clock `old + 1` (`need` = what that clock will require), if any.
    pub fn prefetch_target(&self, old: Clock, cached: Age, need: Age) -> Option<Age> {
        match self.prefetch {
            PrefetchPolicy::Conservative if cached < need => Some(need),
            // Aggressive: anything newer than what we have (the server parks the request until
            // its clock moves, so this never asks twice for the same version).
            PrefetchPolicy::Aggressive if cached < old.age() => Some(need.max(cached.shifted(1))),
            _ => None,
        }
    }

    /// A refresh asked for by the application: anything newer than `cached`, and at least what
    /// a read now would need.
    pub fn refresh_target(cached: Age, need: Age) -> Age {
        need.max(cached.shifted(1))
    }
}

/// A server's side of the rule: what data age it claims and whether it pushes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ServeRule {
    push: bool,
    /// Test-only fault: claim rows are this many clocks fresher than they are.
    overstate: i64,
}

impl ServeRule {
    pub fn new(cfg: &RuntimeConfig) -> Self {
        ServeRule { push: cfg.consistency == Consistency::Essp, overstate: cfg.fault.overstate_age as i64 }
    }

    /// The data age a server reports when every client's updates up to `global` are applied.
    pub fn visible(&self, global: Age) -> Age {
        global.shifted(self.overstate)
    }

    /// A fetch for `min_age` can be answered now (else it is parked until the clock moves).
    pub fn can_serve(min_age: Age, visible: Age) -> bool {
        min_age <= visible
    }

    /// Rows changed since the last push go to their subscribers when the clock moves to `global`
    /// (not after the end of the job: nobody reads then).
    pub fn pushes_at(&self, global: Age) -> bool {
        self.push && !global.is_finished()
    }

    /// Subscriptions are recorded only under ESSP.
    pub fn subscribes(&self) -> bool {
        self.push
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(consistency: Consistency, staleness: u32) -> RuntimeConfig {
        RuntimeConfig { consistency, staleness, ..RuntimeConfig::default() }
    }

    #[test]
    fn bounds_of_each_model() {
        let c = Clock::new(10);
        let none = Age::NONE;
        assert_eq!(ReadRule::new(&cfg(Consistency::Bsp, 5), None).required(c, none), Age::new(9));
        assert_eq!(ReadRule::new(&cfg(Consistency::Ssp, 3), None).required(c, none), Age::new(6));
        assert_eq!(ReadRule::new(&cfg(Consistency::Essp, 3), Some(1)).required(c, none), Age::new(8));
        assert_eq!(ReadRule::new(&cfg(Consistency::Async, 3), None).required(c, none), Age::ANY);
        // The barrier floor wins over slack.
        assert_eq!(ReadRule::new(&cfg(Consistency::Ssp, 3), None).required(c, Age::new(9)), Age::new(9));
        assert!(ReadRule::new(&cfg(Consistency::Essp, 1), None).pushes());
        assert!(!ReadRule::new(&cfg(Consistency::Ssp, 1), None).pushes());
        let announced = crate::config::TableConfig::new(0, "t", "dense_f32", 1).with_announced_reads(true);
        let r = ReadRule::for_table(&cfg(Consistency::Essp, 1), &announced);
        assert!(!r.pushes() && !r.prefetches(), "announced reads: pulled when the app asks");
        assert!(ReadRule::for_table(&cfg(Consistency::Async, 1), &announced).prefetches(), "async refreshes");
    }

    #[test]
    fn fault_knobs_move_the_bounds() {
        let mut c = cfg(Consistency::Ssp, 2);
        c.fault.loosen_client_bound = 1;
        c.fault.overstate_age = 2;
        assert_eq!(ReadRule::new(&c, None).required(Clock::new(10), Age::NONE), Age::new(6));
        assert_eq!(ServeRule::new(&c).visible(Age::new(4)), Age::new(6));
    }

    #[test]
    fn prefetch_decisions() {
        let r = ReadRule::new(&cfg(Consistency::Ssp, 1), None);
        let old = Clock::new(5);
        let need = r.required(old.next(), Age::NONE);
        assert_eq!(need, Age::new(4));
        assert_eq!(r.prefetch_target(old, Age::new(3), need), Some(Age::new(4)));
        assert_eq!(r.prefetch_target(old, Age::new(5), need), None);
        let mut c = cfg(Consistency::Ssp, 1);
        c.prefetch = PrefetchPolicy::Conservative;
        let r = ReadRule::new(&c, None);
        assert_eq!(r.prefetch_target(old, Age::new(4), need), None);
        assert_eq!(r.prefetch_target(old, Age::new(3), need), Some(need));
    }
}
