//! Token layouts for the word-major LDA sampler (`lda_sampler`): a block of documents' tokens
//! grouped by word, and per-document topic counts as short lists.
//!
//! Why word-major: a sweep that visits a word's tokens together reads the word's topic counts
//! once per block (one parameter-server `get`, one cache-resident row) instead of once per token,
//! and its updates leave as one batch per word. Documents are then visited out of order, so their
//! topic counts must be compact: a list of (topic, count) per document, at most min(K, length)
//! long, in one flat array; or, for small K and long documents, a u16 count per topic. Also the
//! layout of the topic assignments a checkpoint saves (`token_offsets`, `unpack_assignments`).

use ps_runtime::prefetch;
use ps_runtime::{PsError, Result};
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
        let mut one = Block::split(docs, range, vocab, 1, |w| keep(w).then_some(0));
        one.pop().expect("one block")
    }

    /// The `count` blocks of `docs[range]`: word `w`'s tokens go to block `block_of(w)` (none
    /// where `None`), grouped by word, all in one pass over the tokens. Built block by block, a
    /// worker scanned its tokens (and cleared two vocabulary-sized arrays) once per block, and
    /// it has a block per slice and sub-slice of the rotating schedule: load work that grew
    /// with the processes and threads of the job.
    pub fn split(
        docs: &[Vec<u32>],
        range: Range<usize>,
        vocab: usize,
        count: usize,
        block_of: impl Fn(u32) -> Option<usize>,
    ) -> Vec<Block> {
        let mut tokens = vec![0usize; vocab];
        for d in &docs[range.clone()] {
            for &w in d {
                tokens[w as usize] += 1;
            }
        }
        let mut blocks: Vec<Block> = (0..count)
            .map(|_| Block { docs: range.clone(), words: Vec::new(), starts: vec![0], doc: Vec::new(), z: Vec::new() })
            .collect();
        for (w, &n) in tokens.iter().enumerate().filter(|(_, &n)| n > 0) {
            if let Some(b) = block_of(w as u32).and_then(|b| blocks.get_mut(b)) {
                let end = b.starts.last().copied().unwrap_or(0) + n;
                b.words.push(w as u32);
                b.starts.push(end);
            }
        }
        let mut order = DocOrder::new(&blocks, vocab);
        for b in &mut blocks {
            let n = b.starts.last().copied().unwrap_or(0);
            (b.doc, b.z) = (vec![0; n], vec![0; n]);
        }
        order.walk(docs, range, |b, p, d, _| blocks[b].doc[p] = d as u32);
        blocks
    }

    /// Positions (in `doc` and `z`) of the tokens of `words[i]`.
    #[inline]
    pub fn of_word(&self, i: usize) -> Range<usize> {
        self.starts[i]..self.starts[i + 1]
    }

    /// Takes the topics from `z`, which lists those of all tokens of the block's documents in
    /// document order.
    pub fn set_doc_order(&mut self, docs: &[Vec<u32>], vocab: usize, z: &[u32]) -> Result<()> {
        set_doc_order(std::slice::from_mut(self), docs, vocab, z)
    }
}

/// Takes the topics of `blocks` (of the same documents, no word in two of them) from `z`, which
/// lists those of all tokens of their documents in document order: one pass over the tokens.
pub fn set_doc_order(blocks: &mut [Block], docs: &[Vec<u32>], vocab: usize, z: &[u32]) -> Result<()> {
    let Some(range) = blocks.first().map(|b| b.docs.clone()) else { return Ok(()) };
    let all: usize = docs[range.clone()].iter().map(Vec::len).sum();
    if z.len() != all {
        return Err(PsError::codec(format!("lda: {} topic assignments for documents with {all} tokens", z.len())));
    }
    DocOrder::new(blocks, vocab).walk(docs, range, |b, p, _, i| blocks[b].z[p] = z[i]);
    Ok(())
}

/// Writes the topics of `blocks` (of the same documents) into `out`, which lists all tokens of
/// their documents in document order (the other words' entries are left alone).
pub fn doc_order(blocks: &[Block], docs: &[Vec<u32>], vocab: usize, out: &mut [u32]) {
    let Some(range) = blocks.first().map(|b| b.docs.clone()) else { return };
    DocOrder::new(blocks, vocab).walk(docs, range, |b, p, _, i| out[i] = blocks[b].z[p]);
}

/// The bridge between the word-major layout of blocks of the same documents and formats that
/// list the documents' tokens in order (initial assignments, saved state): for each word, its
/// block and the position of its next token there.
struct DocOrder {
    block: Vec<u32>,
    next: Vec<usize>,
}

impl DocOrder {
    const NONE: u32 = u32::MAX;

    fn new(blocks: &[Block], vocab: usize) -> Self {
        let mut o = DocOrder { block: vec![Self::NONE; vocab], next: vec![0; vocab] };
        for (b, blk) in blocks.iter().enumerate() {
            debug_assert!(blk.docs == blocks[0].docs, "blocks of different documents");
            for (i, &w) in blk.words.iter().enumerate() {
                o.block[w as usize] = b as u32;
                o.next[w as usize] = blk.starts[i];
            }
        }
        o
    }

    /// Calls `f(block, position, doc, index)` for every token of the blocks in document order,
    /// with its block, its position there and its index among all tokens of the documents.
    fn walk(&mut self, docs: &[Vec<u32>], range: Range<usize>, mut f: impl FnMut(usize, usize, usize, usize)) {
        let mut index = 0;
        for d in range {
            for &w in &docs[d] {
                let b = self.block[w as usize];
                if b != Self::NONE {
                    let p = &mut self.next[w as usize];
                    f(b as usize, *p, d, index);
                    *p += 1;
                }
                index += 1;
            }
        }
    }
}

/// Topic counts of each document, in one of two layouts chosen by `LayoutKind::for_docs`.
pub struct DocTopics {
    /// Tokens per document.
    pub doc_len: Vec<u32>,
    pub layout: Layout,
}

/// How documents' topic counts are stored.
pub enum Layout {
    /// (topic, count) lists: memory and a draw's work follow the document's distinct topics.
    Lists(TopicLists),
    /// A count per topic: a draw costs K multiply-adds, which SIMD does faster than the list
    /// walk once documents use a good share of the topics.
    Dense(DenseCounts),
}

impl Default for Layout {
    fn default() -> Self {
        Layout::Lists(TopicLists::default())
    }
}

/// Which layout `DocTopics::new` builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutKind {
    Lists,
    Dense,
}

impl LayoutKind {
    /// Dense for small K (at most `DENSE_MAX_K`: a document's counts are then at most eight cache
    /// lines, and a draw 32 vector operations) when documents are on average at least K/4 tokens
    /// long, so that a dense row takes no more memory than a full list (8 bytes an entry) and most
    /// of its topics are in use; and when every document fits u16 counts. Otherwise lists.
    pub fn for_docs(doc_len: &[u32], k: usize) -> Self {
        let tokens: u64 = doc_len.iter().map(|&n| n as u64).sum();
        let fits = doc_len.iter().all(|&n| n <= u16::MAX as u32);
        if k <= DENSE_MAX_K && fits && tokens * 4 >= (k * doc_len.len()) as u64 {
            LayoutKind::Dense
        } else {
            LayoutKind::Lists
        }
    }
}

/// The largest K stored densely.
pub const DENSE_MAX_K: usize = 256;

/// Dense rows are padded to a multiple of this many topics (the sampler's chunk; padding counts
/// stay zero and their coefficients are zero, so they are never drawn).
pub const DENSE_CHUNK: usize = 8;

impl DocTopics {
    /// Empty counts for documents of the given lengths, `k` topics.
    pub fn new(doc_len: Vec<u32>, k: usize, kind: LayoutKind) -> Self {
        let layout = match kind {
            LayoutKind::Lists => Layout::Lists(TopicLists::new(&doc_len, k)),
            LayoutKind::Dense => Layout::Dense(DenseCounts::new(doc_len.len(), k)),
        };
        DocTopics { doc_len, layout }
    }

    /// Counts every token of the block.
    pub fn count(&mut self, b: &Block) {
        for (&d, &t) in b.doc.iter().zip(&b.z) {
            match &mut self.layout {
                Layout::Lists(l) => l.inc(d as usize, t),
                Layout::Dense(c) => c.row_mut(d as usize)[t as usize] += 1,
            }
        }
    }

    /// Document `d`'s count of every topic (`out`: one entry per topic).
    pub fn dense(&self, d: usize, out: &mut [u32]) {
        out.fill(0);
        match &self.layout {
            Layout::Lists(l) => l.topics(d).iter().for_each(|&(t, n)| out[t as usize] = n),
            Layout::Dense(c) => out.iter_mut().zip(c.row(d)).for_each(|(o, &n)| *o = n as u32),
        }
    }

    /// Calls `f` with each non-zero count of document `d`.
    pub fn for_each_count(&self, d: usize, mut f: impl FnMut(u32)) {
        match &self.layout {
            Layout::Lists(l) => l.topics(d).iter().for_each(|&(_, n)| f(n)),
            Layout::Dense(c) => c.row(d).iter().filter(|&&n| n > 0).for_each(|&n| f(n as u32)),
        }
    }
}

/// Dense counts: `stride` u16 per document, topics `0..k` then zero padding.
#[derive(Default)]
pub struct DenseCounts {
    pub stride: usize,
    counts: Vec<u16>,
}

impl DenseCounts {
    fn new(docs: usize, k: usize) -> Self {
        let stride = k.div_ceil(DENSE_CHUNK) * DENSE_CHUNK;
        DenseCounts { stride, counts: vec![0; docs * stride] }
    }

    #[inline]
    pub fn row(&self, d: usize) -> &[u16] {
        &self.counts[d * self.stride..(d + 1) * self.stride]
    }

    #[inline]
    pub fn row_mut(&mut self, d: usize) -> &mut [u16] {
        &mut self.counts[d * self.stride..(d + 1) * self.stride]
    }

    #[inline]
    pub fn prefetch(&self, d: usize) {
        if let Some(row) = self.counts.get(d * self.stride..(d + 1) * self.stride) {
            prefetch(row);
        }
    }
}

/// (topic, count) pairs with count > 0, by topic, per document, in one flat array with room for
/// min(K, length) entries each. Sorted rather than in arrival order so that the lists, and with
/// them the sampler's draws, are a function of the counts alone: a run resumed from a checkpoint
/// then continues the same chain bit for bit.
#[derive(Default)]
pub struct TopicLists {
    off: Vec<usize>,
    len: Vec<u32>,
    entries: Vec<(u32, u32)>,
}

impl TopicLists {
    fn new(doc_len: &[u32], k: usize) -> Self {
        let mut off = Vec::with_capacity(doc_len.len() + 1);
        let mut total = 0usize;
        for &n in doc_len {
            off.push(total);
            total += (n as usize).min(k);
        }
        off.push(total);
        TopicLists { len: vec![0; doc_len.len()], off, entries: vec![(0, 0); total] }
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

    #[inline]
    pub fn prefetch(&self, d: usize) {
        if let (Some(&o), Some(&n)) = (self.off.get(d), self.len.get(d)) {
            if let Some(list) = self.entries.get(o..o + n as usize) {
                prefetch(list);
            }
        }
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

/// Index of each document's first token among all tokens of `docs` (and the total at the end).
pub fn token_offsets(docs: &[Vec<u32>]) -> Vec<usize> {
    let mut first = Vec::with_capacity(docs.len() + 1);
    first.push(0);
    for d in docs {
        first.push(first.last().copied().unwrap_or(0) + d.len());
    }
    first
}

/// Reads topic assignments from a saved state (one u32 per token, documents in order).
pub fn unpack_assignments(raw: &[u8], tokens: usize, k: usize) -> Result<Vec<u32>> {
    if raw.len() != tokens * 4 {
        return Err(PsError::codec(format!(
            "lda: saved state has {} assignments, this worker's documents have {tokens} tokens",
            raw.len() / 4
        )));
    }
    let z: Vec<u32> = raw.chunks_exact(4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes"))).collect();
    if z.iter().any(|&t| t as usize >= k) {
        return Err(PsError::codec(format!("lda: saved state has a topic >= {k}")));
    }
    Ok(z)
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
        doc_order(std::slice::from_ref(&b), &docs, 5, &mut back);
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
            doc_order(std::slice::from_ref(&b), &docs, 5, &mut back);
        }
        // Each token's topic went into exactly one slice and came back to its place.
        assert_eq!(back, z);
        let odd = Block::new(&docs, 0..3, 5, |w| w % 2 == 1);
        assert_eq!((odd.words.clone(), odd.doc.clone()), (vec![1, 3], vec![0, 1, 0, 0]));
    }

    /// The blocks of one pass over the tokens are those built one by one with a filter, and
    /// their topics go to and come back from document order together.
    #[test]
    fn split_blocks_are_the_filtered_blocks() {
        let docs = vec![vec![3, 1, 3, 6], vec![0, 1], vec![2, 2, 0, 4, 5], vec![6]];
        let of = |w: u32| (w != 5).then_some((w as usize * 7) % 3);
        let split = Block::split(&docs, 1..4, 7, 3, of);
        assert_eq!(split.len(), 3);
        for (k, b) in split.iter().enumerate() {
            let one = Block::new(&docs, 1..4, 7, |w| of(w) == Some(k));
            assert_eq!((&b.words, &b.starts, &b.doc, &b.docs), (&one.words, &one.starts, &one.doc, &one.docs));
        }
        let mut split = split;
        let z: Vec<u32> = (0..8).map(|i| 30 + i).collect();
        set_doc_order(&mut split, &docs, 7, &z).unwrap();
        let mut back = vec![0; 8];
        doc_order(&split, &docs, 7, &mut back);
        // Word 5 (token 6 of the documents) is in no block: its entry is left alone.
        assert_eq!(back, vec![30, 31, 32, 33, 34, 35, 0, 37]);
        assert!(set_doc_order(&mut split, &docs, 7, &z[..7]).is_err());
    }

    #[test]
    fn doc_topics_count_and_forget() {
        let mut dt = TopicLists::new(&[3, 1], 2);
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
