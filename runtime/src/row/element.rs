//! Numeric element types of the built-in rows (i32, i64, f32, f64), handled through one trait so
//! that dense and sparse rows are written once.

use crate::error::{PsError, Result};
use bytes::{BufMut, BytesMut};

/// A numeric element of a built-in row. Encoded little-endian on the wire.
pub trait Element:
    bytemuck::Pod + Default + PartialEq + PartialOrd + std::fmt::Debug + std::fmt::Display + Send + Sync + 'static
{
    /// Short name used in row type names ("f32" in "dense_f32").
    const NAME: &'static str;
    const SIZE: usize;
    fn put(self, buf: &mut BytesMut);
    /// Appends `v` packed (what `put` does for each element, in one go).
    fn put_all(v: &[Self], buf: &mut BytesMut);
    /// Replaces `out` with the packed elements in `raw` (a multiple of `SIZE` bytes long).
    fn get_all(raw: &[u8], out: &mut Vec<Self>);
    /// Reads one element; the caller has checked that `SIZE` bytes are available.
    fn read(bytes: &[u8]) -> Self;
    fn is_zero(self) -> bool {
        self == Self::default()
    }
    fn to_f64(self) -> f64;
    fn from_f64(x: f64) -> Self;
    /// The sum. Integers wrap (two's complement) instead of overflowing: updates come from other
    /// processes, and a counter must not be able to panic the server that applies them; debug
    /// and release builds then agree too.
    fn add(self, other: Self) -> Self;
    /// The difference, wrapping like `add` (so `a.add(b).sub(a) == b` for integers).
    fn sub(self, other: Self) -> Self;
}

macro_rules! element {
    ($t:ty, $name:literal, $add:expr, $sub:expr) => {
        impl Element for $t {
            const NAME: &'static str = $name;
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline]
            fn put(self, buf: &mut BytesMut) {
                buf.put_slice(&self.to_le_bytes());
            }
            #[inline]
            fn put_all(v: &[Self], buf: &mut BytesMut) {
                put_packed(buf, v, <$t>::to_le_bytes);
            }
            #[inline]
            fn get_all(raw: &[u8], out: &mut Vec<Self>) {
                get_packed(raw, out, <$t>::from_le_bytes);
            }
            #[inline]
            fn read(bytes: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(&bytes[..std::mem::size_of::<$t>()]);
                <$t>::from_le_bytes(a)
            }
            #[inline]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline]
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            #[inline]
            fn add(self, other: Self) -> Self {
                $add(self, other)
            }
            #[inline]
            fn sub(self, other: Self) -> Self {
                $sub(self, other)
            }
        }
    };
}
element!(i32, "i32", i32::wrapping_add, i32::wrapping_sub);
element!(i64, "i64", i64::wrapping_add, i64::wrapping_sub);
element!(f32, "f32", |a: f32, b: f32| a + b, |a: f32, b: f32| a - b);
element!(f64, "f64", |a: f64, b: f64| a + b, |a: f64, b: f64| a - b);

/// Appends `v` packed little-endian. On a little-endian machine that is the slice's own bytes:
/// one copy. Otherwise each element goes through `le`. (A `put_slice` call per element made
/// encoding rows the communication thread's largest cost; a zero-fill then a copy per element
/// cost half again as much as the one copy.)
#[inline]
pub(crate) fn put_packed<T: bytemuck::Pod, const N: usize>(buf: &mut BytesMut, v: &[T], le: impl Fn(T) -> [u8; N]) {
    if cfg!(target_endian = "little") {
        buf.extend_from_slice(bytemuck::cast_slice(v));
        return;
    }
    let start = buf.len();
    buf.resize(start + v.len() * N, 0);
    for (c, &x) in buf[start..].chunks_exact_mut(N).zip(v) {
        c.copy_from_slice(&le(x));
    }
}

/// Fills `out` with the packed little-endian elements in `raw` (whose length is a multiple of
/// the element size), reusing its allocation: one copy on a little-endian machine, and no
/// zero-fill when `out` already has the length (a row decoded into its previous version).
#[inline]
pub(crate) fn get_packed<T: bytemuck::Pod, const N: usize>(raw: &[u8], out: &mut Vec<T>, le: impl Fn([u8; N]) -> T) {
    out.resize(raw.len() / N, T::zeroed());
    if cfg!(target_endian = "little") {
        bytemuck::cast_slice_mut::<T, u8>(out).copy_from_slice(raw);
    } else {
        for (x, c) in out.iter_mut().zip(raw.chunks_exact(N)) {
            *x = le(c.try_into().expect("chunks of N"));
        }
    }
}

/// Cursor helpers for decoding untrusted bytes without panicking.
pub(crate) trait ReadExt {
    fn take_bytes(&mut self, n: usize) -> Result<&[u8]>;
    fn take_u8(&mut self) -> Result<u8>;
    fn take_u32(&mut self) -> Result<u32>;
    fn take_u64(&mut self) -> Result<u64>;
    fn take_i64(&mut self) -> Result<i64>;
}

impl ReadExt for &[u8] {
    #[inline]
    fn take_bytes(&mut self, n: usize) -> Result<&[u8]> {
        if self.len() < n {
            return Err(PsError::codec(format!("truncated: wanted {n} bytes, {} left", self.len())));
        }
        let (head, tail) = self.split_at(n);
        *self = tail;
        Ok(head)
    }
    fn take_u8(&mut self) -> Result<u8> {
        Ok(self.take_bytes(1)?[0])
    }
    fn take_u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take_bytes(4)?.try_into().unwrap()))
    }
    fn take_u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take_bytes(8)?.try_into().unwrap()))
    }
    fn take_i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.take_bytes(8)?.try_into().unwrap()))
    }
}

/// Reads a packed little-endian array of `n` elements.
pub(crate) fn read_array<T: Element>(buf: &mut &[u8], n: usize, out: &mut Vec<T>) -> Result<()> {
    let bytes = n.checked_mul(T::SIZE).ok_or_else(|| PsError::codec("array length overflow"))?;
    let raw = buf.take_bytes(bytes)?;
    T::get_all(raw, out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packed layout is little-endian whatever the machine, and decoding replaces whatever
    /// the reused vector held, whether it was longer or shorter.
    #[test]
    fn packed_arrays_are_little_endian_and_replace_the_reused_vector() {
        let v = [1.5f64, -2.0, f64::MAX];
        let mut buf = BytesMut::new();
        f64::put_all(&v, &mut buf);
        let want: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(&buf[..], &want[..]);
        for mut out in [vec![9.0f64; 7], vec![], vec![4.0]] {
            read_array(&mut &buf[..], 3, &mut out).unwrap();
            assert_eq!(out, v);
        }
        let mut buf = BytesMut::new();
        put_packed(&mut buf, &[0x0102_0304u32, 7], u32::to_le_bytes);
        assert_eq!(&buf[..], &[4, 3, 2, 1, 7, 0, 0, 0]);
        let mut cols = vec![5u32; 9];
        get_packed(&buf, &mut cols, u32::from_le_bytes);
        assert_eq!(cols, [0x0102_0304, 7]);
        assert!(read_array(&mut &buf[..5], 1, &mut vec![0f64]).is_err(), "5 bytes hold no f64");
    }
}
