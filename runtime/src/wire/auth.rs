//! Connection handshake: both sides prove knowledge of the per-job secret with HMAC-SHA256 over
//! fresh nonces, so a stray or hostile connection is refused before it can send a single message.
//!
//! acceptor -> connector: MAGIC, nonce_a (32 bytes)
//! connector -> acceptor: pid (u32), nonce_c, HMAC(secret, "connect" | nonce_a | nonce_c | pid)
//! acceptor -> connector: HMAC(secret, "accept" | nonce_a | nonce_c | pid)

use crate::error::{PsError, Result};
use bytes::{BufMut, Bytes, BytesMut};
use futures::{SinkExt, StreamExt};
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use tokio::net::TcpStream;
use tokio_util::codec::{Framed, LengthDelimitedCodec};

const MAGIC: &[u8; 6] = b"PSHS01";
type HmacSha256 = Hmac<Sha256>;

fn mac(secret: &[u8], label: &[u8], na: &[u8], nc: &[u8], pid: u32) -> HmacSha256 {
    let mut m = HmacSha256::new_from_slice(secret).expect("HMAC takes any key length");
    m.update(label);
    m.update(na);
    m.update(nc);
    m.update(&pid.to_le_bytes());
    m
}

fn nonce() -> [u8; 32] {
    let mut n = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut n);
    n
}

type Conn = Framed<TcpStream, LengthDelimitedCodec>;

async fn next_frame(conn: &mut Conn) -> Result<BytesMut> {
    match conn.next().await {
        Some(Ok(f)) => Ok(f),
        Some(Err(e)) => Err(PsError::io("handshake read", e)),
        None => Err(PsError::Io("handshake: connection closed".into())),
    }
}

/// Acceptor side. Returns the authenticated peer's process id.
pub async fn accept(conn: &mut Conn, secret: &[u8], num_procs: usize) -> Result<usize> {
    let na = nonce();
    let mut hello = BytesMut::with_capacity(38);
    hello.put_slice(MAGIC);
    hello.put_slice(&na);
    conn.send(hello.freeze()).await.map_err(|e| PsError::io("handshake write", e))?;
    let f = next_frame(conn).await?;
    if f.len() != 4 + 32 + 32 {
        return Err(PsError::Io(format!("handshake: bad reply length {}", f.len())));
    }
    let pid = u32::from_le_bytes(f[..4].try_into().unwrap());
    let nc = &f[4..36];
    mac(secret, b"connect", &na, nc, pid)
        .verify_slice(&f[36..])
        .map_err(|_| PsError::Io("handshake: wrong job secret".into()))?;
    if pid as usize >= num_procs {
        return Err(PsError::Io(format!("handshake: process id {pid} not in hostfile")));
    }
    let proof = mac(secret, b"accept", &na, nc, pid).finalize().into_bytes();
    conn.send(Bytes::copy_from_slice(&proof)).await.map_err(|e| PsError::io("handshake write", e))?;
    Ok(pid as usize)
}

/// Connector side: proves our identity `pid` and checks the acceptor's proof.
pub async fn connect(conn: &mut Conn, secret: &[u8], pid: usize) -> Result<()> {
    let f = next_frame(conn).await?;
    if f.len() != 38 || &f[..6] != MAGIC {
        return Err(PsError::Io("handshake: peer is not a ps-runtime process".into()));
    }
    let na = &f[6..];
    let nc = nonce();
    let pid = pid as u32;
    let tag = mac(secret, b"connect", na, &nc, pid).finalize().into_bytes();
    let mut out = BytesMut::with_capacity(68);
    out.put_u32_le(pid);
    out.put_slice(&nc);
    out.put_slice(&tag);
    conn.send(out.freeze()).await.map_err(|e| PsError::io("handshake write", e))?;
    let proof = next_frame(conn).await?;
    mac(secret, b"accept", na, &nc, pid)
        .verify_slice(&proof)
        .map_err(|_| PsError::Io("handshake: peer does not know the job secret".into()))
}
