//! Local files (`file://` URLs and plain paths).

use super::{DirEntry, Entry, OutFile, Storage};
use crate::error::{PsError, Result};
use std::io::{Read, Seek, SeekFrom};

struct LocalOut {
    w: std::io::BufWriter<std::fs::File>,
    path: String,
    /// Bytes accepted, and how many of them the kernel was asked to start writing back.
    written: u64,
    kicked: u64,
}

/// Every this many bytes, writeback of what was written is started (not waited for), as
/// RocksDB's `bytes_per_sync` does: the disk works while the rest is produced, so the `fsync`
/// at close waits for the last window only, and dirty pages stay bounded.
const WRITEBACK_WINDOW: u64 = 8 << 20;

impl LocalOut {
    fn start_writeback(&mut self) -> std::io::Result<()> {
        use std::io::Write;
        self.w.flush()?;
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let (from, len) = (self.kicked as i64, (self.written - self.kicked) as i64);
            // Only a hint: a file system that cannot do it still gets the fsync at close.
            // SAFETY: a plain system call on a descriptor this struct owns.
            unsafe { libc::sync_file_range(self.w.get_ref().as_raw_fd(), from, len, libc::SYNC_FILE_RANGE_WRITE) };
        }
        self.kicked = self.written;
        Ok(())
    }
}

impl std::io::Write for LocalOut {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let n = self.w.write(b)?;
        self.written += n as u64;
        if self.written - self.kicked >= WRITEBACK_WINDOW {
            self.start_writeback()?;
        }
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

impl OutFile for LocalOut {
    fn close(mut self: Box<Self>) -> Result<()> {
        use std::io::Write;
        self.w.flush().map_err(|e| PsError::io(format!("writing {}", self.path), e))?;
        self.w.get_ref().sync_all().map_err(|e| PsError::io(format!("syncing {}", self.path), e))
    }
}

/// Local files.
pub struct LocalFs;

fn local_path(url: &str) -> &str {
    url.strip_prefix("file://").unwrap_or(url)
}

impl Storage for LocalFs {
    fn entry(&self, url: &str) -> Result<Entry> {
        let p = local_path(url);
        let meta = std::fs::metadata(p).map_err(|e| PsError::io(format!("input {url}"), e))?;
        if meta.is_file() {
            return Ok(Entry::File(meta.len()));
        }
        let mut out = Vec::new();
        for e in std::fs::read_dir(p).map_err(|e| PsError::io(format!("listing {url}"), e))? {
            let e = e.map_err(|e| PsError::io(format!("listing {url}"), e))?;
            // Follows symbolic links, as reading the file would.
            let m =
                std::fs::metadata(e.path()).map_err(|err| PsError::io(format!("stat {}", e.path().display()), err))?;
            let name = e.file_name().to_string_lossy().to_string();
            out.push(DirEntry { name, len: m.is_file().then_some(m.len()) });
        }
        Ok(Entry::Dir(out))
    }

    fn create(&self, path: &str) -> Result<Box<dyn OutFile>> {
        let p = std::path::Path::new(local_path(path));
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).map_err(|e| PsError::io(format!("creating directory {}", d.display()), e))?;
        }
        let f = std::fs::File::create(p).map_err(|e| PsError::io(format!("creating {path}"), e))?;
        Ok(Box::new(LocalOut {
            w: std::io::BufWriter::with_capacity(1 << 20, f),
            path: path.to_string(),
            written: 0,
            kicked: 0,
        }))
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        let to_p = std::path::Path::new(local_path(to));
        if let Some(d) = to_p.parent() {
            std::fs::create_dir_all(d).map_err(|e| PsError::io(format!("creating directory {}", d.display()), e))?;
        }
        std::fs::rename(local_path(from), to_p).map_err(|e| PsError::io(format!("renaming {from} to {to}"), e))
    }

    fn exists(&self, path: &str) -> Result<bool> {
        Ok(std::path::Path::new(local_path(path)).exists())
    }

    fn delete(&self, path: &str) -> Result<()> {
        let p = std::path::Path::new(local_path(path));
        let r = if p.is_dir() { std::fs::remove_dir_all(p) } else { std::fs::remove_file(p) };
        match r {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(PsError::io(format!("deleting {path}"), e)),
            _ => Ok(()),
        }
    }

    fn status(&self, path: &str) -> Result<(u64, u64)> {
        let m = std::fs::metadata(local_path(path)).map_err(|e| PsError::io(format!("stat {path}"), e))?;
        let mtime = m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        Ok((m.len(), mtime.map_or(0, |d| d.as_millis() as u64)))
    }

    fn set_mode(&self, path: &str, mode: u32) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(local_path(path), std::fs::Permissions::from_mode(mode))
            .map_err(|e| PsError::io(format!("setting the permissions of {path} to {mode:o}"), e))
    }

    fn create_private_dir(&self, dir: &str) -> Result<()> {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
        let p = std::path::Path::new(local_path(dir));
        let what = |e: std::io::Error| PsError::io(format!("creating private directory {dir}"), e);
        if let Some(parent) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(what)?;
        }
        match std::fs::DirBuilder::new().mode(0o700).create(p) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                // Reuse only a real directory of ours: not a symlink, not someone else's.
                let m = std::fs::symlink_metadata(p).map_err(what)?;
                // SAFETY: geteuid has no preconditions.
                let me = unsafe { libc::geteuid() };
                if !m.is_dir() || m.uid() != me {
                    return Err(PsError::Config(format!(
                        "{dir} exists and is not a directory owned by this user; refusing to keep job files there"
                    )));
                }
            }
            r => r.map_err(what)?,
        }
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700)).map_err(what)
    }

    fn children(&self, dir: &str) -> Result<Vec<String>> {
        let mut v = Vec::new();
        for e in std::fs::read_dir(local_path(dir)).map_err(|e| PsError::io(format!("listing {dir}"), e))? {
            let e = e.map_err(|e| PsError::io(format!("listing {dir}"), e))?;
            v.push(e.file_name().to_string_lossy().to_string());
        }
        v.sort();
        Ok(v)
    }

    fn open(&self, path: &str, start: u64) -> Result<Box<dyn Read + Send>> {
        let mut f = std::fs::File::open(path).map_err(|e| PsError::io(format!("opening {path}"), e))?;
        if start > 0 {
            f.seek(SeekFrom::Start(start)).map_err(|e| PsError::io(format!("seeking {path} to {start}"), e))?;
        }
        Ok(Box::new(f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_file_written_across_writeback_windows_reads_back_whole() {
        let dir = std::env::temp_dir().join(format!("ps-local-out-{}", std::process::id()));
        let path = dir.join("part").to_string_lossy().to_string();
        // Odd-sized writes, some larger than the buffer, that cross several windows.
        let data: Vec<u8> = (0..(2 * WRITEBACK_WINDOW + 12_345)).map(|i| (i * 7 % 251) as u8).collect();
        let mut f = LocalFs.create(&path).unwrap();
        for piece in data.chunks(3_000_001) {
            f.write_all(piece).unwrap();
        }
        f.close().unwrap();
        let back = std::fs::read(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(back == data, "{} bytes read back, {} written", back.len(), data.len());
    }
}
