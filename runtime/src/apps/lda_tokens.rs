//! Token layouts for the word-major LDA sampler (`lda_sampler`): a block of documents' tokens
//! grouped by word, and per-document topic counts as short lists.
//!
//! Why word-major: a sweep that visits a word's tokens together reads the word's topic counts
//! once per block (one parameter-server `get`, one cache-resident row) instead of once per token,
//! and its updates leave as one batch per word. Documents are then visited out of order, so their
//! topic counts must be compact: a list of (topic, count) per document, at most min(K, length)
//! long, in one flat array.

use crate::error::{PsError, Result};
use std::ops::Range;

/// The tokens of documents `docs` whose words pass a filter (all words, or one slice of the
/// vocabulary), grouped by word (ascending), in document order within a word.
pub struct Block {
    pub docs: Range<usize>,
    /// Distinct words of the block, ascending.
    pub words: Vec<u32>,
    /// Tokens of `words[i]` are `starts[i]..starts[i + 1]`.
    pub starts: Vec<usize>,
    /// The document (worker-local index) of each token.
    pub doc: Vec<u32>,
    /// The topic of each token.
    pub z: Vec<u32>,
}

impl Block {
    /// Groups the tokens of `docs[range]` with `keep(word)` by word (a stable counting sort over
    /// the vocabulary).
    pub fn new(docs: &[Vec<u32>], range: Range<usize>, vocab: usize, keep: impl Fn(u32) -> bool) -> Self {
        let mut count = vec![0usize; vocab + 1];
        for d in &docs[range.clone()] {
            for &w in d {
                count[w as usize + 1] += 1;
            }
        }
        for w in 0..vocab {
            if !keep(w as u32) {
                count[w + 1] = 0;
            }
        }
        let words: Vec<u32> = (0..vocab).filter(|&w| count[w + 1] > 0).map(|w| w as u32).collect();
        for w in 0..vocab {
            count[w + 1] += count[w];
        }
        let mut starts: Vec<usize> = words.iter().map(|&w| count[w as usize]).collect();
        starts.push(count[vocab]);
        let mut doc = vec![0u32; count[vocab]];
        let mut b = Block { docs: range, words, starts, doc: Vec::new(), z: vec![0; count[vocab]] };
        b.for_each_in_doc_order(docs, vocab, |p, d, _| doc[p] = d as u32);
        b.doc = doc;
        b
    }

    /// Positions (in `doc` and `z`) of the tokens of `words[i]`.
    #[inline]
    pub fn of_word(&self, i: usize) -> Range<usize> {
        self.starts[i]..self.starts[i + 1]
    }

    /// Calls `f(position, doc, index)` for every token of the block in document order, with the
    /// token's position in the word-major layout and its index among all tokens of the block's
    /// documents (the block's words or not): the bridge to formats that list documents' tokens in
    /// order (initial assignments, saved state).
    fn for_each_in_doc_order(&self, docs: &[Vec<u32>], vocab: usize, mut f: impl FnMut(usize, usize, usize)) {
        const ABSENT: usize = usize::MAX;
        let mut next = vec![ABSENT; vocab];
        for (i, &w) in self.words.iter().enumerate() {
            next[w as usize] = self.starts[i];
        }
        let mut index = 0;
        for d in self.docs.clone() {
            for &w in &docs[d] {
                let p = &mut next[w as usize];
                if *p != ABSENT {
                    f(*p, d, index);
                    *p += 1;
                }
                index += 1;
            }
        }
    }

    /// Takes the topics from `z`, which lists those of all tokens of the block's documents in
    /// document order.
    pub fn set_doc_order(&mut self, docs: &[Vec<u32>], vocab: usize, z: &[u32]) -> Result<()> {
        let all: usize = docs[self.docs.clone()].iter().map(Vec::len).sum();
        if z.len() != all {
            return Err(PsError::codec(format!("lda: {} topic assignments for documents with {all} tokens", z.len())));
        }
        let mut topics = std::mem::take(&mut self.z);
        self.for_each_in_doc_order(docs, vocab, |p, _, i| topics[p] = z[i]);
        self.z = topics;
        Ok(())
    }

    /// Writes the block's topics into `out`, which lists all tokens of its documents in
    /// document order (the other words' entries are left alone).
    pub fn doc_order(&self, docs: &[Vec<u32>], vocab: usize, out: &mut [u32]) {
        self.for_each_in_doc_order(docs, vocab, |p, _, i| out[i] = self.z[p]);
    }
}

/// Topic counts of each document: (topic, count) pairs with count > 0, by topic. Sorted rather
/// than in arrival order so that the lists, and with them the sampler's draws, are a function of
/// the counts alone: a run resumed from a checkpoint then continues the same chain bit for bit.
pub struct DocTopics {
    off: Vec<usize>,
    len: Vec<u32>,
    entries: Vec<(u32, u32)>,
    /// Tokens per document.
    pub doc_len: Vec<u32>,
}

impl DocTopics {
    /// Empty counts for documents of the given lengths, `k` topics.
    pub fn new(doc_len: Vec<u32>, k: usize) -> Self {
        let mut off = Vec::with_capacity(doc_len.len() + 1);
        let mut total = 0usize;
        for &n in &doc_len {
            off.push(total);
            total += (n as usize).min(k);
        }
        off.push(total);
        DocTopics { len: vec![0; doc_len.len()], off, entries: vec![(0, 0); total], doc_len }
    }

    /// Counts every token of the block.
    pub fn count(&mut self, b: &Block) {
        for (&d, &t) in b.doc.iter().zip(&b.z) {
            self.inc(d as usize, t);
        }
    }

    #[inline]
    pub fn topics(&self, d: usize) -> &[(u32, u32)] {
        &self.entries[self.off[d]..self.off[d] + self.len[d] as usize]
    }

    #[inline]
    pub fn inc(&mut self, d: usize, t: u32) {
        let (start, n) = (self.off[d], self.len[d] as usize);
        let list = &mut self.entries[start..start + n];
        let at = list.partition_point(|e| e.0 < t);
        if at < n && list[at].0 == t {
            list[at].1 += 1;
        } else {
            // Room is guaranteed: a document has at most min(K, length) distinct topics.
            self.entries.copy_within(start + at..start + n, start + at + 1);
            self.entries[start + at] = (t, 1);
            self.len[d] += 1;
        }
    }

    /// Asks the CPU to start loading document `d`'s list. A word-major sweep visits documents in
    /// an order the hardware prefetcher cannot guess, and waiting for a list from the L3 cache
    /// took 40% of a sweep; the sweep calls this a few tokens ahead.
    #[inline]
    pub fn prefetch(&self, d: usize) {
        #[cfg(target_arch = "x86_64")]
        if let (Some(&o), Some(&n)) = (self.off.get(d), self.len.get(d)) {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            // One hint per 64-byte line of the list.
            for e in self.entries[o..o + n as usize].iter().step_by(8) {
                // SAFETY: a prefetch is a hint; it never faults and does not change memory.
                unsafe { _mm_prefetch::<_MM_HINT_T0>((e as *const (u32, u32)).cast()) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = d;
    }

    /// Adds one token to entry `e` of document `d`.
    #[inline]
    pub fn bump(&mut self, d: usize, e: usize) {
        self.entries[self.off[d] + e].1 += 1;
    }

    /// Removes one token from entry `e` of document `d`; an entry that reaches zero is removed.
    #[inline]
    pub fn drop_one(&mut self, d: usize, e: usize) {
        let (start, n) = (self.off[d], self.len[d] as usize);
        let list = &mut self.entries[start..start + n];
        list[e].1 -= 1;
        if list[e].1 == 0 {
            list.copy_within(e + 1.., e);
            self.len[d] -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_group_by_word_and_round_trip_document_order() {
        let docs = vec![vec![3, 1, 3], vec![0, 1], vec![2, 2, 0, 4]];
        let mut b = Block::new(&docs, 0..2, 5, |_| true);
        assert_eq!(b.words, vec![0, 1, 3]);
        assert_eq!(b.of_word(2), 3..5);
        // Word 1 occurs in document 0 before document 1: stable.
        assert_eq!(b.doc, vec![1, 0, 1, 0, 0]);
        let z: Vec<u32> = vec![10, 11, 12, 13, 14];
        b.set_doc_order(&docs, 5, &z).unwrap();
        assert_eq!(b.z, vec![13, 11, 14, 10, 12]);
        let mut back = vec![0; 5];
        b.doc_order(&docs, 5, &mut back);
        assert_eq!(back, z);
        assert!(b.set_doc_order(&docs, 5, &z[..4]).is_err());
    }

    #[test]
    fn word_slices_of_a_block_partition_its_tokens() {
        let docs = vec![vec![3, 1, 3], vec![0, 1], vec![2, 2, 0, 4]];
        let z: Vec<u32> = (0..9).map(|i| 20 + i).collect();
        let mut back = vec![0; 9];
        for odd in [false, true] {
            let mut b = Block::new(&docs, 0..3, 5, |w| (w % 2 == 1) == odd);
            assert!(b.words.iter().all(|w| (w % 2 == 1) == odd));
            b.set_doc_order(&docs, 5, &z).unwrap();
            b.doc_order(&docs, 5, &mut back);
        }
        // Each token's topic went into exactly one slice and came back to its place.
        assert_eq!(back, z);
        let odd = Block::new(&docs, 0..3, 5, |w| w % 2 == 1);
        assert_eq!((odd.words.clone(), odd.doc.clone()), (vec![1, 3], vec![0, 1, 0, 0]));
    }

    #[test]
    fn doc_topics_count_and_forget() {
        let mut dt = DocTopics::new(vec![3, 1], 2);
        for t in [1, 0, 1] {
            dt.inc(0, t);
        }
        dt.inc(1, 1);
        assert_eq!(dt.topics(0), &[(0, 1), (1, 2)]);
        dt.drop_one(0, 0);
        assert_eq!(dt.topics(0), &[(1, 2)]);
        dt.drop_one(0, 0);
        dt.inc(0, 0);
        dt.bump(1, 0);
        assert_eq!(dt.topics(0), &[(0, 1), (1, 1)]);
        assert_eq!(dt.topics(1), &[(1, 2)]);
    }
}
