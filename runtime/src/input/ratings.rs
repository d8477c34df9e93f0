//! Ratings: delimited `user item rating [ts]` (tab, comma or space), MovieLens `u::i::r::ts`, and
//! the Netflix Prize layout (`MOVIEID:` lines followed by `user,rating,date` lines, one file per
//! movie or several movies per file); or three named columns of a table (CSV or Parquet).
//! Implicit feedback (`mf --implicit`) reads interactions: the user and item ids of each line or
//! row, with an optional count column of a table.

use super::keys::KeyColumn;
use super::split::{find_line_before, line_text};
use super::table::{column_ids, column_values};
use super::{digits, field, on_bad, plan_splits, read_rows, BadRecords, Cell, Column, Decoded, InputFormat};
use super::{LineReader, ReadStats, RowSink};
use crate::error::{PsError, Result};
use crate::storage::{storage_for, Storage};

/// One observed rating.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rating {
    pub user: u32,
    pub item: u32,
    pub value: f32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RatingFormat {
    /// Decide per file from its first line.
    #[default]
    Auto,
    Delimited,
    MovieLens,
    Netflix,
}

impl std::str::FromStr for RatingFormat {
    type Err = PsError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(Self::Auto),
            "tsv" | "csv" | "delimited" => Ok(Self::Delimited),
            "movielens" => Ok(Self::MovieLens),
            "netflix" => Ok(Self::Netflix),
            _ => Err(PsError::Config(format!("--format: '{s}' is not auto, tsv, csv, movielens or netflix"))),
        }
    }
}

fn netflix_header(line: &str) -> Option<u32> {
    line.trim().strip_suffix(':').and_then(|m| m.parse().ok())
}

fn detect(storage: &dyn Storage, path: &str) -> Result<RatingFormat> {
    let head = storage.read_at(path, 0, 4096)?;
    let first = String::from_utf8_lossy(&head);
    let first = first.lines().next().unwrap_or("");
    Ok(if netflix_header(first).is_some() {
        RatingFormat::Netflix
    } else if first.contains("::") {
        RatingFormat::MovieLens
    } else {
        RatingFormat::Delimited
    })
}

/// A rating value: a finite number (NaN or infinity would poison every factor it touches).
fn rating_value(s: Option<&str>) -> std::result::Result<f32, String> {
    let value = field::<f32>(s, "rating")?;
    if !value.is_finite() {
        return Err(format!("rating {value} is not finite"));
    }
    Ok(value)
}

fn parse_fields<'a>(mut it: impl Iterator<Item = &'a str>, values: Values) -> std::result::Result<Rating, String> {
    let user = field::<u32>(it.next(), "user id")?;
    let item = field::<u32>(it.next(), "item id")?;
    let value = match values {
        Values::Ratings => rating_value(it.next())?,
        Values::Interactions => 1.0,
    };
    Ok(Rating { user, item, value })
}

/// What a line of a text input holds after its two ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Values {
    /// A rating, which must be there.
    Ratings,
    /// Whatever follows the ids is not read: each line is one interaction (value 1). A count
    /// column is only read from a table, where it is named (`--rating-col`), never guessed.
    Interactions,
}

#[inline]
fn is_sep(b: u8) -> bool {
    matches!(b, b'\t' | b',' | b' ')
}

/// One or more separators, then the rest.
#[inline]
fn seps(s: &[u8]) -> Option<&[u8]> {
    match s {
        // One separator is the common case.
        [a, b, ..] if is_sep(*a) && !is_sep(*b) => Some(&s[1..]),
        _ => {
            let n = s.iter().take_while(|&&b| is_sep(b)).count();
            (n > 0).then(|| &s[n..])
        }
    }
}

/// The fast path for the common delimited line, `user<sep>item<sep>rating[<sep>anything]` with
/// plain digits and a rating `m / 10^k` with m < 10^6 and k <= 6 (`4`, `3.5`, `0.125`). Anything
/// else (signs, exponents, long numbers, malformed lines) returns `None` and goes to the general
/// parser, which gives the same values and names what is wrong. The quotient is computed in f64
/// (correctly rounded, relative error <= 2^-53) and rounded once to f32; for such m and k the exact
/// value is never closer than 2^-45 (relative) to a point where f32 rounding changes, so the result
/// equals `str::parse::<f32>` exactly.
#[inline]
fn fast_delimited(t: &[u8]) -> Option<Rating> {
    let (user, rest) = digits(t)?;
    let (item, rest) = digits(seps(rest)?)?;
    let (int, mut rest) = digits(seps(rest)?)?;
    let (mut m, mut scale) = (int as u64, 1u64);
    if let Some(frac) = rest.strip_prefix(b".") {
        let (f, r) = digits(frac)?;
        let k = (frac.len() - r.len()) as u32;
        if k > 6 {
            return None;
        }
        (m, scale, rest) = (m * 10u64.pow(k) + f as u64, 10u64.pow(k), r);
    }
    if m >= 1_000_000 || rest.first().is_some_and(|&b| !is_sep(b)) {
        return None;
    }
    // Whole ratings (the usual 1-5 stars) are exact as f32 (m < 2^24): no division.
    let value = if scale == 1 { m as f32 } else { (m as f64 / scale as f64) as f32 };
    Some(Rating { user, item, value })
}

/// The fast path of an interaction line, `user<sep>item[<sep>anything]` with plain digits.
#[inline]
fn fast_pair(t: &[u8]) -> Option<Rating> {
    let (user, rest) = digits(t)?;
    let (item, rest) = digits(seps(rest)?)?;
    if rest.first().is_some_and(|&b| !is_sep(b)) {
        return None;
    }
    Some(Rating { user, item, value: 1.0 })
}

/// Reads worker `k`'s share (of `n`) of the ratings at `url`.
pub fn read_ratings(
    url: &str,
    k: usize,
    n: usize,
    format: RatingFormat,
    bad: BadRecords,
) -> Result<(Vec<Rating>, ReadStats)> {
    read_lines(url, k, n, format, bad, Values::Ratings)
}

/// Reads worker `k`'s share (of `n`) of the interactions at `url`: the user and item ids of each
/// line (any text format; what follows them is not read), each with value 1.
pub fn read_interactions(
    url: &str,
    k: usize,
    n: usize,
    format: RatingFormat,
    bad: BadRecords,
) -> Result<(Vec<Rating>, ReadStats)> {
    read_lines(url, k, n, format, bad, Values::Interactions)
}

fn read_lines(
    url: &str,
    k: usize,
    n: usize,
    format: RatingFormat,
    bad: BadRecords,
    values: Values,
) -> Result<(Vec<Rating>, ReadStats)> {
    let storage = storage_for(url)?;
    let st: &dyn crate::storage::Storage = &Decoded(storage.as_ref());
    let files = st.list(url)?;
    let splits = plan_splits(&files, k, n);
    let mut out = Vec::new();
    let mut stats = ReadStats::default();
    for (i, split) in splits.iter().enumerate() {
        let fmt = match format {
            RatingFormat::Auto => detect(st, &split.path)?,
            f => f,
        };
        let mut r = LineReader::new(st, split)?;
        if i == 0 {
            // Sized once from the first MiB's lines per byte: growing by doubling copied and
            // page-faulted the ratings about twice over (a second of a worker's loading at
            // Netflix size). A compressed split's size is not known; it grows as before.
            let bytes: u64 = splits.iter().filter(|s| s.end != u64::MAX).map(|s| s.end - s.start).sum();
            if let Some(d) = r.line_density()? {
                out.reserve((bytes as f64 * d * 1.02) as usize + 1024);
            }
        }
        let mut movie: Option<u32> = None;
        if fmt == RatingFormat::Netflix && !r.past_end() {
            let here = r.position();
            movie = find_line_before(st, &split.path, here, |l| netflix_header(l).is_some())?
                .and_then(|(_, l)| netflix_header(&l));
        }
        while let Some((bytes, at)) = r.next_bytes()? {
            // The common delimited line is parsed from its bytes; anything else as text.
            let b = bytes.trim_ascii();
            if b.is_empty() || b[0] == b'#' {
                continue;
            }
            if matches!(fmt, RatingFormat::Delimited) {
                let fast = match values {
                    Values::Ratings => fast_delimited(b),
                    Values::Interactions => fast_pair(b),
                };
                if let Some(rt) = fast {
                    out.push(rt);
                    stats.records += 1;
                    continue;
                }
            }
            let t = line_text(bytes, &split.path, at)?.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let parsed = match fmt {
                RatingFormat::Netflix => {
                    if let Some(m) = netflix_header(t) {
                        movie = Some(m);
                        continue;
                    }
                    match movie {
                        None => Err("rating line before any 'MOVIEID:' line".to_string()),
                        Some(m) => {
                            let mut f = t.split(',');
                            let value = |f: Option<&str>| match values {
                                Values::Ratings => rating_value(f),
                                Values::Interactions => Ok(1.0),
                            };
                            field::<u32>(f.next(), "user id")
                                .and_then(|u| Ok(Rating { user: u, item: m, value: value(f.next())? }))
                        }
                    }
                }
                RatingFormat::MovieLens => parse_fields(t.split("::"), values),
                _ => parse_fields(t.split(['\t', ',', ' ']).filter(|s| !s.is_empty()), values),
            };
            match parsed {
                Ok(rt) => {
                    out.push(rt);
                    stats.records += 1;
                }
                // A CSV header ("userId,movieId,rating,...") on the first line is not an error; it
                // is said, since a first rating with a string id would be skipped the same way.
                Err(_) if at == 0 && t.chars().next().is_some_and(|c| c.is_alphabetic()) => {
                    log::info!("{}: first line taken for a header and skipped: {t:.80}", split.path);
                }
                Err(why) => on_bad(bad, &mut stats, st, &split.path, at, &why)?,
            }
        }
        stats.bytes += split.bytes_read(&r);
    }
    Ok((out, stats))
}

/// The columns of a table of ratings; by default `user`, `item` and `rating`, as Spark's ALS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RatingColumns {
    pub user: String,
    pub item: String,
    /// `None` for interactions without a count: every row has value 1.
    pub rating: Option<String>,
}

impl RatingColumns {
    pub fn new(user: Option<&str>, item: Option<&str>, rating: Option<&str>) -> Self {
        let name = |c: Option<&str>, d: &str| c.unwrap_or(d).to_string();
        RatingColumns { user: name(user, "user"), item: name(item, "item"), rating: Some(name(rating, "rating")) }
    }

    /// The columns of a table of interactions: `user` and `item` by default, and a count column
    /// only when one is named.
    pub fn interactions(user: Option<&str>, item: Option<&str>, count: Option<&str>) -> Self {
        RatingColumns { rating: count.map(str::to_string), ..Self::new(user, item, None) }
    }
}

/// Reads worker `k`'s share (of `n`) of the ratings in the table at `url` (`format` Csv or
/// Parquet), whose ids must all be integers in `0..2^32`; [`read_rating_table_keyed`] takes any.
pub fn read_rating_table(
    url: &str,
    k: usize,
    n: usize,
    format: InputFormat,
    cols: &RatingColumns,
    bad: BadRecords,
) -> Result<(Vec<Rating>, ReadStats)> {
    let t = read_rating_table_keyed(url, k, n, format, cols, bad)?;
    if t.users.is_keyed() || t.items.is_keyed() {
        return Err(PsError::Config(format!(
            "{url}: not every id is an integer in 0..4294967295 (strings, 64-bit or negative ids need \
             read_rating_table_keyed and ps_apps::dictionary::settle_ids)"
        )));
    }
    Ok((t.ratings, t.stats))
}

/// A worker's share of a table of ratings with ids of any kind.
pub struct RatingTable {
    pub ratings: Vec<Rating>,
    pub stats: ReadStats,
    /// The user and item columns: when [`KeyColumn::is_keyed`], the ratings hold local indexes
    /// into the column's keys, to be numbered job-wide (`ps_apps::dictionary::settle_ids`).
    pub users: KeyColumn,
    pub items: KeyColumn,
}

/// Reads worker `k`'s share (of `n`) of the ratings in the table at `url` (`format` Csv or
/// Parquet). Ids may be strings or any 64-bit integers.
pub fn read_rating_table_keyed(
    url: &str,
    k: usize,
    n: usize,
    format: InputFormat,
    cols: &RatingColumns,
    bad: BadRecords,
) -> Result<RatingTable> {
    let mut columns =
        vec![Column { flag: "--user-col", name: &cols.user }, Column { flag: "--item-col", name: &cols.item }];
    if let Some(rating) = &cols.rating {
        columns.push(Column { flag: "--rating-col", name: rating });
    }
    let mut out = Ratings { values: cols.rating.is_some(), ..Default::default() };
    let stats = read_rows(url, k, n, format, &columns, bad, &mut out)?;
    Ok(RatingTable { ratings: out.rows, stats, users: out.users, items: out.items })
}

#[derive(Default)]
struct Ratings {
    rows: Vec<Rating>,
    users: KeyColumn,
    items: KeyColumn,
    /// Whether the table has a value column (else every row has value 1).
    values: bool,
}

impl RowSink for Ratings {
    fn expect(&mut self, rows: u64) {
        self.rows.reserve(rows as usize);
    }
    /// The text format's fast path when the columns are the first three: a CSV of plain numbers
    /// then loads as fast as the same ratings as text (the general path splits, unquotes and
    /// parses every field: 2.2x the time).
    fn line(&mut self, line: &[u8], _sep: u8, index: &[usize]) -> bool {
        let plain = !self.users.is_keyed() && !self.items.is_keyed();
        let r = match (self.values, index) {
            (true, [0, 1, 2]) if plain => fast_delimited(line),
            (false, [0, 1]) if plain => fast_pair(line),
            _ => None,
        };
        r.map(|r| self.rows.push(r)).is_some()
    }
    /// Parquet's fast path: integer id columns whose ids all fit u32 and a numeric value column
    /// whose values are all finite as f32 become ratings in one loop. Anything else (string or
    /// larger ids, a bad value) goes row by row, which names the row.
    fn columns(&mut self, c: &[&dyn arrow_array::Array]) -> bool {
        if self.users.is_keyed() || self.items.is_keyed() {
            return false;
        }
        let (Some(users), Some(items)) = (column_ids(c[0]), column_ids(c[1])) else { return false };
        let values = match self.values {
            true => match column_values(c[2]) {
                Some(v) => v,
                None => return false,
            },
            false => vec![1.0; users.len()],
        };
        let rows = users.into_iter().zip(items).zip(values);
        self.rows.extend(rows.map(|((user, item), value)| Rating { user, item, value }));
        true
    }
    fn row(&mut self, c: &[Cell]) -> std::result::Result<(), String> {
        let value = if self.values { c[2].to_f32("rating")? } else { 1.0 };
        let (user, switched) = self.users.id(&c[0], "user id")?;
        if switched {
            self.rows.iter_mut().for_each(|r| self.users.intern_earlier(&mut r.user));
        }
        let (item, switched) = self.items.id(&c[1], "item id")?;
        if switched {
            self.rows.iter_mut().for_each(|r| self.items.intern_earlier(&mut r.item));
        }
        self.rows.push(Rating { user, item, value });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn general(t: &str) -> Option<Rating> {
        parse_fields(t.split(['\t', ',', ' ']).filter(|s| !s.is_empty()), Values::Ratings).ok()
    }

    proptest! {
        /// The fast path gives exactly what the general parser gives, or declines.
        #[test]
        fn fast_path_agrees_with_the_general_parser(
            user in 0u32..2_000_000_000, item in 0u32..1_000_000, int in 0u32..100_000,
            frac in proptest::option::of("[0-9]{1,7}"), sep in "[\t, ]{1,2}", tail in proptest::option::of("[0-9]{1,10}"),
        ) {
            let rating = match &frac { Some(f) => format!("{int}.{f}"), None => int.to_string() };
            let line = format!("{user}{sep}{item}{sep}{rating}{}", tail.map(|x| format!("{sep}{x}")).unwrap_or_default());
            if let Some(fast) = fast_delimited(line.as_bytes()) {
                prop_assert_eq!(Some(fast), general(&line), "{}", line);
            }
        }
    }

    #[test]
    fn fast_path_takes_common_lines_and_declines_the_rest() {
        assert_eq!(fast_delimited(b"12\t7\t3.5\t978300760"), Some(Rating { user: 12, item: 7, value: 3.5 }));
        assert_eq!(fast_delimited(b"1, 2, 4"), Some(Rating { user: 1, item: 2, value: 4.0 }));
        for declined in
            [&b"1\t2\t-3"[..], b"1\t2\t3e2", b"1\t2\t0.0000001", b"1\t2", b"1\t2\tx", b"u\t2\t3", b"1\t2\t3x"]
        {
            assert_eq!(fast_delimited(declined), None, "{}", String::from_utf8_lossy(declined));
        }
    }

    #[test]
    fn an_interaction_is_two_ids_whatever_follows() {
        let one = |user, item| Some(Rating { user, item, value: 1.0 });
        assert_eq!(fast_pair(b"12\t7"), one(12, 7));
        assert_eq!(fast_pair(b"12,7,3.5,978300760"), one(12, 7));
        for declined in [&b"12\t7x"[..], b"12", b"u\t7", b"-1\t7"] {
            assert_eq!(fast_pair(declined), None, "{}", String::from_utf8_lossy(declined));
        }
        let general = |t: &str| parse_fields(t.split(['\t', ',', ' ']).filter(|s| !s.is_empty()), Values::Interactions);
        assert_eq!(general("12 7").ok(), one(12, 7));
        assert!(general("12").unwrap_err().contains("item id"));
    }
}
