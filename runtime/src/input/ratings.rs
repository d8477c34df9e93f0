//! Ratings: delimited `user item rating [ts]` (tab, comma or space), MovieLens `u::i::r::ts`, and
//! the Netflix Prize layout (`MOVIEID:` lines followed by `user,rating,date` lines, one file per
//! movie or several movies per file).

use super::split::find_line_before;
use super::{field, on_bad, plan_splits, BadRecords, LineReader, ReadStats};
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

fn parse_fields<'a>(mut it: impl Iterator<Item = &'a str>) -> std::result::Result<Rating, String> {
    let user = field::<u32>(it.next(), "user id")?;
    let item = field::<u32>(it.next(), "item id")?;
    let value = rating_value(it.next())?;
    Ok(Rating { user, item, value })
}

/// Reads worker `k`'s share (of `n`) of the ratings at `url`.
pub fn read_ratings(
    url: &str,
    k: usize,
    n: usize,
    format: RatingFormat,
    bad: BadRecords,
) -> Result<(Vec<Rating>, ReadStats)> {
    let storage = storage_for(url)?;
    let st = storage.as_ref();
    let files = st.list(url)?;
    let mut out = Vec::new();
    let mut stats = ReadStats::default();
    for split in plan_splits(&files, k, n) {
        let fmt = match format {
            RatingFormat::Auto => detect(st, &split.path)?,
            f => f,
        };
        let mut r = LineReader::new(st, &split)?;
        let mut movie: Option<u32> = None;
        if fmt == RatingFormat::Netflix && !r.past_end() {
            let here = r.position();
            movie = find_line_before(st, &split.path, here, |l| netflix_header(l).is_some())?
                .and_then(|(_, l)| netflix_header(&l));
        }
        while let Some((line, at)) = r.next_line()? {
            let t = line.trim();
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
                            field::<u32>(f.next(), "user id")
                                .and_then(|u| Ok(Rating { user: u, item: m, value: rating_value(f.next())? }))
                        }
                    }
                }
                RatingFormat::MovieLens => parse_fields(t.split("::")),
                _ => parse_fields(t.split(['\t', ',', ' ']).filter(|s| !s.is_empty())),
            };
            match parsed {
                Ok(rt) => {
                    out.push(rt);
                    stats.records += 1;
                }
                // A CSV header ("userId,movieId,rating,...") on the first line is not an error.
                Err(_) if at == 0 && t.chars().next().is_some_and(|c| c.is_alphabetic()) => {}
                Err(why) => on_bad(bad, &mut stats, st, &split.path, at, &why)?,
            }
        }
        stats.bytes += split.end - split.start;
    }
    Ok((out, stats))
}
