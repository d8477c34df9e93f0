//! The lines a running process reports to whoever tracks the job: the YARN application master
//! (over its rendezvous connection) or the local launcher (over a connection of its own). One
//! type, [`Report`], encodes and parses every kind, so the two sides cannot drift apart.
//!
//! ```text
//! clock <c> <total>                          the process clock and the planned clocks (-1: unknown)
//! failed <reason>                            why the process is about to exit with an error
//! tick <c> <time_s> <compute_s> <wait_s> <sent> <recv>
//!                                            the process completed clock c: seconds since it
//!                                            started, its threads' mean compute and wait seconds
//!                                            so far, and bytes sent/received so far
//! objective <label> <time_s> <name>=<value>...
//!                                            an evaluation of the objective (label: the clocks
//!                                            or passes done), the first value being the main one
//! staleness <n0> <n1> ...                    reads so far that saw data age (clock - d), d = 0..
//! snapshot <c> part|committed|approx         this process wrote its part of snapshot c; on the
//!                                            name node also: the snapshot is complete (committed
//!                                            resumable, or approx: complete but not resumable)
//! ```
//! Numbers use Rust's shortest round-trip formatting, so a value read back is the value sent.

/// Longest report line (a failure reason is cut to fit; other kinds are far shorter).
pub const MAX_LINE: usize = 2048;
/// Buckets of the staleness histogram a report carries (the last one counts everything staler).
pub const STALENESS_BUCKETS: usize = 64;
/// Values an objective line carries at most.
const MAX_VALUES: usize = 16;

/// The progress of one process at the end of a clock (cumulative figures).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Tick {
    pub clock: i64,
    pub time_s: f64,
    pub compute_s: f64,
    pub wait_s: f64,
    pub bytes_sent: u64,
    pub bytes_recv: u64,
}

/// Where a snapshot is, as one process saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotState {
    /// This process wrote its part.
    Part,
    /// The name node wrote the manifest: the snapshot is complete and resumable.
    Committed,
    /// Complete but not resumable (written under `--inter-dc asp`).
    Approx,
}

impl SnapshotState {
    fn name(self) -> &'static str {
        match self {
            SnapshotState::Part => "part",
            SnapshotState::Committed => "committed",
            SnapshotState::Approx => "approx",
        }
    }
}

/// What a process reports after start-up.
#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    /// `clock <c> <total>`: the process clock and the planned clocks (-1: unknown).
    Clock(i64, i64),
    /// `failed <reason>`: why the process is about to exit with an error.
    Failed(String),
    Tick(Tick),
    /// An objective evaluation: label (clocks or passes done), seconds since the process
    /// started, named values (names are `[A-Za-z0-9_]`).
    Objective {
        label: i64,
        time_s: f64,
        values: Vec<(String, f64)>,
    },
    /// Cumulative reads by staleness `d` (data age = reader clock - d), at most
    /// [`STALENESS_BUCKETS`] of them.
    Staleness(Vec<u64>),
    Snapshot(i64, SnapshotState),
}

fn valid_name(n: &str) -> bool {
    !n.is_empty() && n.len() <= 64 && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl Report {
    /// The line as sent (with its newline). A failure reason becomes one line of at most
    /// [`MAX_LINE`] bytes: control characters (a multi-line panic message) turn into spaces and
    /// the end is cut at a character boundary, so that the receiver neither refuses nor splits
    /// it. Objective values with names that could not be parsed back are left out.
    pub fn encode(&self) -> String {
        match self {
            Report::Clock(c, t) => format!("clock {c} {t}\n"),
            Report::Failed(reason) => {
                let one: String = reason.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
                let mut line = format!("failed {one}");
                while line.len() > MAX_LINE - 1 {
                    line.pop();
                }
                line.push('\n');
                line
            }
            Report::Tick(t) => format!(
                "tick {} {} {} {} {} {}\n",
                t.clock, t.time_s, t.compute_s, t.wait_s, t.bytes_sent, t.bytes_recv
            ),
            Report::Objective { label, time_s, values } => {
                let mut line = format!("objective {label} {time_s}");
                for (k, v) in values.iter().filter(|(k, _)| valid_name(k)).take(MAX_VALUES) {
                    line += &format!(" {k}={v}");
                }
                line + "\n"
            }
            Report::Staleness(n) => {
                let mut line = "staleness".to_string();
                for x in n.iter().take(STALENESS_BUCKETS) {
                    line += &format!(" {x}");
                }
                line + "\n"
            }
            Report::Snapshot(c, s) => format!("snapshot {c} {}\n", s.name()),
        }
    }

    /// Parses a report line (with or without its newline); `None` if it is none.
    pub fn parse(line: &str) -> Option<Report> {
        if let Some(r) = line.strip_prefix("failed ") {
            return Some(Report::Failed(r.trim().to_string()));
        }
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        let finite = |s: &str| s.parse::<f64>().ok().filter(|x| x.is_finite());
        match f.as_slice() {
            ["clock", c, t] => Some(Report::Clock(c.parse().ok()?, t.parse().ok()?)),
            ["tick", c, t, comp, wait, sent, recv] => Some(Report::Tick(Tick {
                clock: c.parse().ok()?,
                time_s: finite(t)?,
                compute_s: finite(comp)?,
                wait_s: finite(wait)?,
                bytes_sent: sent.parse().ok()?,
                bytes_recv: recv.parse().ok()?,
            })),
            ["objective", label, t, vals @ ..] if vals.len() <= MAX_VALUES => {
                let values = vals
                    .iter()
                    .map(|kv| {
                        let (k, v) = kv.split_once('=')?;
                        valid_name(k).then(|| Some((k.to_string(), v.parse::<f64>().ok()?)))?
                    })
                    .collect::<Option<Vec<_>>>()?;
                Some(Report::Objective { label: label.parse().ok()?, time_s: finite(t)?, values })
            }
            ["staleness", n @ ..] if n.len() <= STALENESS_BUCKETS => {
                Some(Report::Staleness(n.iter().map(|x| x.parse().ok()).collect::<Option<_>>()?))
            }
            ["snapshot", c, s] => {
                let state = [SnapshotState::Part, SnapshotState::Committed, SnapshotState::Approx]
                    .into_iter()
                    .find(|k| k.name() == *s)?;
                Some(Report::Snapshot(c.parse().ok()?, state))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The failure line as `AmLink::report_failure` built it by hand before `Report::encode`.
    fn old_failed_line(reason: &str) -> String {
        let one: String = reason.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        let mut line = format!("failed {one}");
        while line.len() > MAX_LINE - 1 {
            line.pop();
        }
        line + "\n"
    }

    #[test]
    fn report_round_trip() {
        let tick =
            Tick { clock: 7, time_s: 1.25, compute_s: 0.1 + 0.2, wait_s: 0.0, bytes_sent: 1 << 40, bytes_recv: 3 };
        let objective = Report::Objective {
            label: 4,
            time_s: 2.5,
            values: vec![("rmse".into(), 0.81), ("test_rmse".into(), 1e-9)],
        };
        for (r, line) in [
            (Report::Clock(3, 10), "clock 3 10\n"),
            (Report::Clock(0, -1), "clock 0 -1\n"),
            (Report::Clock(-1, i64::MAX), "clock -1 9223372036854775807\n"),
            (Report::Failed("boom at 3".into()), "failed boom at 3\n"),
            (Report::Tick(tick), "tick 7 1.25 0.30000000000000004 0 1099511627776 3\n"),
            (objective, "objective 4 2.5 rmse=0.81 test_rmse=0.000000001\n"),
            (Report::Staleness(vec![0, 12, 3]), "staleness 0 12 3\n"),
            (Report::Staleness(vec![]), "staleness\n"),
            (Report::Snapshot(20, SnapshotState::Committed), "snapshot 20 committed\n"),
            (Report::Snapshot(5, SnapshotState::Part), "snapshot 5 part\n"),
        ] {
            assert_eq!(r.encode(), line);
            assert_eq!(Report::parse(line.trim_end_matches('\n')), Some(r.clone()));
            assert_eq!(Report::parse(line), Some(r));
        }
        // Reasons become one line that fits, cut at a character boundary, exactly as before.
        let long = format!("worker panicked:\n{}", "ü".repeat(MAX_LINE));
        for reason in ["a\tb\r\nc", long.as_str(), "", "ends with a space "] {
            let line = Report::Failed(reason.into()).encode();
            assert_eq!(line, old_failed_line(reason));
            assert!(line.len() <= MAX_LINE && line.ends_with('\n') && line.matches('\n').count() == 1);
            let Some(Report::Failed(why)) = Report::parse(&line) else { panic!("{line}") };
            assert_eq!(why, line["failed ".len()..].trim());
        }
        // Every kind stays within a line even at its largest.
        let big = Report::Staleness(vec![u64::MAX; STALENESS_BUCKETS * 2]).encode();
        assert!(big.len() <= MAX_LINE);
        assert_eq!(Report::parse(&big), Some(Report::Staleness(vec![u64::MAX; STALENESS_BUCKETS])));
    }

    #[test]
    fn malformed_reports_are_none() {
        for bad in [
            "clock x",
            "tick 1 2 3",
            "tick 1 NaN 0 0 0 0",
            "objective 1 2 rmse",
            "objective 1 2 bad-name=3",
            "objective x 2 a=1",
            "staleness -1",
            "snapshot 3 maybe",
            "hello",
            "",
        ] {
            assert_eq!(Report::parse(bad), None, "{bad}");
        }
        // A value that does not parse as a name leaves the line; the rest goes through.
        let r = Report::Objective { label: 1, time_s: 0.0, values: vec![("a b".into(), 1.0), ("ok".into(), 2.0)] };
        assert_eq!(r.encode(), "objective 1 0 ok=2\n");
    }
}
