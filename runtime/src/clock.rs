//! Clocks and data ages, as two types so that one cannot be used for the other.
//!
//! * A [`Clock`] numbers the intervals between a worker's `clock()` calls: a thread in clock `c`
//!   has completed clocks `0..c`, and its updates of now belong to clock `c`.
//! * An [`Age`] describes data: a row (or a server, or a client's shipped updates) of age `a`
//!   holds every update of clocks `<= a`. Completing clock `c` produces data of age `c`.
//!
//! The special values are named constants with defined ordering, never magic numbers: no data at
//! all is [`Age::NONE`] (below every real age); a client that finished sends [`Age::FINISHED`]
//! (above every real age), after which its thread clocks are [`Clock::FINISHED`].

use std::fmt;

/// A clock of a worker thread (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Clock(i64);

/// The data age of a row, a server or a client's shipped updates (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Age(i64);

/// Raw value of [`Age::FINISHED`]: far from `i64::MAX`, so a few clocks of arithmetic on it
/// cannot overflow.
const FINISHED_RAW: i64 = i64::MAX / 2;

impl Clock {
    /// The clock of a thread that has finished (it completed every clock up to `Age::FINISHED`).
    pub const FINISHED: Clock = Clock(FINISHED_RAW + 1);

    pub const fn new(c: i64) -> Self {
        Clock(c)
    }
    pub const fn get(self) -> i64 {
        self.0
    }
    pub const fn next(self) -> Clock {
        Clock(self.0 + 1)
    }
    /// Data age of everything completed before this clock began (`c - 1`).
    pub fn completed(self) -> Age {
        if self >= Clock::FINISHED {
            Age::FINISHED
        } else {
            Age(self.0 - 1)
        }
    }
    /// The data age `k` clocks before this one: a read at clock `c` with staleness `s` needs
    /// `c.minus(s + 1)`.
    pub fn minus(self, k: i64) -> Age {
        Age(self.0.saturating_sub(k))
    }
    /// The data age this clock's own updates produce once completed.
    pub fn age(self) -> Age {
        Age(self.0)
    }
}

impl Age {
    /// No data yet: older than every real age.
    pub const NONE: Age = Age(i64::MIN / 4);
    /// Any data at all (the requirement when there is no staleness bound).
    pub const ANY: Age = Age(i64::MIN / 4 + 1);
    /// A client that finished: it will send no more updates, so its data is final.
    pub const FINISHED: Age = Age(FINISHED_RAW);

    pub const fn new(a: i64) -> Self {
        Age(a)
    }
    pub const fn get(self) -> i64 {
        self.0
    }
    pub fn is_finished(self) -> bool {
        self >= Age::FINISHED
    }
    /// The clock after this age: where a reader of data of this age continues.
    pub fn next_clock(self) -> Clock {
        Clock(self.0.saturating_add(1))
    }
    /// This age moved by `k` clocks (negative: older), saturating at the sentinels' range.
    pub fn shifted(self, k: i64) -> Age {
        Age(self.0.saturating_add(k))
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Clock::FINISHED => write!(f, "clock:finished"),
            Clock(c) => write!(f, "clock:{c}"),
        }
    }
}

impl fmt::Debug for Age {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Age::NONE => write!(f, "age:none"),
            Age::FINISHED => write!(f, "age:finished"),
            Age(a) => write!(f, "age:{a}"),
        }
    }
}

impl fmt::Display for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl fmt::Display for Age {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinels_order_around_real_values() {
        assert!(Age::NONE < Age::ANY && Age::ANY < Age::new(-1_000_000));
        assert!(Age::new(1 << 40) < Age::FINISHED);
        assert_eq!(Clock::FINISHED.completed(), Age::FINISHED);
        assert!(Age::FINISHED.next_clock() <= Clock::FINISHED);
        assert_eq!(Clock::new(5).completed(), Age::new(4));
        assert_eq!(Clock::new(5).minus(3), Age::new(2));
        assert_eq!(Age::NONE.shifted(-10), Age::new(i64::MIN / 4 - 10));
    }
}
