//! The body of Gaia's selective barrier (`Msg::SelectiveBarrier`): which rows each mirror update
//! still on its way holds, and the clock it was sent at.
//!
//! A barrier goes out exactly when a WAN link is behind, so its bytes compete with the updates it
//! announces. It lists one group per mirror update frame (every frame holds one table):
//! `seq u64, clock i64, table u32, n u32`, then the frame's `n` row ids ascending, each as the
//! LEB128 varint of its distance from the one before (the first from 0). On MovieLens' MF at
//! 5 Mbit/s a flat `(seq, table, row)` list of 20 bytes a row was 11% of all WAN bytes; row ids
//! of one frame are close together, so most take one or two bytes here.

use crate::clock::Age;
use crate::error::{PsError, Result};
use bytes::{Buf, BufMut, BytesMut};

/// Bytes of a group's header: seq, clock, table, row count.
const HEADER: usize = 8 + 8 + 4 + 4;

/// One mirror update frame as a barrier announces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Announced {
    pub seq: u64,
    /// The sender's data center clock the frame's updates were taken at.
    pub clock: Age,
    pub table: u32,
    /// Row ids, ascending and distinct.
    pub rows: Vec<u64>,
}

/// Appends one frame's group; `rows` must be ascending and distinct.
pub(crate) fn put(buf: &mut BytesMut, seq: u64, clock: Age, table: u32, rows: &[u64]) {
    debug_assert!(rows.windows(2).all(|w| w[0] < w[1]), "barrier rows must be ascending");
    buf.reserve(HEADER + rows.len() * 2);
    buf.put_u64_le(seq);
    buf.put_i64_le(clock.get());
    buf.put_u32_le(table);
    buf.put_u32_le(rows.len() as u32);
    let mut prev = 0u64;
    for &r in rows {
        let mut d = r - prev;
        prev = r;
        while d >= 0x80 {
            buf.put_u8((d as u8) | 0x80);
            d >>= 7;
        }
        buf.put_u8(d as u8);
    }
}

/// Reads every group of a barrier from `from` (a peer's bytes: anything malformed is an error).
pub(crate) fn parse(mut data: &[u8], from: usize) -> Result<Vec<Announced>> {
    let bad = |why: &str| PsError::codec(format!("selective barrier from process {from}: {why}"));
    let mut out = Vec::new();
    while !data.is_empty() {
        if data.len() < HEADER {
            return Err(bad("a group's header is cut short"));
        }
        let (seq, clock, table, n) =
            (data.get_u64_le(), Age::new(data.get_i64_le()), data.get_u32_le(), data.get_u32_le() as usize);
        if n > data.len() {
            return Err(bad("a group lists more rows than it has bytes"));
        }
        let mut rows = Vec::with_capacity(n);
        let mut prev = 0u64;
        for i in 0..n {
            let d = varint(&mut data).ok_or_else(|| bad("a row id is cut short or too long"))?;
            if i > 0 && d == 0 {
                return Err(bad("row ids repeat"));
            }
            prev = prev.checked_add(d).ok_or_else(|| bad("a row id overflows"))?;
            rows.push(prev);
        }
        out.push(Announced { seq, clock, table, rows });
    }
    Ok(out)
}

/// One LEB128 varint of at most 64 bits.
fn varint(data: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = data.split_first()?;
        *data = rest;
        let bits = u64::from(b & 0x7f);
        if shift == 63 && bits > 1 {
            return None;
        }
        v |= bits << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_round_trip_in_a_fraction_of_the_flat_list() {
        let rows: Vec<u64> = (0..1000u64).map(|i| i * 3 + 7).collect();
        let wide = [0, 1, 127, 128, 1 << 40, u64::MAX];
        let mut buf = BytesMut::new();
        put(&mut buf, 5, Age::new(9), 1, &rows);
        put(&mut buf, 6, Age::new(10), 2, &wide);
        put(&mut buf, 7, Age::new(10), 2, &[]);
        let got = parse(&buf, 1).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], Announced { seq: 5, clock: Age::new(9), table: 1, rows: rows.clone() });
        assert_eq!(got[1].rows, wide);
        assert_eq!((got[2].seq, got[2].rows.len()), (7, 0));
        let first = HEADER + rows.len();
        assert!(buf.len() < first + HEADER + 40 + HEADER, "{} bytes", buf.len());
        assert!(first * 10 < rows.len() * 20, "one byte a close row id, not 20");
    }

    #[test]
    fn malformed_barriers_are_errors_not_panics() {
        let mut buf = BytesMut::new();
        put(&mut buf, 1, Age::new(2), 3, &[10, 300, 70_000]);
        for cut in 0..buf.len() {
            assert!(parse(&buf[..cut], 4).is_err() || cut == 0, "cut at {cut}");
        }
        let mut too_many = buf.clone();
        too_many[20..24].copy_from_slice(&1000u32.to_le_bytes());
        assert!(parse(&too_many, 4).unwrap_err().to_string().contains("more rows"));
        let mut repeat = BytesMut::new();
        repeat.put_slice(&buf[..HEADER]);
        repeat.put_slice(&[5, 0, 1]);
        assert!(parse(&repeat, 4).unwrap_err().to_string().contains("repeat"));
        let mut long = BytesMut::new();
        long.put_slice(&buf[..HEADER - 4]);
        long.put_u32_le(1);
        long.put_slice(&[0xff; 11]);
        assert!(parse(&long, 4).is_err());
        let mut overflow = BytesMut::new();
        overflow.put_slice(&buf[..HEADER - 4]);
        overflow.put_u32_le(2);
        overflow.put_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 1]);
        assert!(parse(&overflow, 4).unwrap_err().to_string().contains("overflows"));
    }
}
