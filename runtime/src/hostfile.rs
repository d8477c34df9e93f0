//! Hostfile: one line per process, `id host port` (Bösen's format). Process id = client id.
//! Blank lines and `#` comments are ignored; ids must be exactly 0..n.

use crate::error::{PsError, Result};
use std::path::Path;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hostfile {
    hosts: Vec<(String, u16)>,
}

impl Hostfile {
    pub fn new(hosts: Vec<(String, u16)>) -> Self {
        Hostfile { hosts }
    }

    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| PsError::io(format!("reading hostfile {}", path.display()), e))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses hostfile text; errors name `source` and the line.
    pub fn parse(text: &str, source: &str) -> Result<Self> {
        let mut entries: Vec<(usize, String, u16)> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = |why: &str| PsError::Config(format!("{source}:{}: {why}: '{line}'", i + 1));
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() != 3 {
                return Err(bad("expected 'id host port'"));
            }
            let id = f[0].parse::<usize>().map_err(|_| bad("id is not a number"))?;
            let port = f[2].parse::<u16>().map_err(|_| bad("port is not a number in 0..65535"))?;
            entries.push((id, f[1].to_string(), port));
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
        Ok(Hostfile { hosts: entries.into_iter().map(|(_, h, p)| (h, p)).collect() })
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
        self.hosts.iter().enumerate().map(|(i, (h, p))| format!("{i} {h} {p}\n")).collect()
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
        let e = Hostfile::parse("0 a 1\n0 b 2\n", "hosts").unwrap_err().to_string();
        assert!(e.contains("hosts"), "{e}");
        let e = Hostfile::parse("0 a\n", "hosts").unwrap_err().to_string();
        assert!(e.contains("hosts:1"), "{e}");
        assert!(Hostfile::parse("0 a 99999\n", "h").is_err());
    }
}
