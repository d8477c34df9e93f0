//! Ids as people have them: strings, 64-bit or negative numbers. The tables of the parameter
//! server are indexed by dense `u32` ids, so an id column is read as `u32` values as long as
//! every id fits (the common case costs nothing), and from the first id that does not, as local
//! indexes into this worker's distinct keys. `ps_apps::dictionary` then numbers the keys job-wide
//! and maps the ids back on output.

use super::table::Cell;
use crate::error::{PsError, Result};
use rustc_hash::FxHashMap;

/// One id as the input has it. Ints order before strings; ints by value, strings by bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    Int(i64),
    Str(Box<str>),
}

impl Key {
    /// The key of a cell (`what` names it in the message). A text cell holding an integer is
    /// that integer, so `7` in a CSV and 7 in a Parquet int64 column are the same id.
    pub fn from_cell(cell: &Cell, what: &str) -> std::result::Result<Key, String> {
        match *cell {
            Cell::Int(i) => Ok(Key::Int(i)),
            Cell::Float(f) => Err(format!("{what} {f} is a floating-point number, not an id")),
            Cell::Str(s) => {
                let s = s.trim();
                if s.is_empty() {
                    return Err(format!("{what} is empty"));
                }
                Ok(s.parse::<i64>().map(Key::Int).unwrap_or_else(|_| Key::Str(s.into())))
            }
        }
    }

    /// Appends the key's wire form: a tag byte, then 8 bytes of an int or a u32 length and the
    /// bytes of a string.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Key::Int(i) => {
                out.push(0);
                out.extend_from_slice(&i.to_le_bytes());
            }
            Key::Str(s) => {
                out.push(1);
                out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
        }
    }

    /// Reads one key's wire form from the front of `buf`.
    pub fn decode(buf: &mut &[u8]) -> Result<Key> {
        let short = || PsError::codec("a key's wire form is cut short");
        let (&tag, rest) = buf.split_first().ok_or_else(short)?;
        let (key, rest) = match tag {
            0 => {
                let (b, rest) = rest.split_first_chunk::<8>().ok_or_else(short)?;
                (Key::Int(i64::from_le_bytes(*b)), rest)
            }
            1 => {
                let (n, rest) = rest.split_first_chunk::<4>().ok_or_else(short)?;
                let n = u32::from_le_bytes(*n) as usize;
                let bytes = rest.get(..n).ok_or_else(short)?;
                let s = std::str::from_utf8(bytes).map_err(|_| PsError::codec("a string key is not UTF-8"))?;
                (Key::Str(s.into()), &rest[n..])
            }
            t => return Err(PsError::codec(format!("unknown key tag {t}"))),
        };
        *buf = rest;
        Ok(key)
    }

    /// Decodes every key of `buf`.
    pub fn decode_all(mut buf: &[u8]) -> Result<Vec<Key>> {
        let mut keys = Vec::new();
        while !buf.is_empty() {
            keys.push(Key::decode(&mut buf)?);
        }
        Ok(keys)
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Key::Int(i) => write!(f, "{i}"),
            Key::Str(s) => f.write_str(s),
        }
    }
}

/// Hands every stored value of an id column to the closure it is given (the column's values
/// live in the app's own records).
pub type VisitIds<'a> = &'a mut dyn FnMut(&mut dyn FnMut(&mut u32));

/// One id column while it is read: `u32` ids as long as every id fits, local indexes into this
/// worker's distinct keys after that.
#[derive(Default)]
pub struct KeyColumn {
    map: Option<Interner>,
}

/// Local indexes of the distinct keys. Strings live in one arena and are found by their hash,
/// so a key already seen costs a lookup and a comparison, with no allocation and no pointer per
/// key. What is left is cache misses (the table, then the arena): at 20M ratings a Parquet table
/// of string ids loads about 7x slower than one of ids read as they are (`results/bench-ids.csv`).
#[derive(Default)]
struct Interner {
    ints: FxHashMap<i64, u32>,
    strs: Strings,
}

/// Distinct strings with their local indexes.
#[derive(Default)]
struct Strings {
    /// The strings by hash, short ones inline: a lookup of one of 20M ids in random order then
    /// touches the table only, not also an array of string ends, one of bytes and one of local
    /// indexes (a cache miss each; lookups were 44% of a string-id load's CPU).
    index: hashbrown::HashTable<Slot>,
    /// The strings longer than [`Slot::INLINE`], one after the other.
    bytes: Vec<u8>,
    /// Where long string n ends in `bytes`.
    ends: Vec<usize>,
}

/// A string of the index: its bytes when at most [`Slot::INLINE`] long (otherwise its number
/// among the long ones), and its local index.
#[derive(Clone, Copy)]
struct Slot {
    inline: [u8; Slot::INLINE],
    /// The length of an inline string, or `u8::MAX` for a longer one.
    len: u8,
    n: u32,
    id: u32,
}

impl Slot {
    const INLINE: usize = 15;

    fn new(s: &[u8], n: u32, id: u32) -> Self {
        let mut inline = [0; Self::INLINE];
        let len = match s.len() <= Self::INLINE {
            true => {
                inline[..s.len()].copy_from_slice(s);
                s.len() as u8
            }
            false => u8::MAX,
        };
        Slot { inline, len, n, id }
    }
}

impl Strings {
    fn hash(s: &[u8]) -> u64 {
        use std::hash::Hasher;
        let mut h = rustc_hash::FxHasher::default();
        h.write(s);
        crate::hash::mix64(h.finish())
    }

    /// The bytes of a slot's string: inline, or long string `slot.n` in `bytes`.
    fn of<'a>(bytes: &'a [u8], ends: &[usize], slot: &'a Slot) -> &'a [u8] {
        match (slot.len, slot.n as usize) {
            (u8::MAX, 0) => &bytes[..ends[0]],
            (u8::MAX, n) => &bytes[ends[n - 1]..ends[n]],
            (len, _) => &slot.inline[..len as usize],
        }
    }

    fn find(&self, s: &str) -> Option<u32> {
        let s = s.as_bytes();
        let h = Self::hash(s);
        let found = match s.len() <= Slot::INLINE {
            // Compared as whole arrays (zero-padded, as stored): no call to memcmp per probe.
            true => {
                let (key, len) = (Slot::new(s, 0, 0).inline, s.len() as u8);
                self.index.find(h, |slot| slot.len == len && slot.inline == key)
            }
            false => self.index.find(h, |slot| slot.len == u8::MAX && Self::of(&self.bytes, &self.ends, slot) == s),
        };
        found.map(|slot| slot.id)
    }

    fn insert(&mut self, s: &str, id: u32) {
        let n = self.ends.len() as u32;
        if s.len() > Slot::INLINE {
            self.bytes.extend_from_slice(s.as_bytes());
            self.ends.push(self.bytes.len());
        }
        let slot = Slot::new(s.as_bytes(), n, id);
        let Strings { index, bytes, ends } = self;
        index.insert_unique(Self::hash(s.as_bytes()), slot, |m| Self::hash(Self::of(bytes, ends, m)));
    }

    fn len(&self) -> usize {
        self.index.len()
    }
}

impl Interner {
    fn next(&self) -> u32 {
        (self.ints.len() + self.strs.len()) as u32
    }

    fn int(&mut self, i: i64) -> u32 {
        let next = self.next();
        *self.ints.entry(i).or_insert(next)
    }

    /// The index of `cell`'s key (as [`Key::from_cell`] reads it).
    #[inline]
    fn cell(&mut self, cell: &Cell, what: &str) -> std::result::Result<u32, String> {
        match *cell {
            Cell::Int(i) => Ok(self.int(i)),
            Cell::Float(_) => Err(Key::from_cell(cell, what).err().unwrap_or_default()),
            Cell::Str(s) => {
                let s = s.trim();
                if let Some(v) = self.strs.find(s) {
                    return Ok(v);
                }
                match Key::from_cell(&Cell::Str(s), what)? {
                    Key::Int(i) => Ok(self.int(i)),
                    Key::Str(_) => {
                        let next = self.next();
                        self.strs.insert(s, next);
                        Ok(next)
                    }
                }
            }
        }
    }
}

impl KeyColumn {
    /// The value to store for `cell`, and whether the column just switched to local indexes:
    /// the caller then passes every value it stored before to [`KeyColumn::intern_earlier`].
    #[inline]
    pub fn id(&mut self, cell: &Cell, what: &str) -> std::result::Result<(u32, bool), String> {
        match &mut self.map {
            None => match cell.to_u32(what) {
                Ok(v) => Ok((v, false)),
                Err(e) => {
                    // Not an id in 0..2^32: a key, unless it is no id at all (a float, empty).
                    Key::from_cell(cell, what).map_err(|_| e)?;
                    let map = self.map.insert(Interner::default());
                    Ok((map.cell(cell, what)?, true))
                }
            },
            Some(map) => Ok((map.cell(cell, what)?, false)),
        }
    }

    /// Re-stores a value stored before the switch to local indexes (an id that fitted `u32`).
    pub fn intern_earlier(&mut self, v: &mut u32) {
        if let Some(map) = &mut self.map {
            *v = map.int(*v as i64);
        }
    }

    /// Whether the column holds local indexes.
    pub fn is_keyed(&self) -> bool {
        self.map.is_some()
    }

    /// Switches a column of plain ids to local indexes (another worker saw an id that did not
    /// fit): `visit` hands every stored value to the closure.
    pub fn key_all(&mut self, visit: VisitIds) {
        if self.map.is_some() {
            return;
        }
        let map = self.map.insert(Interner::default());
        visit(&mut |v| *v = map.int(*v as i64));
    }

    /// The distinct keys by local index (empty for a column of plain ids).
    pub fn into_keys(self) -> Vec<Key> {
        let Some(map) = self.map else { return Vec::new() };
        let mut keys: Vec<Option<Key>> = vec![None; map.ints.len() + map.strs.len()];
        for (i, at) in map.ints {
            keys[at as usize] = Some(Key::Int(i));
        }
        for slot in map.strs.index.iter() {
            let s = std::str::from_utf8(Strings::of(&map.strs.bytes, &map.strs.ends, slot)).unwrap_or_default();
            keys[slot.id as usize] = Some(Key::Str(s.into()));
        }
        keys.into_iter().flatten().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_their_wire_form_and_order_ints_first() {
        let keys = vec![Key::Int(-5), Key::Int(i64::MAX), Key::Str("alice".into()), Key::Str("".into())];
        let mut buf = Vec::new();
        keys.iter().for_each(|k| k.encode(&mut buf));
        assert_eq!(Key::decode_all(&buf).unwrap(), keys);
        assert!(Key::decode_all(&buf[..buf.len() - 1]).is_err());
        assert!(Key::decode_all(&[1, 9, 0, 0, 0, b'x']).is_err());
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(sorted, vec![Key::Int(-5), Key::Int(i64::MAX), Key::Str("".into()), Key::Str("alice".into())]);
    }

    #[test]
    fn a_column_keeps_plain_ids_until_one_does_not_fit() {
        let mut col = KeyColumn::default();
        let mut stored = Vec::new();
        for cell in [Cell::Int(7), Cell::Str("12"), Cell::Int(7)] {
            let (v, switched) = col.id(&cell, "user").unwrap();
            assert!(!switched);
            stored.push(v);
        }
        assert_eq!(stored, [7, 12, 7]);
        let (v, switched) = col.id(&Cell::Str("bob"), "user").unwrap();
        assert!(switched);
        stored.iter_mut().for_each(|s| col.intern_earlier(s));
        stored.push(v);
        let (again, _) = col.id(&Cell::Int(12), "user").unwrap();
        stored.push(again);
        assert!(col.id(&Cell::Float(1.5), "user").unwrap_err().contains("floating-point"));
        let keys = col.into_keys();
        let back: Vec<Key> = stored.iter().map(|&i| keys[i as usize].clone()).collect();
        let want = [Key::Int(7), Key::Int(12), Key::Int(7), Key::Str("bob".into()), Key::Int(12)];
        assert_eq!(back, want);
        assert_eq!(keys.len(), 3);
    }

    #[test]
    fn strings_inline_or_not_map_to_one_index_each() {
        // Around the inline length, multi-byte characters, a prefix of another.
        let words = ["a", "user-12345", "fifteen-bytes!!", "sixteen-bytes!!!", "naïve-ünïcödé-kéy", "user-1234"];
        let long = "x".repeat(300);
        let mut col = KeyColumn::default();
        let mut first = Vec::new();
        for w in words.iter().copied().chain([long.as_str()]) {
            first.push(col.id(&Cell::Str(w), "user").unwrap().0);
        }
        // Many more, so that the table grows and rehashes the strings it holds.
        for i in 0..5000 {
            col.id(&Cell::Str(&format!("k{i}-{}", "y".repeat(i % 40))), "user").unwrap();
        }
        for (w, &at) in words.iter().copied().chain([long.as_str()]).zip(&first) {
            assert_eq!(col.id(&Cell::Str(w), "user").unwrap().0, at, "{w:?}");
        }
        let keys = col.into_keys();
        assert_eq!(keys.len(), words.len() + 1 + 5000);
        for (w, &at) in words.iter().copied().chain([long.as_str()]).zip(&first) {
            assert_eq!(keys[at as usize], Key::Str(w.into()));
        }
        assert_eq!(
            keys[first[first.len() - 1] as usize + 4000],
            Key::Str(format!("k3999-{}", "y".repeat(3999 % 40)).into())
        );
    }
}
