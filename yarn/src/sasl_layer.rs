//! The DIGEST-MD5 security layer (RFC 2831 §2.3, §2.4) that Hadoop's RPC switches on when
//! `hadoop.rpc.protection` is `integrity` (qop `auth-int`: every message carries an HMAC-MD5) or
//! `privacy` (qop `auth-conf`: also encrypted, here with RC4, the stream cipher Java's SASL
//! server offers). Each direction has its own keys and sequence number; a message is
//! `[cipher](msg ‖ HMAC(Ki, seq ‖ msg)[..10]) ‖ 0x0001 ‖ seq`.

use crate::error::{Result, YarnError};
use crate::gssapi::Context;
use hmac::{KeyInit, Mac};
use md5::{Digest, Md5};
use rc4::{Rc4, StreamCipher};
use std::sync::{Arc, Mutex};

/// What a negotiated qop asks of every message after authentication.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Qop {
    Auth,
    AuthInt,
    AuthConf,
}

impl Qop {
    pub fn name(self) -> &'static str {
        match self {
            Qop::Auth => "auth",
            Qop::AuthInt => "auth-int",
            Qop::AuthConf => "auth-conf",
        }
    }
    pub fn parse(s: &str) -> Option<Qop> {
        [Qop::Auth, Qop::AuthInt, Qop::AuthConf].into_iter().find(|q| q.name() == s.trim())
    }
}

const MSG_TYPE: [u8; 2] = [0, 1];
/// MAC bytes kept, plus message type and sequence number.
const MAC_LEN: usize = 10;
const TRAILER: usize = MAC_LEN + 2 + 4;

fn md5(parts: &[&[u8]]) -> [u8; 16] {
    let mut h = Md5::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

fn mac(ki: &[u8; 16], seq: u32, msg: &[u8]) -> [u8; MAC_LEN] {
    let mut m = <hmac::Hmac<Md5> as KeyInit>::new_from_slice(ki).expect("HMAC takes any key length");
    m.update(&seq.to_be_bytes());
    m.update(msg);
    let full = m.finalize().into_bytes();
    let mut out = [0u8; MAC_LEN];
    out.copy_from_slice(&full[..MAC_LEN]);
    out
}

/// One direction of a DIGEST-MD5 layer.
pub struct DigestHalf {
    ki: [u8; 16],
    cipher: Option<Rc4>,
    seq: u32,
}

/// One direction of the layer: DIGEST-MD5's own (tokens), or GSSAPI's wrap and unwrap
/// (Kerberos; both directions share the one security context, which is not safe to use from
/// two threads at once, hence the lock).
pub enum Half {
    Digest(Box<DigestHalf>),
    Gss { ctx: Arc<Mutex<Context>>, confidential: bool },
}

/// The two halves: `send` wraps what we write, `recv` unwraps what the server wrote.
pub struct SecurityLayer {
    pub qop: Qop,
    pub send: Half,
    pub recv: Half,
    /// Largest plaintext per wrapped message, so a message stays within the server's `maxbuf`.
    pub max_plain: usize,
}

impl SecurityLayer {
    /// Keys from the binary H(A1) of the authentication (`md5(md5(user:realm:pw) : nonce : cnonce)`).
    pub fn new(qop: Qop, ha1: &[u8; 16], server_maxbuf: usize) -> Option<Self> {
        let key = |magic: &str| md5(&[ha1, magic.as_bytes()]);
        let seal = |magic: &str| {
            // rc4 uses all 16 bytes of H(A1) (n = 16 in §2.4).
            (qop == Qop::AuthConf).then(|| Rc4::new_from_slice(&md5(&[ha1, magic.as_bytes()])).expect("16-byte key"))
        };
        (qop != Qop::Auth).then(|| SecurityLayer {
            qop,
            send: Half::Digest(Box::new(DigestHalf {
                ki: key("Digest session key to client-to-server signing key magic constant"),
                cipher: seal("Digest H(A1) to client-to-server sealing key magic constant"),
                seq: 0,
            })),
            recv: Half::Digest(Box::new(DigestHalf {
                ki: key("Digest session key to server-to-client signing key magic constant"),
                cipher: seal("Digest H(A1) to server-to-client sealing key magic constant"),
                seq: 0,
            })),
            max_plain: server_maxbuf.saturating_sub(TRAILER).max(1),
        })
    }

    /// The GSSAPI layer of an established Kerberos context (RFC 4752): `AuthInt` signs every
    /// message, `AuthConf` also seals it. The Kerberos wrap token adds at most about 60 bytes
    /// (AES); 128 are kept free of the server's `maxbuf`.
    pub fn gss(ctx: Context, qop: Qop, server_maxbuf: usize) -> Self {
        let ctx = Arc::new(Mutex::new(ctx));
        let confidential = qop == Qop::AuthConf;
        SecurityLayer {
            qop,
            send: Half::Gss { ctx: ctx.clone(), confidential },
            recv: Half::Gss { ctx, confidential },
            max_plain: server_maxbuf.saturating_sub(128).max(1),
        }
    }
}

impl Half {
    pub fn wrap(&mut self, msg: &[u8]) -> Result<Vec<u8>> {
        match self {
            Half::Digest(d) => Ok(d.wrap(msg)),
            Half::Gss { ctx, confidential } => ctx.lock().unwrap_or_else(|e| e.into_inner()).wrap(msg, *confidential),
        }
    }

    /// Checks and strips one wrapped message. Never panics on what the network sent.
    pub fn unwrap(&mut self, token: &[u8]) -> Result<Vec<u8>> {
        match self {
            Half::Digest(d) => d.unwrap(token),
            Half::Gss { ctx, .. } => ctx.lock().unwrap_or_else(|e| e.into_inner()).unwrap(token),
        }
    }
}

impl DigestHalf {
    pub fn wrap(&mut self, msg: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(msg.len() + TRAILER);
        out.extend_from_slice(msg);
        out.extend_from_slice(&mac(&self.ki, self.seq, msg));
        if let Some(c) = &mut self.cipher {
            c.apply_keystream(&mut out);
        }
        out.extend_from_slice(&MSG_TYPE);
        out.extend_from_slice(&self.seq.to_be_bytes());
        self.seq = self.seq.wrapping_add(1);
        out
    }

    /// Checks and strips one wrapped message. Never panics on what the network sent.
    pub fn unwrap(&mut self, token: &[u8]) -> Result<Vec<u8>> {
        let bad = |m: String| YarnError::Codec(format!("SASL security layer: {m}"));
        if token.len() < TRAILER {
            return Err(bad(format!("a wrapped message of {} bytes is too short", token.len())));
        }
        let (body, tail) = token.split_at(token.len() - 6);
        if tail[..2] != MSG_TYPE {
            return Err(bad(format!("message type {:?} is not 1", &tail[..2])));
        }
        let seq = u32::from_be_bytes([tail[2], tail[3], tail[4], tail[5]]);
        if seq != self.seq {
            return Err(bad(format!("sequence number {seq}, expected {}", self.seq)));
        }
        let mut body = body.to_vec();
        if let Some(c) = &mut self.cipher {
            c.apply_keystream(&mut body);
        }
        let (msg, got) = body.split_at(body.len() - MAC_LEN);
        if mac(&self.ki, seq, msg) != got {
            return Err(bad(format!("the MAC of message {seq} does not match: altered, or keys differ")));
        }
        self.seq = self.seq.wrapping_add(1);
        Ok(msg.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client layer and the server's mirror image (halves swapped).
    fn pair(qop: Qop) -> (SecurityLayer, SecurityLayer) {
        let ha1 = md5(&[b"secret"]);
        let c = SecurityLayer::new(qop, &ha1, 100).unwrap();
        let mut s = SecurityLayer::new(qop, &ha1, 100).unwrap();
        std::mem::swap(&mut s.send, &mut s.recv);
        (c, s)
    }

    #[test]
    fn integrity_and_privacy_round_trip_in_order_and_detect_tampering() {
        assert!(SecurityLayer::new(Qop::Auth, &[0; 16], 100).is_none());
        for qop in [Qop::AuthInt, Qop::AuthConf] {
            let (mut c, mut s) = pair(qop);
            assert_eq!(c.max_plain, 84);
            for i in 0..3u8 {
                let msg = vec![i; 20 + i as usize];
                let w = c.send.wrap(&msg).unwrap();
                assert_eq!(w.len(), msg.len() + 16);
                // Integrity sends the message in the clear; privacy does not.
                assert_eq!(&w[..msg.len()] == msg.as_slice(), qop == Qop::AuthInt);
                assert_eq!(&w[w.len() - 4..], &(i as u32).to_be_bytes());
                assert_eq!(s.recv.unwrap(&w).unwrap(), msg);
                let back = s.send.wrap(b"reply").unwrap();
                assert_eq!(c.recv.unwrap(&back).unwrap(), b"reply");
            }
            let mut w = c.send.wrap(b"payload").unwrap();
            w[1] ^= 1;
            assert!(s.recv.unwrap(&w).unwrap_err().to_string().contains("MAC"), "{qop:?}");
            // A replayed or skipped message is refused by its sequence number.
            let (mut c, mut s) = pair(qop);
            let w0 = c.send.wrap(b"a").unwrap();
            let w1 = c.send.wrap(b"b").unwrap();
            assert!(s.recv.unwrap(&w1).unwrap_err().to_string().contains("sequence number 1, expected 0"));
            assert_eq!(s.recv.unwrap(&w0).unwrap(), b"a");
            for short in [&[][..], &[0; 15]] {
                assert!(s.recv.unwrap(short).is_err());
            }
        }
    }

    #[test]
    fn hmac_md5_matches_rfc2104() {
        // RFC 2104 test case 2: key "Jefe", data "what do ya want for nothing?".
        let mut m = <hmac::Hmac<Md5> as KeyInit>::new_from_slice(b"Jefe").unwrap();
        m.update(b"what do ya want for nothing?");
        assert_eq!(hex::encode(m.finalize().into_bytes()), "750c783e6ab0b503eaa86e310a5db738");
    }
}
