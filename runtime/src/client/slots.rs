//! The thread cache's map from row id to entry. Row ids of most models are small and dense (items,
//! words, rank blocks), so ids below a bound live in a plain array indexed by id and the rest in a
//! hash map. The array is what lets a loop that knows its next rows start loading them
//! ([`Slots::prefetch`]): a slot's address is known without reading anything, where a hash
//! lookup must first compare the key in the bucket, which waits for memory exactly as the read
//! itself would.

use rustc_hash::FxHashMap;

/// Entries by row id: `dense[id]` for ids below `dense.len()`, `sparse` for the others.
pub(crate) struct Slots<E> {
    dense: Vec<Option<E>>,
    sparse: FxHashMap<u64, E>,
    len: usize,
}

impl<E> Default for Slots<E> {
    fn default() -> Self {
        Slots { dense: Vec::new(), sparse: FxHashMap::default(), len: 0 }
    }
}

impl<E> Slots<E> {
    /// The array covers ids up to this many slots per entry (plus a minimum), so a table whose
    /// ids are sparse keeps its entries in the hash map instead of a mostly empty array.
    const SLOTS_PER_ENTRY: usize = 4;
    const MIN_SLOTS: usize = 4096;
    /// Largest array, in slots (entries are some 150 bytes).
    const MAX_SLOTS: usize = 1 << 22;

    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn get(&self, row: u64) -> Option<&E> {
        match self.dense.get(row as usize) {
            Some(slot) => slot.as_ref(),
            None => self.sparse.get(&row),
        }
    }

    #[inline]
    pub fn get_mut(&mut self, row: u64) -> Option<&mut E> {
        match self.dense.get_mut(row as usize) {
            Some(slot) => slot.as_mut(),
            None => self.sparse.get_mut(&row),
        }
    }

    /// The entry of `row`, created by `new` if there is none.
    #[inline]
    pub fn get_or_insert_with(&mut self, row: u64, new: impl FnOnce() -> E) -> &mut E {
        // Ids beyond the bound go straight to the hash map (one lookup, as before the array).
        let r = row as usize;
        if r >= self.dense.len() && r < self.bound() && !self.sparse.contains_key(&row) {
            self.grow_for(row);
        }
        if (row as usize) < self.dense.len() {
            let slot = &mut self.dense[row as usize];
            if slot.is_none() {
                self.len += 1;
            }
            return slot.get_or_insert_with(new);
        }
        let len = &mut self.len;
        self.sparse.entry(row).or_insert_with(|| {
            *len += 1;
            new()
        })
    }

    /// How far the array may reach with one entry more.
    fn bound(&self) -> usize {
        (Self::SLOTS_PER_ENTRY * (self.len + 1)).clamp(Self::MIN_SLOTS, Self::MAX_SLOTS)
    }

    /// Before `row` (below [`Slots::bound`]) is added: extends the array over it, moving the
    /// hash map's entries it then covers.
    fn grow_for(&mut self, row: u64) {
        let bound = self.bound();
        let want = (row as usize + 1).max(2 * self.dense.len()).min(bound);
        self.dense.resize_with(want, || None);
        if !self.sparse.is_empty() {
            let moved: Vec<u64> = self.sparse.keys().copied().filter(|&k| (k as usize) < want).collect();
            for k in moved {
                self.dense[k as usize] = self.sparse.remove(&k);
            }
        }
    }

    /// Keeps the entries for which `keep` is true.
    pub fn retain(&mut self, mut keep: impl FnMut(&mut E) -> bool) {
        let mut len = 0;
        for slot in &mut self.dense {
            if slot.as_mut().is_some_and(|e| !keep(e)) {
                *slot = None;
            }
            len += slot.is_some() as usize;
        }
        self.sparse.retain(|_, e| keep(e));
        self.len = len + self.sparse.len();
    }

    /// Every entry, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &E> {
        self.dense.iter().flatten().chain(self.sparse.values())
    }

    pub fn clear(&mut self) {
        self.dense.clear();
        self.sparse.clear();
        self.len = 0;
    }

    /// Starts loading the slot of `row` into the CPU cache, if it is in the array (a hint: no
    /// read, no effect).
    #[inline]
    pub fn prefetch(&self, row: u64) {
        if let Some(slot) = self.dense.get(row as usize) {
            crate::row::prefetch(std::slice::from_ref(slot));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Against a map: inserts in any order, dense and sparse ids, retain and clear.
    #[test]
    fn behaves_as_a_map() {
        let mut s = Slots::<u64>::default();
        let mut m = BTreeMap::new();
        let mut x = 7u64;
        for i in 0..20_000u64 {
            x = crate::hash::mix64(x);
            // Mostly small ids, some huge ones, some repeats.
            let row = match i % 10 {
                0 => x,
                1 => i / 3,
                _ => x % 30_000,
            };
            let v = s.get_or_insert_with(row, || row.wrapping_mul(2));
            let want = m.entry(row).or_insert(row.wrapping_mul(2));
            assert_eq!(*v, *want);
            *v = v.wrapping_add(1);
            *want = want.wrapping_add(1);
            assert_eq!(s.len(), m.len());
            s.prefetch(row);
        }
        assert!(s.dense.len() >= 30_000, "small ids end up in the array ({} slots)", s.dense.len());
        for (&k, &v) in &m {
            assert_eq!(s.get(k), Some(&v));
        }
        assert_eq!(s.get(u64::MAX), None);
        s.retain(|v| *v % 2 == 0);
        m.retain(|_, v| *v % 2 == 0);
        assert_eq!(s.len(), m.len());
        for (&k, v) in &m {
            assert_eq!(s.get_mut(k), Some(&mut v.clone()));
        }
        s.clear();
        assert_eq!((s.len(), s.get(1)), (0, None));
    }

    #[test]
    fn sparse_ids_stay_out_of_the_array() {
        let mut s = Slots::<u8>::default();
        for i in 1..=100u64 {
            s.get_or_insert_with(i << 32, || 1);
        }
        assert!(s.dense.is_empty());
        assert_eq!(s.len(), 100);
    }
}
