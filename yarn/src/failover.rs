//! ResourceManager HA failover, shared by the client (`appclient`) and the AM
//! (`amrm`): which errors move on to the next RM, and in what order and with what waits
//! the RMs are tried, as Hadoop's `RMProxy` / `RMFailoverProxyProvider` do it.

use crate::error::YarnError;
use std::time::{Duration, Instant};

/// Whether another RM (or a new connection) may succeed where this failed: a connection that
/// failed or dropped, or a standby RM, as Hadoop's `failoverOnNetworkException` policy treats
/// them. Every other remote error is the active RM's answer and final.
pub fn worth_failover(e: &YarnError) -> bool {
    match e {
        YarnError::Io(_) => true,
        // A refused authentication (FATAL) is final: every RM shares the token keys.
        YarnError::Remote { class, .. } | YarnError::Fatal { class, .. } => class.ends_with("StandbyException"),
        _ => false,
    }
}

/// How long to keep trying.
#[derive(Clone, Copy, Debug)]
pub enum Limit {
    /// This many full rounds over the RMs (an interactive client: fail within seconds).
    Rounds(u32),
    /// Until this moment (the AM: a running job waits out an RM restart or failover, as
    /// `yarn.resourcemanager.connect.max-wait.ms` lets Hadoop's AMs).
    Until(Instant),
}

/// The order of attempts over `n` RMs starting at `start`: the next RM at once after a failure,
/// and after each full round a wait that doubles from 0.2 s up to 3.2 s, or up to
/// `yarn.resourcemanager.connect.retry-interval.ms` where that is set ([`Rotation::max_backoff`]).
#[derive(Debug)]
pub struct Rotation {
    n: usize,
    current: usize,
    /// Attempts since the start of the current round.
    in_round: usize,
    rounds: u32,
    limit: Limit,
    backoff: Duration,
    max_backoff: Duration,
}

const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_millis(3200);

impl Rotation {
    pub fn new(n: usize, start: usize, limit: Limit) -> Self {
        let n = n.max(1);
        Rotation {
            n,
            current: start % n,
            in_round: 0,
            rounds: 0,
            limit,
            backoff: FIRST_BACKOFF,
            max_backoff: MAX_BACKOFF,
        }
    }

    /// The longest wait between rounds: Hadoop's retry interval (a shorter one also shortens the
    /// first waits).
    pub fn max_backoff(mut self, d: Duration) -> Self {
        self.max_backoff = d;
        self.backoff = self.backoff.min(d);
        self
    }

    /// The RM to try now.
    pub fn current(&self) -> usize {
        self.current
    }

    /// After a failure on the current RM: moves to the next one and returns how long to wait
    /// before trying it, or `None` when the limit is reached.
    pub fn advance(&mut self) -> Option<Duration> {
        self.current = (self.current + 1) % self.n;
        self.in_round += 1;
        // One RM alone is still retried: a restart or a dropped connection passes.
        let round_len = self.n.max(2);
        if self.in_round < round_len {
            return self.within_limit(Duration::ZERO);
        }
        self.in_round = 0;
        self.rounds += 1;
        if let Limit::Rounds(r) = self.limit {
            if self.rounds >= r {
                return None;
            }
        }
        let wait = self.backoff;
        self.backoff = (self.backoff * 2).min(self.max_backoff);
        self.within_limit(wait)
    }

    fn within_limit(&self, wait: Duration) -> Option<Duration> {
        match self.limit {
            Limit::Until(t) if Instant::now() + wait > t => None,
            _ => Some(wait),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_visit_every_rm_then_back_off() {
        let mut r = Rotation::new(3, 1, Limit::Rounds(3));
        let mut seen = vec![r.current()];
        let mut waits = Vec::new();
        while let Some(w) = r.advance() {
            seen.push(r.current());
            waits.push(w.as_millis());
        }
        assert_eq!(seen, vec![1, 2, 0, 1, 2, 0, 1, 2, 0]);
        assert_eq!(waits, vec![0, 0, 200, 0, 0, 400, 0, 0]);
    }

    #[test]
    fn the_retry_interval_caps_the_backoff() {
        let waits = |mut r: Rotation| std::iter::from_fn(|| r.advance()).map(|w| w.as_millis()).collect::<Vec<_>>();
        let r = Rotation::new(1, 0, Limit::Rounds(7)).max_backoff(Duration::from_millis(1000));
        assert_eq!(waits(r), vec![0, 200, 0, 400, 0, 800, 0, 1000, 0, 1000, 0, 1000, 0]);
        let r = Rotation::new(1, 0, Limit::Rounds(3)).max_backoff(Duration::from_millis(50));
        assert_eq!(waits(r), vec![0, 50, 0, 50, 0]);
    }

    #[test]
    fn one_rm_is_retried_and_a_deadline_ends_the_rotation() {
        let mut r = Rotation::new(1, 0, Limit::Rounds(2));
        assert_eq!(r.advance(), Some(Duration::ZERO));
        assert_eq!(r.advance(), Some(FIRST_BACKOFF));
        assert_eq!(r.advance(), Some(Duration::ZERO));
        assert_eq!(r.advance(), None);
        let mut r = Rotation::new(2, 0, Limit::Until(Instant::now() + Duration::from_millis(100)));
        assert_eq!(r.advance(), Some(Duration::ZERO));
        // The 0.2 s wait would pass the deadline.
        assert_eq!(r.advance(), None);
    }

    #[test]
    fn only_connection_errors_and_standby_fail_over() {
        let remote = |class: &str| YarnError::Remote {
            server: "rm".into(),
            method: "allocate".into(),
            class: class.into(),
            message: String::new(),
        };
        assert!(worth_failover(&YarnError::Io("refused".into())));
        assert!(worth_failover(&remote("org.apache.hadoop.ipc.StandbyException")));
        assert!(!worth_failover(&remote("org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException")));
        assert!(!worth_failover(&YarnError::Config("x".into())));
        let refused = YarnError::Fatal {
            server: "rm".into(),
            class: "javax.security.sasl.SaslException".into(),
            message: "DIGEST-MD5: digest response format violation".into(),
        };
        assert!(!worth_failover(&refused));
    }
}
