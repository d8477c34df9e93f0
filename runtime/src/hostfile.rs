//! Hostfile: one line per process, `id host port` (Bösen's format). Process id = client id.
//! Blank lines and `#` comments are ignored; ids must be exactly 0..n. A geo-distributed job on
//! YARN adds each process's data center as a fourth field, `id host port dc` (the node's rack or
//! the `--dc-hosts` label): on every line or on none.

use crate::error::{PsError, Result};
use std::path::Path;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hostfile {
    hosts: Vec<(String, u16)>,
    /// Each process's data center label, if the hostfile names them.
    dcs: Option<Vec<String>>,
}

impl Hostfile {
    pub fn new(hosts: Vec<(String, u16)>) -> Self {
        Hostfile { hosts, dcs: None }
    }

    /// The same processes, each in the data center of the same index in `labels` (one word
    /// each, no `#`).
    pub fn with_dcs(mut self, labels: Vec<String>) -> Result<Self> {
        if labels.len() != self.hosts.len() {
            return Err(PsError::Config(format!(
                "{} data center labels for {} processes",
                labels.len(),
                self.hosts.len()
            )));
        }
        if let Some(bad) = labels.iter().find(|l| l.is_empty() || l.contains(char::is_whitespace) || l.contains('#')) {
            return Err(PsError::Config(format!("data center label {bad:?} is empty or has a space or '#'")));
        }
        self.dcs = Some(labels);
        Ok(self)
    }

    /// Each process's data center label, if the hostfile names them.
    pub fn dcs(&self) -> Option<&[String]> {
        self.dcs.as_deref()
    }

    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| PsError::io(format!("reading hostfile {}", path.display()), e))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses hostfile text; errors name `source` and the line.
    pub fn parse(text: &str, source: &str) -> Result<Self> {
        let mut entries: Vec<(usize, String, u16, Option<String>)> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = |why: &str| PsError::Config(format!("{source}:{}: {why}: '{line}'", i + 1));
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() != 3 && f.len() != 4 {
                return Err(bad("expected 'id host port' or 'id host port datacenter'"));
            }
            if entries.first().is_some_and(|e| e.3.is_some() != (f.len() == 4)) {
                return Err(bad("a data center must be named on every line or on none"));
            }
            let id = f[0].parse::<usize>().map_err(|_| bad("id is not a number"))?;
            let port = f[2].parse::<u16>().map_err(|_| bad("port is not a number in 0..65535"))?;
            entries.push((id, f[1].to_string(), port, f.get(3).map(|s| s.to_string())));
        }
        entries.sort_by_key(|e| e.0);
        for (i, e) in entries.iter().enumerate() {
            if e.0 != i {
                return Err(PsError::Config(format!(
                    "{source}: process ids must be 0..{} without gaps or repeats (found {})",
                    entries.len(),
                    e.0
                )));
            }
        }
        if entries.is_empty() {
            return Err(PsError::Config(format!("{source}: no processes listed")));
        }
        let dcs = entries.iter().map(|e| e.3.clone()).collect::<Option<Vec<String>>>();
        Ok(Hostfile { hosts: entries.into_iter().map(|(_, h, p, _)| (h, p)).collect(), dcs })
    }

    pub fn len(&self) -> usize {
        self.hosts.len()
    }
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }
    pub fn addr(&self, id: usize) -> String {
        let (h, p) = &self.hosts[id];
        format!("{h}:{p}")
    }
    pub fn render(&self) -> String {
        let dc = |i: usize| self.dcs.as_ref().map(|d| format!(" {}", d[i])).unwrap_or_default();
        self.hosts.iter().enumerate().map(|(i, (h, p))| format!("{i} {h} {p}{}\n", dc(i))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let h = Hostfile::parse("# c\n1 b 2\n0 a 1\n\n", "h").unwrap();
        assert_eq!(h.addr(0), "a:1");
        assert_eq!(h.addr(1), "b:2");
        assert_eq!(Hostfile::parse(&h.render(), "x").unwrap(), h);
        assert_eq!(h.dcs(), None);
        let geo = h.clone().with_dcs(vec!["/rack-1".into(), "/rack-0".into()]).unwrap();
        assert_eq!(Hostfile::parse(&geo.render(), "x").unwrap(), geo);
        assert_eq!(geo.dcs().unwrap(), ["/rack-1", "/rack-0"]);
        assert!(h.clone().with_dcs(vec!["a b".into(), "c".into()]).is_err());
        assert!(h.clone().with_dcs(vec!["a".into()]).is_err());
        let mixed = Hostfile::parse("0 a 1 east\n1 b 2\n", "h").unwrap_err().to_string();
        assert!(mixed.contains("h:2") && mixed.contains("every line or on none"), "{mixed}");
        let e = Hostfile::parse("0 a 1\n0 b 2\n", "hosts").unwrap_err().to_string();
        assert!(e.contains("hosts"), "{e}");
        let e = Hostfile::parse("0 a\n", "hosts").unwrap_err().to_string();
        assert!(e.contains("hosts:1"), "{e}");
        assert!(Hostfile::parse("0 a 99999\n", "h").is_err());
    }
}
