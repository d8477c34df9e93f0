//! Hadoop's `WritableUtils` variable-length integers (zero-compressed, *not* protobuf varints) and
//! `Text` strings, as used by the `HDTS` version 0 token file.

use crate::error::{HadoopError, Result};

/// Appends `i` as a Hadoop vlong.
pub fn write_vlong(out: &mut Vec<u8>, mut i: i64) {
    if (-112..=127).contains(&i) {
        out.push(i as u8);
        return;
    }
    let mut len: i64 = -112;
    if i < 0 {
        i ^= -1;
        len = -120;
    }
    let mut tmp = i;
    while tmp != 0 {
        tmp >>= 8;
        len -= 1;
    }
    out.push(len as u8);
    let n = if len < -120 { -(len + 120) } else { -(len + 112) };
    for idx in (1..=n).rev() {
        out.push((i >> ((idx - 1) * 8)) as u8);
    }
}

/// Reads a Hadoop vlong from the front of `buf`.
pub fn read_vlong(buf: &mut &[u8]) -> Result<i64> {
    let first = take(buf, 1)?[0] as i8;
    let len = if first >= -112 {
        1
    } else if first < -120 {
        -119 - first as i32
    } else {
        -111 - first as i32
    };
    if len == 1 {
        return Ok(first as i64);
    }
    let mut i: i64 = 0;
    for &b in take(buf, (len - 1) as usize)? {
        i = (i << 8) | b as i64;
    }
    let negative = first < -120 || (-112..0).contains(&first);
    Ok(if negative { i ^ -1 } else { i })
}

/// A length that must be a small non-negative vint.
pub fn read_len(buf: &mut &[u8], what: &str) -> Result<usize> {
    let n = read_vlong(buf)?;
    if n < 0 || n as usize > buf.len() {
        return Err(HadoopError::Codec(format!("{what}: length {n} with {} bytes left", buf.len())));
    }
    Ok(n as usize)
}

pub fn take<'a>(buf: &mut &'a [u8], n: usize) -> Result<&'a [u8]> {
    if buf.len() < n {
        return Err(HadoopError::Codec(format!("truncated: wanted {n} bytes, {} left", buf.len())));
    }
    let (head, tail) = buf.split_at(n);
    *buf = tail;
    Ok(head)
}

/// Hadoop `Text`: vint length, then UTF-8.
pub fn write_text(out: &mut Vec<u8>, s: &[u8]) {
    write_vlong(out, s.len() as i64);
    out.extend_from_slice(s);
}

pub fn read_bytes<'a>(buf: &mut &'a [u8], what: &str) -> Result<&'a [u8]> {
    let n = read_len(buf, what)?;
    take(buf, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vlong_matches_hadoop_encodings_and_roundtrips() {
        // Known encodings of WritableUtils.writeVLong.
        let cases: &[(i64, &[u8])] = &[
            (0, &[0x00]),
            (127, &[0x7f]),
            (-112, &[0x90]),
            (128, &[0x8f, 0x80]),
            (-113, &[0x87, 0x70]),
            (300, &[0x8e, 0x01, 0x2c]),
            (-1000, &[0x86, 0x03, 0xe7]),
        ];
        for (v, bytes) in cases {
            let mut out = Vec::new();
            write_vlong(&mut out, *v);
            assert_eq!(&out, bytes, "{v}");
            let mut s: &[u8] = bytes;
            assert_eq!(read_vlong(&mut s).unwrap(), *v);
            assert!(s.is_empty());
        }
        for v in [i64::MIN, i64::MAX, 1 << 40, -(1 << 33), 255, 256, -256] {
            let mut out = Vec::new();
            write_vlong(&mut out, v);
            assert_eq!(read_vlong(&mut &out[..]).unwrap(), v);
        }
        assert!(read_vlong(&mut &[0x8e, 0x01][..]).is_err());
    }
}
