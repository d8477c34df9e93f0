//! The job secret: 32 random bytes that every process of one job shares and nobody else knows.
//! It keys the handshake of every connection between processes (and the per-connection frame keys
//! derived from it, `wire::auth`) and the YARN rendezvous (`ps_job::rendezvous`).
//!
//! Where it lives: a local job keeps it in `<job dir>/secret` (mode 0600, in a 0700 directory,
//! created fresh for every run); a YARN job hands it to its containers in the secret map of their
//! credentials (`$HADOOP_TOKEN_FILE_LOCATION`, alias [`CREDENTIALS_ALIAS`]), never as a file in
//! the HDFS staging directory.

use crate::error::{PsError, Result};
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Size of the secrets the launchers create.
pub const SECRET_BYTES: usize = 32;
/// Shorter secrets are refused: 128 bits is the least a brute-force search must face.
pub const MIN_SECRET_BYTES: usize = 16;
/// Alias of the job secret in the credentials of YARN containers.
pub const CREDENTIALS_ALIAS: &str = "ps.job.secret";

/// A fresh random secret from the operating system's generator.
pub fn generate() -> [u8; SECRET_BYTES] {
    let mut s = [0u8; SECRET_BYTES];
    rand::rngs::OsRng.fill_bytes(&mut s);
    s
}

/// Refuses a secret too short to resist guessing; `source` says where it came from.
pub fn check(secret: &[u8], source: &str) -> Result<()> {
    if secret.len() < MIN_SECRET_BYTES {
        return Err(PsError::Config(format!(
            "job secret {source} is {} bytes; at least {MIN_SECRET_BYTES} are required",
            secret.len()
        )));
    }
    Ok(())
}

/// Writes `secret` to a new file at `path`, readable by its owner only. An existing file or
/// symlink there is removed first, never reused or followed: `O_EXCL | O_NOFOLLOW` make the
/// create fail rather than write through a link someone planted.
pub fn write_new_file(path: &Path, secret: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    f.write_all(secret)?;
    f.sync_all()
}

/// Reads a secret file, refusing symlinks and files that other users can read.
pub fn read_file(path: &Path) -> Result<Vec<u8>> {
    let what = |e: std::io::Error| PsError::io(format!("reading job secret {}", path.display()), e);
    let mut f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path).map_err(what)?;
    let mode = f.metadata().map_err(what)?.mode();
    if mode & 0o077 != 0 {
        return Err(PsError::Config(format!(
            "job secret {} is readable by other users (mode {:o}); it must be 0600",
            path.display(),
            mode & 0o777
        )));
    }
    let mut s = Vec::new();
    f.by_ref().take(4096).read_to_end(&mut s).map_err(what)?;
    check(&s, &path.display().to_string())?;
    Ok(s)
}

/// The secret handed to a YARN container in its credentials (`$HADOOP_TOKEN_FILE_LOCATION`).
pub fn from_container_credentials(alias: &str) -> Result<Vec<u8>> {
    let file = std::env::var("HADOOP_TOKEN_FILE_LOCATION").map_err(|_| {
        PsError::Config("HADOOP_TOKEN_FILE_LOCATION is not set: the job secret comes from YARN credentials".into())
    })?;
    let creds = ps_hadoop::credentials::Credentials::read_file(Path::new(&file))
        .map_err(|e| PsError::Config(format!("reading the container credentials: {e}")))?;
    let s = creds.secrets.iter().find(|(a, _)| a == alias).map(|(_, s)| s.clone()).ok_or_else(|| {
        PsError::Config(format!("the container credentials {file} hold no secret '{alias}' (the job secret)"))
    })?;
    check(&s, &format!("'{alias}' of {file}"))?;
    Ok(s)
}

type HmacSha256 = Hmac<Sha256>;

fn mac_of(secret: &[u8], label: &str, fields: &[&[u8]]) -> HmacSha256 {
    let mut m = HmacSha256::new_from_slice(secret).expect("HMAC takes any key length");
    // Every field is length-prefixed, so no two field lists give the same input.
    for f in std::iter::once(label.as_bytes()).chain(fields.iter().copied()) {
        m.update(&(f.len() as u32).to_le_bytes());
        m.update(f);
    }
    m
}

/// HMAC-SHA256 under `secret` of a labelled list of fields.
pub fn mac(secret: &[u8], label: &str, fields: &[&[u8]]) -> [u8; 32] {
    mac_of(secret, label, fields).finalize().into_bytes().into()
}

/// Checks a tag made by [`mac`] in constant time.
pub fn verify(secret: &[u8], label: &str, fields: &[&[u8]], tag: &[u8]) -> bool {
    mac_of(secret, label, fields).verify_slice(tag).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn secret_files_are_fresh_private_and_checked() {
        let d = std::env::temp_dir().join(format!("ps-secret-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        // A planted symlink is replaced, not followed: its target stays untouched.
        let target = d.join("target");
        std::fs::write(&target, b"do not overwrite").unwrap();
        let p = d.join("secret");
        std::os::unix::fs::symlink(&target, &p).unwrap();
        let s = generate();
        write_new_file(&p, &s).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"do not overwrite");
        assert!(!std::fs::symlink_metadata(&p).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(read_file(&p).unwrap(), s);
        // Readable by others, too short, or a symlink: refused with a message saying why.
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(read_file(&p).unwrap_err().to_string().contains("readable by other users"));
        write_new_file(&p, b"short").unwrap();
        assert!(read_file(&p).unwrap_err().to_string().contains("at least 16"));
        let link = d.join("link");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        assert!(read_file(&link).is_err());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn macs_separate_fields_and_labels() {
        let k = [7u8; 32];
        let t = mac(&k, "a", &[b"xy", b"z"]);
        assert!(verify(&k, "a", &[b"xy", b"z"], &t));
        assert!(!verify(&k, "a", &[b"x", b"yz"], &t));
        assert!(!verify(&k, "b", &[b"xy", b"z"], &t));
        assert!(!verify(&[8u8; 32], "a", &[b"xy", b"z"], &t));
    }
}
