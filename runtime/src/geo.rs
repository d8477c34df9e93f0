//! Geo-distributed jobs (Gaia, PAPERS.md §8): which data center each process is in, how the data
//! centers synchronise, and the emulated WAN between them ([`crate::wan`]).
//!
//! `inter_dc: ssp` is Gaia's Baseline: one parameter server spread over every data center, the
//! job's consistency model running across the WAN (each row lives on one process, wherever its
//! readers are). `inter_dc: asp` is Gaia's Approximate Synchronous Parallel: every data center
//! has its own servers holding a whole copy of the model, clients use only their own data
//! center's, and servers send each other the updates that are significant ([`Topology`] says
//! who serves what; the mirroring itself is in the server).

use crate::error::{PsError, Result};
use crate::wan::LinkShape;
use serde::{Deserialize, Serialize};

/// How data centers synchronise with each other.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum InterDc {
    /// One global parameter server over all data centers (Gaia's Baseline).
    #[default]
    Ssp,
    /// A model copy per data center, significant updates mirrored between them (Gaia).
    Asp,
}

impl std::str::FromStr for InterDc {
    type Err = PsError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "ssp" => Ok(Self::Ssp),
            "asp" => Ok(Self::Asp),
            _ => Err(PsError::Config(format!("inter_dc: '{s}' is not one of ssp, asp"))),
        }
    }
}

/// Data centers and the emulated WAN of a job.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct GeoConfig {
    /// Data centers the processes are split into, evenly in hostfile order (1: one data center).
    pub datacenters: u32,
    /// The data center of each process by hostfile position; overrides `datacenters` if set.
    pub dc_of: Vec<u32>,
    /// On YARN with `--dc-by rack` / `--dc-hosts`: each process's data center as the hostfile
    /// names it (set at start-up, from which `dc_of` follows; echoed in the stats).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dc_labels: Vec<String>,
    pub inter_dc: InterDc,
    /// Bandwidth of every link between two processes in different data centers, megabits per
    /// second, each direction (unset: not limited).
    pub wan_mbps: Option<f64>,
    /// One-way delay of those links, milliseconds.
    pub wan_delay_ms: f64,
    /// Per pair of data centers instead (replaces `wan_mbps` and `wan_delay_ms`).
    pub wan_matrix: Option<WanMatrix>,
    /// ASP: initial significance threshold `v`; at clock t an accumulated update is sent to the
    /// other data centers when |update / value| exceeds v / sqrt(t).
    pub significance: f64,
    /// ASP: a server more than this many clocks ahead of its slowest mirror stops serving reads
    /// until the mirror catches up (Gaia's DS).
    pub mirror_clock_bound: u32,
    /// ASP: also send, best effort, updates above a soft threshold that is lowered (to 1/64 of
    /// the hard one) while the WAN links keep up and raised again when they fall behind.
    pub soft_significance: bool,
}

/// Bandwidth and delay between each ordered pair of data centers (`--wan-matrix FILE`, JSON):
/// entry `[i][j]` is the link from data center `i` to `j` of the job (the first D entries serve a
/// job of D data centers; the diagonal is not used).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WanMatrix {
    /// Names of the data centers, for messages and reports.
    pub datacenters: Vec<String>,
    /// Megabits per second of each link (each process pair, each direction).
    pub mbps: Vec<Vec<f64>>,
    /// One-way delay of each link, milliseconds (all 0 if left out).
    #[serde(default)]
    pub delay_ms: Vec<Vec<f64>>,
    /// Where the numbers come from (free text, for people reading the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl WanMatrix {
    fn validate(&self) -> Result<()> {
        let d = self.datacenters.len();
        let bad = |why: String| Err(PsError::Config(format!("geo.wan_matrix: {why}")));
        if d < 2 {
            return bad("needs at least two data centers".into());
        }
        let square = |m: &Vec<Vec<f64>>| m.len() == d && m.iter().all(|r| r.len() == d);
        if !square(&self.mbps) || !(self.delay_ms.is_empty() || square(&self.delay_ms)) {
            return bad(format!("mbps (and delay_ms, if given) must be {d} x {d}, one row per data center"));
        }
        for i in 0..d {
            for j in (0..d).filter(|&j| j != i) {
                let (name_i, name_j) = (&self.datacenters[i], &self.datacenters[j]);
                let m = self.mbps[i][j];
                if !(m.is_finite() && m > 0.0) {
                    return bad(format!("mbps from {name_i} to {name_j} must be positive, not {m}"));
                }
                let l = self.delay(i, j);
                if !(l.is_finite() && l >= 0.0) {
                    return bad(format!("delay_ms from {name_i} to {name_j} must be zero or more, not {l}"));
                }
            }
        }
        Ok(())
    }

    fn delay(&self, i: usize, j: usize) -> f64 {
        self.delay_ms.get(i).and_then(|r| r.get(j)).copied().unwrap_or(0.0)
    }

    /// The slowest link's bandwidth and the longest delay (for the liveness check).
    pub fn worst(&self) -> (f64, f64) {
        let d = self.datacenters.len();
        let pairs = || (0..d).flat_map(move |i| (0..d).filter(move |&j| j != i).map(move |j| (i, j)));
        let mbps = pairs().map(|(i, j)| self.mbps[i][j]).fold(f64::INFINITY, f64::min);
        (mbps, pairs().map(|(i, j)| self.delay(i, j)).fold(0.0, f64::max))
    }
}

impl Default for GeoConfig {
    fn default() -> Self {
        GeoConfig {
            datacenters: 1,
            dc_of: Vec::new(),
            dc_labels: Vec::new(),
            inter_dc: InterDc::Ssp,
            wan_mbps: None,
            wan_delay_ms: 0.0,
            wan_matrix: None,
            significance: 0.01,
            mirror_clock_bound: 2,
            soft_significance: false,
        }
    }
}

impl GeoConfig {
    /// Checks what does not depend on the number of processes; errors name the key.
    pub fn validate(&self) -> Result<()> {
        let bad = |k: &str, why: String| Err(PsError::Config(format!("geo.{k}: {why}")));
        if self.datacenters == 0 {
            return bad("datacenters", "must be at least 1".into());
        }
        if let Some(m) = self.wan_mbps {
            if !(m.is_finite() && m > 0.0) {
                return bad("wan_mbps", format!("must be a positive number of megabits per second, not {m}"));
            }
        }
        if !(self.wan_delay_ms.is_finite() && self.wan_delay_ms >= 0.0) {
            return bad("wan_delay_ms", format!("must be zero or more milliseconds, not {}", self.wan_delay_ms));
        }
        if !(self.significance.is_finite() && self.significance >= 0.0) {
            return bad("significance", format!("must be zero or more, not {}", self.significance));
        }
        if let Some(m) = &self.wan_matrix {
            if self.wan_mbps.is_some() || self.wan_delay_ms > 0.0 {
                return bad("wan_matrix", "replaces wan_mbps and wan_delay_ms: give one or the other".into());
            }
            m.validate()?;
        }
        Ok(())
    }

    /// Checks the data centers against a job of `n` processes: every data center has a process.
    pub fn validate_for(&self, n: usize) -> Result<()> {
        self.validate()?;
        let bad = |k: &str, why: String| Err(PsError::Config(format!("geo.{k}: {why}")));
        if !self.dc_of.is_empty() {
            if self.dc_of.len() != n {
                return bad("dc_of", format!("lists {} processes, but the job has {n}", self.dc_of.len()));
            }
            let d = self.count(n);
            if let Some(missing) = (0..d).find(|dc| !self.dc_of.contains(dc)) {
                return bad("dc_of", format!("data center {missing} has no process (number them from 0 without gaps)"));
            }
        } else if self.datacenters as usize > n {
            return bad(
                "datacenters",
                format!("{} data centers need at least as many processes, not {n}", self.datacenters),
            );
        }
        if let Some(m) = &self.wan_matrix {
            let (have, need) = (m.datacenters.len(), self.count(n) as usize);
            if have < need {
                return bad("wan_matrix", format!("describes {have} data centers, the job has {need}"));
            }
        }
        Ok(())
    }

    /// Places the processes in the data centers the hostfile names (`labels`, one per process):
    /// numbered in the order of `wan_matrix`'s names if there is a matrix (the labels must be
    /// its first D names), else in sorted order.
    pub fn place_by_labels(&mut self, labels: &[String]) -> Result<()> {
        let bad = |k: &str, why: String| Err(PsError::Config(format!("geo.{k}: {why}")));
        if !self.dc_of.is_empty() {
            return bad(
                "dc_of",
                "is set, but the hostfile names each process's data center (--dc-by / --dc-hosts)".into(),
            );
        }
        let mut names: Vec<&String> = labels.iter().collect();
        names.sort();
        names.dedup();
        if let Some(m) = &self.wan_matrix {
            let first = &m.datacenters[..names.len().min(m.datacenters.len())];
            if let Some(l) = names.iter().find(|l| !first.contains(l)) {
                return bad(
                    "wan_matrix",
                    format!(
                        "the hostfile's {} data centers must be the matrix's first {} ({}); {l} is not",
                        names.len(),
                        names.len(),
                        first.join(", ")
                    ),
                );
            }
            names = first.iter().collect();
        }
        if self.datacenters > 1 && self.datacenters as usize != names.len() {
            return bad(
                "datacenters",
                format!("is {}, but the hostfile names {} data centers", self.datacenters, names.len()),
            );
        }
        self.dc_of = labels.iter().map(|l| names.iter().position(|n| *n == l).unwrap_or(0) as u32).collect();
        self.dc_labels = labels.to_vec();
        Ok(())
    }

    /// Number of data centers of a job of `n` processes.
    pub fn count(&self, n: usize) -> u32 {
        match self.dc_of.iter().max() {
            Some(&m) => m + 1,
            None => self.datacenters.min(n.max(1) as u32),
        }
    }

    /// The data center of process `p` of `n`.
    pub fn dc(&self, p: usize, n: usize) -> u32 {
        match self.dc_of.get(p) {
            Some(&d) => d,
            None => (p * self.count(n) as usize / n.max(1)) as u32,
        }
    }

    /// The emulated link from process `from` to process `to` of `n`, if it crosses data centers
    /// and a WAN is configured.
    pub fn link(&self, from: usize, to: usize, n: usize) -> Option<LinkShape> {
        let (a, b) = (self.dc(from, n) as usize, self.dc(to, n) as usize);
        if a == b {
            return None;
        }
        match &self.wan_matrix {
            Some(m) => Some(LinkShape::new(Some(m.mbps[a][b]), m.delay(a, b))),
            None if self.wan_mbps.is_some() || self.wan_delay_ms > 0.0 => {
                Some(LinkShape::new(self.wan_mbps, self.wan_delay_ms))
            }
            None => None,
        }
    }

    /// The slowest emulated link's megabits per second and the longest delay, if any is limited.
    pub fn slowest(&self) -> Option<(f64, f64)> {
        match &self.wan_matrix {
            Some(m) => Some(m.worst()),
            None => self.wan_mbps.map(|b| (b, self.wan_delay_ms)),
        }
    }

    /// True if traffic between processes `a` and `b` of `n` crosses data centers.
    pub fn crosses(&self, a: usize, b: usize, n: usize) -> bool {
        self.dc(a, n) != self.dc(b, n)
    }
}

/// Who serves what in a job: each process's data center and, per data center, its processes.
#[derive(Clone, Debug)]
pub struct Topology {
    dc: Vec<u32>,
    members: Vec<Vec<usize>>,
    asp: bool,
}

impl Topology {
    /// The topology of a job of `n` processes (`geo` checked with [`GeoConfig::validate_for`]).
    pub fn new(geo: &GeoConfig, n: usize) -> Self {
        let dc: Vec<u32> = (0..n).map(|p| geo.dc(p, n)).collect();
        let mut members = vec![Vec::new(); geo.count(n) as usize];
        for (p, &d) in dc.iter().enumerate() {
            members[d as usize].push(p);
        }
        let asp = geo.inter_dc == InterDc::Asp && members.len() > 1;
        Topology { dc, members, asp }
    }

    /// True if data centers keep their own model copies (ASP with more than one data center).
    pub fn is_asp(&self) -> bool {
        self.asp
    }

    /// The processes whose servers process `p`'s client uses: its data center's under ASP,
    /// every process otherwise. A row goes to entry `placement(row) mod len` of this list.
    pub fn servers_for(&self, p: usize) -> Vec<usize> {
        if self.asp {
            self.members[self.dc[p] as usize].clone()
        } else {
            (0..self.dc.len()).collect()
        }
    }

    /// Under ASP, the server holding row-slot `slot` (a placement hash) in each data center
    /// other than `p`'s: where `p`'s server sends its significant updates of that row.
    pub fn mirrors(&self, p: usize, slot: u64) -> impl Iterator<Item = usize> + '_ {
        let mine = self.dc[p] as usize;
        self.members
            .iter()
            .enumerate()
            .filter(move |(d, _)| *d != mine)
            .map(move |(_, m)| m[(slot % m.len() as u64) as usize])
    }

    /// Clocks by which another data center's updates may lag this one's in what a server
    /// serves: DS under ASP, 0 with one parameter server.
    pub fn mirror_lag(&self, geo: &GeoConfig) -> i64 {
        if self.asp {
            geo.mirror_clock_bound as i64
        } else {
            0
        }
    }

    /// True if process `p`'s server writes its table shards into checkpoints: under ASP only
    /// those of process 0's data center do (every data center's copy is the same model at a
    /// snapshot's clock, and one copy is all a resumed job needs).
    pub fn writes_shards(&self, p: usize) -> bool {
        !self.asp || self.dc[p] == self.dc[0]
    }

    /// Under ASP, every server of the other data centers (mirror clocks go to all of them).
    pub fn other_dcs(&self, p: usize) -> Vec<usize> {
        let mine = self.dc[p];
        (0..self.dc.len()).filter(|&q| self.dc[q] != mine).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_split_evenly_in_hostfile_order_or_as_listed() {
        let g = GeoConfig { datacenters: 2, ..Default::default() };
        assert_eq!((0..4).map(|p| g.dc(p, 4)).collect::<Vec<_>>(), [0, 0, 1, 1]);
        assert_eq!((0..5).map(|p| g.dc(p, 5)).collect::<Vec<_>>(), [0, 0, 0, 1, 1]);
        let g3 = GeoConfig { datacenters: 3, ..Default::default() };
        assert_eq!((0..3).map(|p| g3.dc(p, 3)).collect::<Vec<_>>(), [0, 1, 2]);
        let mut racks = GeoConfig::default();
        let labels: Vec<String> = ["/r2", "/r1", "/r2"].iter().map(|s| s.to_string()).collect();
        racks.place_by_labels(&labels).unwrap();
        assert_eq!(racks.dc_of, [1, 0, 1]);
        let m = WanMatrix {
            datacenters: vec!["/r2".into(), "/r1".into(), "/r3".into()],
            mbps: vec![vec![1.0; 3]; 3],
            delay_ms: vec![],
            source: None,
        };
        let mut by_matrix = GeoConfig { wan_matrix: Some(m), ..Default::default() };
        by_matrix.clone().place_by_labels(&labels).unwrap();
        let odd: Vec<String> = ["/r3", "/r1"].iter().map(|s| s.to_string()).collect();
        let e = by_matrix.clone().place_by_labels(&odd).unwrap_err().to_string();
        assert!(e.contains("geo.wan_matrix") && e.contains("/r3 is not"), "{e}");
        by_matrix.place_by_labels(&labels).unwrap();
        assert_eq!(by_matrix.dc_of, [0, 1, 0]);
        let e = GeoConfig { datacenters: 3, ..Default::default() }.place_by_labels(&labels).unwrap_err();
        assert!(e.to_string().contains("geo.datacenters"), "{e}");
        let listed = GeoConfig { dc_of: vec![1, 0, 1], ..Default::default() };
        assert_eq!((0..3).map(|p| listed.dc(p, 3)).collect::<Vec<_>>(), [1, 0, 1]);
        assert_eq!(listed.count(3), 2);
        assert!(listed.validate_for(3).is_ok());
    }

    #[test]
    fn only_links_between_data_centers_are_shaped() {
        let g = GeoConfig { datacenters: 2, wan_mbps: Some(100.0), wan_delay_ms: 10.0, ..Default::default() };
        assert_eq!(g.link(0, 1, 4), None, "same data center");
        let l = g.link(1, 2, 4).expect("crosses");
        assert_eq!(l.bytes_per_s, 12.5e6);
        assert_eq!(l.delay.as_millis(), 10);
        let unshaped = GeoConfig { datacenters: 2, ..Default::default() };
        assert_eq!(unshaped.link(0, 3, 4), None, "no WAN configured");
        assert!(unshaped.crosses(0, 3, 4));
    }

    /// The shipped model of Gaia's EC2 measurements keeps the paper's stated facts.
    #[test]
    fn the_shipped_ec2_matrix_keeps_the_papers_anchors() {
        let m: WanMatrix = serde_json::from_str(include_str!("../../scripts/wan/ec2-11-regions.json")).unwrap();
        m.validate().unwrap();
        assert_eq!(m.datacenters.len(), 11);
        let at = |a: &str, b: &str| {
            let i = |n: &str| m.datacenters.iter().position(|d| d == n).unwrap();
            (m.mbps[i(a)][i(b)], m.delay(i(a), i(b)))
        };
        let (worst, _) = m.worst();
        assert_eq!(worst, at("Singapore", "Sao Paulo").0, "the slowest pair");
        assert!((1000.0 / worst - 60.0).abs() < 0.5, "60x below a 1 Gbit/s LAN: {worst}");
        assert!((at("Oregon", "California").0 / worst - 12.0).abs() < 0.1, "close pairs 12x the distant");
        let d = m.datacenters.len();
        let mean = (0..d).flat_map(|i| (0..d).filter(move |&j| j != i).map(move |j| (i, j)));
        let mean = mean.map(|(i, j)| m.mbps[i][j]).sum::<f64>() / (d * (d - 1)) as f64;
        assert!((14.0..20.0).contains(&(1000.0 / mean)), "about 15x below the LAN on average: {mean}");
        assert!(at("Virginia", "California").1 > 20.0, "delays are one-way milliseconds");
    }

    fn matrix() -> WanMatrix {
        WanMatrix {
            datacenters: vec!["virginia".into(), "california".into(), "tokyo".into()],
            mbps: vec![vec![0.0, 100.0, 40.0], vec![90.0, 0.0, 50.0], vec![30.0, 60.0, 0.0]],
            delay_ms: vec![vec![0.0, 35.0, 70.0], vec![36.0, 0.0, 50.0], vec![71.0, 52.0, 0.0]],
            source: None,
        }
    }

    #[test]
    fn a_matrix_shapes_each_ordered_pair_of_data_centers() {
        let g = GeoConfig { datacenters: 3, wan_matrix: Some(matrix()), ..Default::default() };
        assert!(g.validate_for(3).is_ok());
        let l = g.link(2, 0, 3).expect("tokyo to virginia");
        assert_eq!((l.bytes_per_s, l.delay.as_millis()), (30e6 / 8.0, 71));
        let back = g.link(0, 2, 3).unwrap();
        assert_eq!((back.bytes_per_s, back.delay.as_millis()), (40e6 / 8.0, 70));
        assert_eq!(g.link(1, 1, 3), None);
        assert_eq!(g.slowest(), Some((30.0, 71.0)));
        // The first two entries serve a job of two data centers.
        let two = GeoConfig { datacenters: 2, ..g.clone() };
        assert!(two.validate_for(4).is_ok());
        assert_eq!(two.link(0, 3, 4).unwrap().delay.as_millis(), 35);
        let four = GeoConfig { datacenters: 4, ..g };
        assert!(four.validate_for(4).unwrap_err().to_string().contains("describes 3 data centers, the job has 4"));
    }

    #[test]
    fn bad_matrices_say_which_link_is_wrong() {
        let err =
            |m: WanMatrix| GeoConfig { wan_matrix: Some(m), ..Default::default() }.validate().unwrap_err().to_string();
        let mut m = matrix();
        m.mbps[1][2] = 0.0;
        assert!(err(m).contains("mbps from california to tokyo must be positive"));
        let mut m = matrix();
        m.delay_ms.pop();
        assert!(err(m).contains("must be 3 x 3"));
        let both = GeoConfig { wan_matrix: Some(matrix()), wan_mbps: Some(1.0), ..Default::default() };
        assert!(both.validate().unwrap_err().to_string().contains("give one or the other"));
    }

    #[test]
    fn asp_clients_use_their_own_data_center_and_mirror_to_the_others() {
        let geo = GeoConfig { dc_of: vec![0, 1, 0, 1, 1], inter_dc: InterDc::Asp, ..Default::default() };
        let t = Topology::new(&geo, 5);
        assert!(t.is_asp());
        assert_eq!(t.servers_for(2), vec![0, 2]);
        assert_eq!(t.servers_for(4), vec![1, 3, 4]);
        // Slot 4: entry 0 of data center 0's two servers, entry 1 of data center 1's three.
        assert_eq!(t.mirrors(0, 4).collect::<Vec<_>>(), vec![3]);
        assert_eq!(t.mirrors(3, 4).collect::<Vec<_>>(), vec![0]);
        assert_eq!(t.other_dcs(1), vec![0, 2]);
        let baseline = Topology::new(&GeoConfig { inter_dc: InterDc::Ssp, ..geo.clone() }, 5);
        assert!(!baseline.is_asp());
        assert_eq!(baseline.servers_for(2), vec![0, 1, 2, 3, 4]);
        let one_dc = Topology::new(&GeoConfig { inter_dc: InterDc::Asp, ..Default::default() }, 3);
        assert!(!one_dc.is_asp(), "one data center: nothing to mirror");
    }

    #[test]
    fn bad_settings_name_their_key() {
        let err = |g: GeoConfig, n: usize| g.validate_for(n).unwrap_err().to_string();
        assert!(err(GeoConfig { datacenters: 0, ..Default::default() }, 2).contains("geo.datacenters"));
        assert!(err(GeoConfig { datacenters: 3, ..Default::default() }, 2).contains("at least as many processes"));
        assert!(err(GeoConfig { dc_of: vec![0, 1], ..Default::default() }, 3).contains("geo.dc_of"));
        assert!(
            err(GeoConfig { dc_of: vec![0, 2, 2], ..Default::default() }, 3).contains("data center 1 has no process")
        );
        assert!(err(GeoConfig { wan_mbps: Some(0.0), ..Default::default() }, 1).contains("geo.wan_mbps"));
        assert!(err(GeoConfig { wan_delay_ms: -1.0, ..Default::default() }, 1).contains("geo.wan_delay_ms"));
        assert!(err(GeoConfig { significance: -0.1, ..Default::default() }, 1).contains("geo.significance"));
        assert!("lan".parse::<InterDc>().unwrap_err().to_string().contains("not one of"));
    }
}
