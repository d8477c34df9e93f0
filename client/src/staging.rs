//! What `yarn-submit --master yarn` puts on HDFS: the job's own files in its staging directory,
//! and the binaries in a per-user cache keyed by content hash
//! (`/user/<user>/.ps-staging/cache/<sha256>`), so a binary is uploaded once and every later job
//! (and every NodeManager's private localization cache) reuses it.

use crate::error::{ClientError, Result};
use ps_runtime::storage::{storage_for, Storage};
use ps_yarn::submit::LocalResource;
use sha2::{Digest, Sha256};
use std::path::Path;

/// Cache entries kept: the newest ones by upload time (a few builds' worth of binaries).
const CACHE_KEEP: usize = 12;

/// Uploads `data` to `url` and returns it as a LocalResource (size and mtime read back from HDFS).
pub fn stage(url: &str, data: &[u8], visibility: &str) -> Result<LocalResource> {
    let st = storage_for(url).map_err(ClientError::Storage)?;
    st.write_file(url, data).map_err(|source| ClientError::Upload { url: url.to_string(), source })?;
    resource(st.as_ref(), url, visibility)
}

/// The keytab at `path`, staged as `<staging>/<name>` readable by its owner only (0400, in the
/// private staging directory), for the AM alone (APPLICATION visibility).
pub fn stage_keytab(staging: &str, name: &str, path: &Path) -> Result<LocalResource> {
    let url = format!("{staging}/{name}");
    let r = stage(&url, &read(path)?, "APPLICATION")?;
    storage_for(&url).and_then(|st| st.set_mode(&url, 0o400)).map_err(ClientError::Storage)?;
    Ok(r)
}

fn resource(st: &dyn Storage, url: &str, visibility: &str) -> Result<LocalResource> {
    let (size, timestamp) = st.status(url).map_err(ClientError::Storage)?;
    Ok(LocalResource { resource: url.to_string(), kind: "FILE".into(), visibility: visibility.into(), size, timestamp })
}

pub fn read(p: &Path) -> Result<Vec<u8>> {
    std::fs::read(p).map_err(|source| ClientError::ReadFile { path: p.to_path_buf(), source })
}

/// The binary at `path` in the cache under `cache` (a private directory): reused when a file
/// with its SHA-256 is there, else uploaded under a temporary name and renamed into place (two
/// jobs uploading the same binary at once both end with one good copy). PRIVATE visibility: the
/// NodeManagers keep it in this user's localization cache across applications.
pub fn cached_binary(cache: &str, path: &Path) -> Result<LocalResource> {
    let data = read(path)?;
    let hash = hex::encode(Sha256::digest(&data));
    let url = format!("{cache}/{hash}");
    let st = storage_for(cache).map_err(ClientError::Storage)?;
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    if st.exists(&url).map_err(ClientError::Storage)? {
        log::info!("{name}: reusing {url}");
        return resource(st.as_ref(), &url, "PRIVATE");
    }
    st.create_private_dir(cache).map_err(ClientError::StagingDir)?;
    let tmp = format!("{cache}/.{hash}.{}", uuid_like());
    log::info!("{name}: uploading {:.1} MB to {url}", data.len() as f64 / 1e6);
    stage(&tmp, &data, "PRIVATE")?;
    if let Err(e) = st.rename(&tmp, &url) {
        // Someone else renamed the same content into place first: theirs is as good as ours.
        let _ = st.delete(&tmp);
        if !st.exists(&url).map_err(ClientError::Storage)? {
            return Err(ClientError::Storage(e));
        }
    }
    prune(st.as_ref(), cache);
    resource(st.as_ref(), &url, "PRIVATE")
}

/// A name no concurrent upload shares.
fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{}-{nanos}", std::process::id())
}

/// Keeps the `CACHE_KEEP` newest entries. Failures only warn: the job does not depend on it.
fn prune(st: &dyn Storage, cache: &str) {
    let r = st.children(cache).and_then(|names| {
        let mut entries = Vec::new();
        for n in names.into_iter().filter(|n| !n.starts_with('.')) {
            let url = format!("{cache}/{n}");
            entries.push((st.status(&url)?.1, url));
        }
        entries.sort();
        let excess = entries.len().saturating_sub(CACHE_KEEP);
        for (_, url) in &entries[..excess] {
            log::info!("removing the old cached binary {url}");
            st.delete(url)?;
        }
        Ok(())
    });
    if let Err(e) = r {
        log::warn!("pruning the binary cache {cache}: {e}");
    }
}

/// The newest `GLIBC_2.x` symbol version a binary refers to (by scanning its bytes for the
/// version names its dynamic section lists), if any.
pub fn glibc_needed(data: &[u8]) -> Option<(u32, u32)> {
    let pat = b"GLIBC_2.";
    let mut best = None;
    let mut i = 0;
    while let Some(off) = data[i..].windows(pat.len()).position(|w| w == pat) {
        let start = i + off + pat.len();
        let digits: String = data[start..].iter().take_while(|b| b.is_ascii_digit()).map(|&b| b as char).collect();
        if let Ok(minor) = digits.parse::<u32>() {
            best = best.max(Some((2, minor)));
        }
        i = start;
    }
    best
}

/// Warns when a binary about to be shipped needs a newer glibc than common cluster nodes have.
pub fn warn_if_not_portable(path: &Path) {
    let Ok(data) = std::fs::read(path) else { return };
    if let Some((2, minor)) = glibc_needed(&data).filter(|v| *v > (2, 17)) {
        log::warn!(
            "{} needs glibc 2.{minor}: nodes with an older one (RHEL 7/8, Amazon Linux 2) cannot start it; \
             build portable binaries with scripts/package.sh and run dist/yarn-submit",
            path.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_glibc_version_is_found() {
        let bin = b"\x00GLIBC_2.2.5\x00GLIBC_2.17\x00GLIBC_2.3\x00GLIBC_PRIVATE\x00GLIBC_2.34\x00GLIBC_2.";
        assert_eq!(glibc_needed(bin), Some((2, 34)));
        assert_eq!(glibc_needed(b"nothing here"), None);
        // This very test binary refers to some glibc version.
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(glibc_needed(&me).is_some());
    }
}
