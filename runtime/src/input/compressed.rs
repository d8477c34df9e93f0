//! Compressed inputs (`.gz`, `.bz2`, `.zst`), chosen by file name extension as Hadoop's codec
//! factory does. A compressed stream cannot be entered in the middle, so such a file is one
//! unsplittable unit: it goes whole to the worker whose share holds its first byte
//! ([`super::plan_splits`]), and the readers see its decompressed bytes through [`Decoded`].

use crate::error::{PsError, Result};
use crate::storage::{Entry, OutFile, Storage};
use std::io::Read;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    Gzip,
    Bzip2,
    Zstd,
}

impl Codec {
    /// The codec of a file, by its name's extension (`None`: plain text).
    pub fn of(path: &str) -> Option<Codec> {
        let name = path.rsplit('/').next().unwrap_or(path);
        [(".gz", Codec::Gzip), (".bz2", Codec::Bzip2), (".zst", Codec::Zstd), (".zstd", Codec::Zstd)]
            .into_iter()
            .find(|(ext, _)| name.ends_with(ext))
            .map(|x| x.1)
    }

    /// A reader of the decompressed bytes. Concatenated members (`cat a.gz b.gz`, as some
    /// writers produce) are read through to the end, as Hadoop's codecs do.
    fn decoder(self, path: &str, r: Box<dyn Read + Send>) -> Result<Box<dyn Read + Send>> {
        Ok(match self {
            Codec::Gzip => Box::new(flate2::read::MultiGzDecoder::new(r)),
            Codec::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(r)),
            Codec::Zstd => Box::new(
                zstd::stream::read::Decoder::new(r)
                    .map_err(|e| PsError::io(format!("opening zstd input {path}"), e))?,
            ),
        })
    }
}

/// A view of a storage in which compressed files read as their decompressed bytes (offsets
/// count decompressed bytes); everything else passes through.
pub struct Decoded<'a>(pub &'a dyn Storage);

impl Decoded<'_> {
    fn open_decoded(&self, codec: Codec, path: &str, start: u64) -> Result<Box<dyn Read + Send>> {
        let mut r = codec.decoder(path, self.0.open(path, 0)?)?;
        // No seeking in a compressed stream: decompress up to `start` and drop it. Readers only
        // start past 0 for error messages and format checks.
        std::io::copy(&mut (&mut r).take(start), &mut std::io::sink())
            .map_err(|e| PsError::io(format!("decompressing {path}"), e))?;
        Ok(r)
    }
}

impl Storage for Decoded<'_> {
    fn entry(&self, url: &str) -> Result<Entry> {
        self.0.entry(url)
    }
    fn open(&self, path: &str, start: u64) -> Result<Box<dyn Read + Send>> {
        match Codec::of(path) {
            Some(c) => self.open_decoded(c, path, start),
            None => self.0.open(path, start),
        }
    }
    fn open_range(&self, path: &str, start: u64, end: u64) -> Result<Box<dyn Read + Send>> {
        match Codec::of(path) {
            Some(c) => self.open_decoded(c, path, start),
            None => self.0.open_range(path, start, end),
        }
    }
    fn read_at(&self, path: &str, start: u64, len: usize) -> Result<Vec<u8>> {
        match Codec::of(path) {
            Some(c) => crate::storage::read_via_open(self.open_decoded(c, path, start)?, path, start, len),
            None => self.0.read_at(path, start, len),
        }
    }
    fn create(&self, path: &str) -> Result<Box<dyn OutFile>> {
        self.0.create(path)
    }
    fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.0.rename(from, to)
    }
    fn exists(&self, path: &str) -> Result<bool> {
        self.0.exists(path)
    }
    fn delete(&self, path: &str) -> Result<()> {
        self.0.delete(path)
    }
    fn children(&self, dir: &str) -> Result<Vec<String>> {
        self.0.children(dir)
    }
    fn create_private_dir(&self, dir: &str) -> Result<()> {
        self.0.create_private_dir(dir)
    }
    fn set_mode(&self, path: &str, mode: u32) -> Result<()> {
        self.0.set_mode(path, mode)
    }
    fn status(&self, path: &str) -> Result<(u64, u64)> {
        self.0.status(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codecs_go_by_extension() {
        assert_eq!(Codec::of("hdfs://nn/d/part-0.gz"), Some(Codec::Gzip));
        assert_eq!(Codec::of("a.bz2"), Some(Codec::Bzip2));
        assert_eq!(Codec::of("/x/y.zst"), Some(Codec::Zstd));
        assert_eq!(Codec::of("/x.gz/ratings.tsv"), None, "a directory's name does not count");
        assert_eq!(Codec::of("ratings.tsv"), None);
    }
}
