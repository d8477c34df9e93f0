//! Which tokens each clock of the LDA app samples.
//!
//! `docs` (data parallel): each clock takes 1/C of the worker's documents with all their words.
//! Every worker then changes nearly every word's counts in every clock, so each reads counts that
//! miss the others' changes of the last `s + 1` clocks, and every changed row travels to every
//! process each clock.
//!
//! `words` (model parallel, as Petuum's and LightLDA's LDA): the vocabulary is cut into
//! `S = workers x (s + 1)` slices and worker `w` samples, at clock `c`, only tokens of slice
//! `(w (s + 1) + c) mod S`. Another worker had that slice `s + 1` or more clocks earlier, so
//! under a staleness bound `s` a worker reads its slice's word counts with every other worker's
//! changes in them: the word counts it samples from are exact, only the topic totals are stale.
//! A slice's rows change once per pass instead of once per clock, so a pass ships a `C`th of the
//! rows. It needs the clocks per pass `C` to be a multiple of `S` (each clock then also takes
//! `S / C` of the documents).

use crate::error::{PsError, Result};
use crate::hash::mix64;
use std::ops::Range;

/// `--schedule`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// `words` when the clocks per pass allow it, else `docs`.
    Auto,
    /// Rotate slices of the vocabulary among the workers.
    Words,
    /// Every clock takes a part of the documents and all their words.
    Docs,
}

/// The blocks of a worker (document part x vocabulary slice) and which one each clock samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Vocabulary slices (1: all words).
    pub slices: usize,
    /// Clocks between two workers' turns at a slice: staleness + 1.
    group: usize,
    /// Document parts per pass.
    pub parts: usize,
    cpp: usize,
}

impl Plan {
    /// The plan for `workers` workers (threads of the job), the word table's staleness bound
    /// (`None`: unbounded) and `cpp` clocks per pass.
    pub fn new(schedule: Schedule, workers: usize, staleness: Option<i64>, cpp: i64) -> Result<Plan> {
        let cpp = cpp.max(1) as usize;
        let docs = Plan { slices: 1, group: 1, parts: cpp, cpp };
        let Some(s) = staleness else {
            return match schedule {
                Schedule::Words => Err(PsError::Config(
                    "lda: --schedule words needs a staleness bound (not --consistency async)".into(),
                )),
                _ => Ok(docs),
            };
        };
        let group = s.max(0) as usize + 1;
        let slices = workers.max(1) * group;
        match schedule {
            Schedule::Docs => Ok(docs),
            _ if cpp.is_multiple_of(slices) => Ok(Plan { slices, group, parts: cpp / slices, cpp }),
            Schedule::Auto => Ok(docs),
            Schedule::Words => Err(PsError::Config(format!(
                "lda: --schedule words needs --clocks-per-pass to be a multiple of workers x (staleness + 1) \
                 = {workers} x {group} = {slices} (it is {cpp}); or use --schedule docs"
            ))),
        }
    }

    pub fn rotates(&self) -> bool {
        self.slices > 1
    }

    /// The slice of word `w`: spread by hash, so that frequent words do not gather in one slice.
    pub fn slice_of(&self, w: u32) -> usize {
        (mix64(w as u64) % self.slices as u64) as usize
    }

    /// Number of blocks: parts x slices; block `part * slices + slice`.
    pub fn blocks(&self) -> usize {
        self.parts * self.slices
    }

    /// Documents of part `p` of `n`.
    pub fn part_docs(&self, p: usize, n: usize) -> Range<usize> {
        let per = n.div_ceil(self.parts);
        (p * per).min(n)..((p + 1) * per).min(n)
    }

    /// The block worker `gid` samples at `clock`.
    pub fn block_at(&self, gid: usize, clock: i64) -> usize {
        let c = clock.rem_euclid(self.cpp as i64) as usize;
        let slice = (gid * self.group + c) % self.slices;
        (c / self.slices) * self.slices + slice
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two properties the words schedule rests on, for several job shapes: in a pass each
    /// worker samples each of its blocks once, and no other worker had a worker's slice within
    /// the last `s` clocks (so the staleness bound makes its reads of the slice exact).
    #[test]
    fn each_block_once_per_pass_and_no_slice_shared_within_the_staleness() {
        for (workers, s, cpp) in [(1, 0, 1), (2, 1, 4), (2, 1, 8), (3, 0, 6), (4, 2, 12), (2, 0, 2)] {
            let p = Plan::new(Schedule::Words, workers, Some(s), cpp).unwrap();
            assert_eq!(p.slices, workers * (s as usize + 1));
            let slice = |gid, c| p.block_at(gid, c) % p.slices;
            for gid in 0..workers {
                for pass in 0..3 {
                    let mut seen: Vec<usize> = (0..cpp).map(|c| p.block_at(gid, pass * cpp + c)).collect();
                    seen.sort_unstable();
                    assert_eq!(seen, (0..p.blocks()).collect::<Vec<_>>(), "{workers} {s} {cpp}");
                }
                for c in 0..3 * cpp {
                    for other in (0..workers).filter(|&o| o != gid) {
                        for back in 0..=s.min(c) {
                            assert_ne!(slice(gid, c), slice(other, c - back), "{workers} {s} {cpp} c{c}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn auto_falls_back_to_documents_and_words_says_why_not() {
        let docs = Plan::new(Schedule::Auto, 4, Some(1), 4).unwrap();
        assert!(!docs.rotates());
        assert_eq!((docs.blocks(), docs.block_at(3, 6)), (4, 2));
        assert!(Plan::new(Schedule::Auto, 2, Some(1), 4).unwrap().rotates());
        assert!(!Plan::new(Schedule::Auto, 2, None, 4).unwrap().rotates());
        let e = Plan::new(Schedule::Words, 4, Some(1), 4).unwrap_err().to_string();
        assert!(e.contains("--clocks-per-pass") && e.contains("= 8"), "{e}");
        assert!(Plan::new(Schedule::Words, 2, None, 4).is_err());
        assert_eq!(docs.part_docs(3, 10), 9..10);
    }
}
