//! Listening ports on firewalled clusters: `--port-range A-B` makes every listener of a job (the
//! runtime processes' and the application master's) take a free port in A..=B instead of any.

use crate::error::{PsError, Result};
use serde::{Deserialize, Serialize};
use std::net::TcpListener;

/// An inclusive range of TCP ports, written `A-B`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PortRange {
    pub first: u16,
    pub last: u16,
}

impl std::str::FromStr for PortRange {
    type Err = PsError;
    fn from_str(s: &str) -> Result<Self> {
        let bad = || PsError::Config(format!("port range {s:?}: expected A-B with 1 <= A <= B <= 65535"));
        let (a, b) = s.split_once('-').ok_or_else(bad)?;
        let (first, last) = (a.trim().parse::<u16>().map_err(|_| bad())?, b.trim().parse::<u16>().map_err(|_| bad())?);
        if first == 0 || first > last {
            return Err(bad());
        }
        Ok(PortRange { first, last })
    }
}

impl TryFrom<String> for PortRange {
    type Error = PsError;
    fn try_from(s: String) -> Result<Self> {
        s.parse()
    }
}

impl From<PortRange> for String {
    fn from(r: PortRange) -> String {
        r.to_string()
    }
}

impl std::fmt::Display for PortRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

/// Binds `host` on a free port of `range` (any port if `None`). The search starts at a port
/// derived from the process id, so processes starting together on one node rarely race for the
/// same port; a port another process holds is skipped.
pub fn bind(host: &str, range: Option<PortRange>) -> Result<TcpListener> {
    let Some(r) = range else {
        return TcpListener::bind((host, 0)).map_err(|e| PsError::io("binding a listening port", e));
    };
    let n = u32::from(r.last - r.first) + 1;
    let start = std::process::id() % n;
    let mut last_err = None;
    for i in 0..n {
        let port = r.first + ((start + i) % n) as u16;
        match TcpListener::bind((host, port)) {
            Ok(l) => return Ok(l),
            Err(e) => last_err = Some(e),
        }
    }
    let e = last_err.map(|e| e.to_string()).unwrap_or_default();
    Err(PsError::Io(format!("no free port in --port-range {r} on {host} (last error: {e})")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_print_and_refuse_nonsense() {
        let r: PortRange = "40000-40010".parse().unwrap();
        assert_eq!((r.first, r.last, r.to_string().as_str()), (40000, 40010, "40000-40010"));
        assert_eq!(serde_json::to_string(&r).unwrap(), "\"40000-40010\"");
        assert_eq!(serde_json::from_str::<PortRange>("\"5-5\"").unwrap(), PortRange { first: 5, last: 5 });
        for bad in ["", "5", "0-3", "9-3", "a-b", "1-70000", "-"] {
            assert!(bad.parse::<PortRange>().unwrap_err().to_string().contains("expected A-B"), "{bad}");
        }
    }

    #[test]
    fn binds_inside_the_range_and_says_when_it_is_full() {
        // A range of two ports found free a moment ago.
        let probe = TcpListener::bind("127.0.0.1:0").unwrap();
        let p = probe.local_addr().unwrap().port();
        drop(probe);
        let r = PortRange { first: p, last: p };
        let l = bind("127.0.0.1", Some(r)).unwrap();
        assert_eq!(l.local_addr().unwrap().port(), p);
        let e = bind("127.0.0.1", Some(r)).unwrap_err().to_string();
        assert!(e.contains(&format!("no free port in --port-range {p}-{p}")), "{e}");
        assert_ne!(bind("127.0.0.1", None).unwrap().local_addr().unwrap().port(), 0);
    }
}
