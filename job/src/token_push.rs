//! Fresh delegation tokens for the processes of a job that outlives its tokens. On a secure YARN
//! cluster with `--principal`/`--keytab`, the application master logs in from the keytab and
//! obtains new HDFS tokens before the old ones expire; it sends the new credentials file down
//! each process's rendezvous connection, and the process puts it where its HDFS client reads
//! tokens (`HADOOP_TOKEN_FILE_LOCATION`, read again for every new connection):
//!
//! ```text
//! AM -> process   tokens <seq> <nonce> <sealed>
//! ```
//!
//! `sealed` is the credentials file (Hadoop's `HDTS` format, the job secret included) under
//! ChaCha20-Poly1305 with a key derived from the job secret, and the application id and `seq`
//! as associated data: tokens are secrets, and the rendezvous port is open to anyone who can
//! reach the AM, so only the job's processes can read them and a recorded line cannot be
//! replayed into another job. The file is replaced atomically (a temporary file renamed over it),
//! so a client never reads half of it.

use crate::rendezvous::{hex, hex_decode as unhex, AmLink};
use ps_runtime::secret;
use ps_runtime::{PsError, Result};
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};
use std::io::{BufRead, Write};
use std::path::Path;

/// Longest `tokens` line either side accepts (a credentials file of a few tokens is about 1 KB).
pub const MAX_TOKENS_LINE: usize = 256 * 1024;
const PREFIX: &str = "tokens ";
const KEY_LABEL: &str = "ps-tokens-key";

fn key(job_secret: &[u8], app: &str) -> LessSafeKey {
    let k = secret::mac(job_secret, KEY_LABEL, &[app.as_bytes()]);
    LessSafeKey::new(UnboundKey::new(&CHACHA20_POLY1305, &k).expect("a 32-byte key"))
}

fn aad(app: &str, seq: u64) -> Vec<u8> {
    [app.as_bytes(), b"\0", &seq.to_le_bytes()].concat()
}

/// The `tokens` line carrying credentials file `creds` as refresh number `seq` of application
/// `app`.
pub fn seal(job_secret: &[u8], app: &str, seq: u64, creds: &[u8]) -> String {
    let mut nonce = [0u8; NONCE_LEN];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut nonce);
    let mut data = creds.to_vec();
    key(job_secret, app)
        .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(aad(app, seq)), &mut data)
        .expect("sealing fits in memory");
    format!("{PREFIX}{seq} {} {}\n", hex(&nonce), hex(&data))
}

/// The refresh number and credentials file of a `tokens` line; `None` for any other line.
pub fn open(job_secret: &[u8], app: &str, line: &str) -> Option<Result<(u64, Vec<u8>)>> {
    let rest = line.trim_end().strip_prefix(PREFIX)?;
    let bad = |why: &str| Some(Err(PsError::codec(format!("a tokens line from the application master: {why}"))));
    let mut f = rest.split(' ');
    let (Some(seq), Some(nonce), Some(data), None) = (f.next(), f.next(), f.next(), f.next()) else {
        return bad("not three fields");
    };
    let Ok(seq) = seq.parse::<u64>() else { return bad("no refresh number") };
    let (Some(nonce), Some(mut data)) = (unhex(nonce), unhex(data)) else { return bad("not hex") };
    let Ok(nonce) = <[u8; NONCE_LEN]>::try_from(nonce) else { return bad("a nonce of the wrong length") };
    let k = key(job_secret, app);
    match k.open_in_place(Nonce::assume_unique_for_key(nonce), Aad::from(aad(app, seq)), &mut data) {
        Ok(plain) => Some(Ok((seq, plain.to_vec()))),
        Err(_) => bad("it does not authenticate under the job secret"),
    }
}

/// Replaces the credentials file at `path` with `creds`: written beside it (owner-only), then
/// renamed over it.
pub fn install(path: &Path, creds: &[u8]) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("ps-new");
    let what = |e| PsError::io(format!("replacing the credentials file {}", path.display()), e);
    let mut f =
        std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp).map_err(what)?;
    f.write_all(creds).and_then(|_| f.sync_all()).map_err(what)?;
    std::fs::rename(&tmp, path).map_err(what)
}

/// Reads the AM's lines on `link` until it closes the connection, installing each credentials
/// file it sends at `path` (on a thread of its own; a line that does not authenticate is logged
/// and skipped).
pub fn take_from(link: &AmLink, job_secret: &[u8], app: &str, path: std::path::PathBuf) -> Result<()> {
    listen(link.reader()?, job_secret.to_vec(), app.to_string(), path);
    Ok(())
}

fn listen(r: impl BufRead + Send + 'static, job_secret: Vec<u8>, app: String, path: std::path::PathBuf) {
    let run = move || {
        let mut r = r;
        while let Ok(Some(line)) = crate::rendezvous::read_line_bounded(&mut r, MAX_TOKENS_LINE) {
            match open(&job_secret, &app, &line) {
                Some(Ok((seq, creds))) => match install(&path, &creds) {
                    Ok(()) => log::info!("fresh delegation tokens from the application master (refresh {seq})"),
                    Err(e) => log::warn!("{e}"),
                },
                Some(Err(e)) => log::warn!("{e}"),
                None => log::warn!("the application master sent an unknown line ({} bytes)", line.len()),
            }
        }
    };
    if let Err(e) = std::thread::Builder::new().name("ps-tokens".into()).spawn(run) {
        log::warn!("no token refreshes: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_line_opens_only_for_its_job_and_installs_atomically() {
        let (secret, creds) = ([7u8; 32], b"HDTS\0 some tokens".to_vec());
        let line = seal(&secret, "application_1_0001", 3, &creds);
        assert!(line.ends_with('\n') && line.len() < MAX_TOKENS_LINE && !line.contains("some tokens"));
        assert_eq!(open(&secret, "application_1_0001", &line).unwrap().unwrap(), (3, creds.clone()));
        assert!(open(&[8u8; 32], "application_1_0001", &line).unwrap().is_err(), "another secret");
        assert!(open(&secret, "application_1_0002", &line).unwrap().is_err(), "another job");
        let replayed = line.replacen("tokens 3 ", "tokens 4 ", 1);
        assert!(open(&secret, "application_1_0001", &replayed).unwrap().is_err(), "another refresh number");
        assert!(open(&secret, "application_1_0001", "tokens x y").unwrap().is_err());
        assert!(open(&secret, "application_1_0001", "hosts 2 ab").is_none());
        let dir = std::env::temp_dir().join(format!("ps-token-push-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("container_tokens");
        std::fs::write(&path, b"old").unwrap();
        install(&path, &creds).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), creds);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary file left");
        std::fs::remove_dir_all(&dir).ok();
    }
}
