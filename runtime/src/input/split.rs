//! Byte-range splits over the concatenation of an input's files, and a line reader that applies
//! the ownership rule: a line belongs to the split holding its first byte.

use super::compressed::Codec;
use crate::error::{PsError, Result};
use crate::storage::Storage;
use std::io::Read;

/// Bytes `[start, end)` of one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    pub path: String,
    pub start: u64,
    pub end: u64,
}

impl Split {
    /// The bytes this split holds, once `r` has read it: its range, or for a compressed file
    /// (read to its end) the decompressed bytes read.
    pub fn bytes_read(&self, r: &LineReader) -> u64 {
        if self.end == u64::MAX {
            r.position()
        } else {
            self.end - self.start
        }
    }
}

/// The splits of worker `k` of `n`: an even share of the total bytes, cut at file boundaries.
/// A compressed file cannot be split: it goes whole to the worker whose share holds its first
/// byte, as one split to its end (`end` = `u64::MAX`: offsets count decompressed bytes).
pub fn plan_splits(files: &[(String, u64)], k: usize, n: usize) -> Vec<Split> {
    let total: u64 = files.iter().map(|f| f.1).sum();
    let (lo, hi) = (total * k as u64 / n as u64, total * (k as u64 + 1) / n as u64);
    let mut out = Vec::new();
    let mut base = 0u64;
    for (path, len) in files {
        let (fs, fe) = (base, base + len);
        let (s, e) = (lo.max(fs), hi.min(fe));
        if Codec::of(path).is_some() {
            if (lo..hi).contains(&fs) {
                if *len > hi - lo && n > 1 {
                    log::warn!(
                        "{path} is compressed ({len} bytes), so one worker reads it whole: more than its \
                         1/{n} share of the input ({} bytes); split it into several files to balance the job",
                        hi - lo
                    );
                }
                out.push(Split { path: path.clone(), start: 0, end: u64::MAX });
            }
        } else if s < e {
            out.push(Split { path: path.clone(), start: s - fs, end: e - fs });
        }
        base = fe;
    }
    out
}

/// Like [`plan_splits`], in `m` pieces spread over the whole input: worker `k` of `n` gets the
/// pieces `k, n + k, 2n + k, ...` of `n x m` even pieces. Where the work per byte drifts along
/// the input (a corpus's document ids gain digits, so its later lines hold fewer tokens per
/// byte), contiguous shares differed in tokens by up to 10% at 16 workers (the last ones light,
/// the first heavy), and every step of LDA's threads lasts as long as the heaviest; 8 pieces
/// each brought that to 1.7%.
pub fn plan_spread_splits(files: &[(String, u64)], k: usize, n: usize, m: usize) -> Vec<Split> {
    let m = m.max(1);
    (0..m).flat_map(|j| plan_splits(files, j * n + k, n * m)).collect()
}

/// Longest line a reader accepts. A line is held in memory whole, so a file without line breaks
/// must fail with a clear error rather than be read into one buffer; real records (a rating, an
/// edge, a document of tokens) are far shorter.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// Reads the lines owned by a split, with their byte offsets. Lines are handed out as slices of
/// the reader's own buffer (refilled a MiB at a time), not copied into a line buffer first: at
/// Netflix size the copy and the UTF-8 check of every line were a third of the parsing time.
pub struct LineReader {
    inner: Box<dyn Read + Send>,
    buf: Vec<u8>,
    /// Unread bytes are `buf[lo..hi]`; `buf[lo]` is at byte `pos` of the file.
    lo: usize,
    hi: usize,
    eof: bool,
    pos: u64,
    end: u64,
    path: String,
}

/// Bytes read from storage at a time (grown for longer lines, up to [`MAX_LINE_BYTES`]).
const FILL: usize = 1 << 20;

impl LineReader {
    pub fn new(storage: &dyn Storage, split: &Split) -> Result<Self> {
        if super::is_parquet(storage, &split.path)? {
            return Err(PsError::Config(format!(
                "{} is a Parquet file, not text: read it as a table (--input-format parquet, or auto, with the \
                 app's column flags)",
                split.path
            )));
        }
        // Start one byte early: if that byte is a newline the first owned line starts at `start`;
        // otherwise the partial line belongs to the previous split and is skipped.
        let from = split.start.saturating_sub(1);
        let mut r = LineReader {
            inner: storage.open_range(&split.path, from, split.end)?,
            buf: Vec::new(),
            lo: 0,
            hi: 0,
            eof: false,
            pos: from,
            end: split.end,
            path: split.path.clone(),
        };
        if split.start > 0 {
            r.raw_line()?;
        }
        Ok(r)
    }

    /// Reads more bytes after the unread ones (moved to the front first); false at end of input.
    fn fill(&mut self) -> Result<bool> {
        if self.lo > 0 {
            self.buf.copy_within(self.lo..self.hi, 0);
            (self.hi, self.lo) = (self.hi - self.lo, 0);
        }
        if self.buf.len() < FILL || self.hi == self.buf.len() {
            let want = (self.buf.len() * 2).clamp(FILL, MAX_LINE_BYTES + FILL);
            self.buf.resize(want, 0);
        }
        loop {
            match self.inner.read(&mut self.buf[self.hi..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.hi += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(PsError::io(format!("reading {} at byte {}", self.path, self.pos), e)),
            }
        }
    }

    fn too_long(&self) -> PsError {
        PsError::Config(format!(
            "{} (byte {}): a line longer than {} MiB (is this a text input?)",
            self.path,
            self.pos,
            MAX_LINE_BYTES >> 20
        ))
    }

    /// The next line with its line break (the last line of the input may have none), as a range
    /// of `buf`; `None` at end of input.
    fn raw_line(&mut self) -> Result<Option<std::ops::Range<usize>>> {
        let mut from = self.lo;
        loop {
            let found = memchr::memchr(b'\n', &self.buf[from..self.hi]).map(|i| from + i + 1);
            if found.is_none() && !self.eof && self.hi - self.lo <= MAX_LINE_BYTES {
                let scanned = self.hi - self.lo;
                self.fill()?;
                from = self.lo + scanned;
                continue;
            }
            let stop = found.unwrap_or(self.hi);
            if stop - self.lo > MAX_LINE_BYTES {
                return Err(self.too_long());
            }
            if stop == self.lo {
                return Ok(None);
            }
            let line = self.lo..stop;
            self.lo = stop;
            self.pos += line.len() as u64;
            return Ok(Some(line));
        }
    }

    /// Next owned line as bytes (without the line break) and its starting byte offset.
    pub fn next_bytes(&mut self) -> Result<Option<(&[u8], u64)>> {
        if self.pos >= self.end {
            return Ok(None);
        }
        self.next_bytes_unbounded()
    }

    fn next_bytes_unbounded(&mut self) -> Result<Option<(&[u8], u64)>> {
        let at = self.pos;
        Ok(self.raw_line()?.map(|r| (trim_break(&self.buf[r]), at)))
    }

    /// Next owned line (without the line break) and its starting byte offset.
    pub fn next_line(&mut self) -> Result<Option<(&str, u64)>> {
        if self.pos >= self.end {
            return Ok(None);
        }
        self.next_line_unbounded()
    }

    /// Next line even past the split end (for readers that finish a record started inside).
    pub fn next_line_unbounded(&mut self) -> Result<Option<(&str, u64)>> {
        let at = self.pos;
        let Some(r) = self.raw_line()? else { return Ok(None) };
        line_text(trim_break(&self.buf[r]), &self.path, at).map(|s| Some((s, at)))
    }

    /// Lines per byte in the first buffer of input (read now if nothing is buffered yet), for
    /// sizing what the lines are parsed into; `None` if the input is empty.
    pub fn line_density(&mut self) -> Result<Option<f64>> {
        if self.hi == self.lo && !self.eof {
            self.fill()?;
        }
        let ahead = &self.buf[self.lo..self.hi];
        Ok((!ahead.is_empty()).then(|| (memchr::memchr_iter(b'\n', ahead).count().max(1)) as f64 / ahead.len() as f64))
    }

    /// Offset of the next line to be read.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// True once the reader is at or past the split end.
    pub fn past_end(&self) -> bool {
        self.pos >= self.end
    }
}

/// A line without its line break (and any carriage returns before it).
fn trim_break(mut line: &[u8]) -> &[u8] {
    while let [rest @ .., b'\n' | b'\r'] = line {
        line = rest;
    }
    line
}

/// A line of `path` starting at byte `at` as text: a line that is not UTF-8 is an error naming
/// the file and byte (for lines read as bytes that a fast path declined).
pub fn line_text<'a>(line: &'a [u8], path: &str, at: u64) -> Result<&'a str> {
    std::str::from_utf8(line).map_err(|_| PsError::Config(format!("{path} (byte {at}): line is not UTF-8")))
}

/// The last line that starts before byte `pos` of `path` and satisfies `pred`, with its start
/// offset. `pos` must be the start of a line. Reads backwards in growing chunks.
pub(crate) fn find_line_before(
    storage: &dyn Storage,
    path: &str,
    pos: u64,
    pred: impl Fn(&str) -> bool,
) -> Result<Option<(u64, String)>> {
    let mut hi = pos; // lines starting before `hi` and ending at or before `pos` remain to check
    let mut chunk = 1u64 << 16;
    while hi > 0 {
        let lo = hi.saturating_sub(chunk);
        let data = storage.read_at(path, lo, (pos - lo) as usize)?;
        // Complete lines in data: those starting after a newline (or at byte 0 of the file).
        let mut starts: Vec<usize> =
            data.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1).collect();
        if lo == 0 {
            starts.insert(0, 0);
        }
        for w in (0..starts.len()).rev() {
            let st = starts[w];
            let abs = lo + st as u64;
            if abs >= hi {
                continue;
            }
            let end = data[st..].iter().position(|b| *b == b'\n').map(|e| st + e).unwrap_or(data.len());
            let line = String::from_utf8_lossy(&data[st..end]).trim_end_matches('\r').to_string();
            if pred(&line) {
                return Ok(Some((abs, line)));
            }
        }
        // Next round: lines starting before the first complete line found in this chunk.
        hi = match starts.first() {
            Some(&st) if lo + (st as u64) < hi => lo + st as u64,
            _ => lo,
        };
        if lo == 0 {
            break;
        }
        chunk *= 2;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spread splits cover every byte of the input once, compressed files whole, and give each
    /// worker pieces from the start and the end of the input.
    #[test]
    fn spread_splits_cover_the_input_once() {
        let files = vec![("a".to_string(), 1000), ("b.gz".to_string(), 300), ("c".to_string(), 701)];
        let (n, m) = (3, 4);
        let mut covered = vec![0u32; 1000 + 701];
        let mut gz = 0;
        for k in 0..n {
            let splits = plan_spread_splits(&files, k, n, m);
            // A piece in the first quarter of the input, and one in the last.
            assert!(splits.first().is_some_and(|s| s.path == "a" && s.start < 500), "{splits:?}");
            assert!(splits.last().is_some_and(|s| s.path == "c" && s.end > 200), "{splits:?}");
            for s in splits {
                match s.path.as_str() {
                    "a" => (s.start..s.end).for_each(|b| covered[b as usize] += 1),
                    "c" => (s.start..s.end).for_each(|b| covered[1000 + b as usize] += 1),
                    _ => {
                        assert_eq!((s.start, s.end), (0, u64::MAX));
                        gz += 1;
                    }
                }
            }
        }
        assert!(covered.iter().all(|&c| c == 1));
        assert_eq!(gz, 1);
        assert_eq!(plan_spread_splits(&files, 1, 3, 1), plan_splits(&files, 1, 3));
    }
}
