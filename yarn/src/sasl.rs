//! DIGEST-MD5 (RFC 2831) as Hadoop's token SASL uses it: username = base64(token identifier),
//! password = base64(token password), realm and nonce from the server's challenge, digest-uri
//! `<protocol>/<serverId>` (Hadoop: `/default`). Only qop `auth` (no wrapping) is supported; a
//! server that requires integrity or privacy gets a clear error.

use crate::error::{Result, YarnError};
use base64::Engine;
use md5::{Digest, Md5};

/// Parses `key=value,key="quoted, value",...` into pairs.
pub fn parse_challenge(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && (b[i] == b',' || b[i] == b' ') {
            i += 1;
        }
        let k0 = i;
        while i < b.len() && b[i] != b'=' {
            i += 1;
        }
        let key = s[k0..i].trim().to_string();
        i += 1;
        let mut val = String::new();
        if i < b.len() && b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && i + 1 < b.len() {
                    i += 1;
                }
                val.push(b[i] as char);
                i += 1;
            }
            i += 1;
        } else {
            let v0 = i;
            while i < b.len() && b[i] != b',' {
                i += 1;
            }
            val = s[v0.min(b.len())..i].trim().to_string();
        }
        if !key.is_empty() {
            out.push((key, val));
        }
    }
    out
}

fn md5(parts: &[&[u8]]) -> [u8; 16] {
    let mut h = Md5::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// One DIGEST-MD5 authentication.
#[derive(Debug)]
pub struct DigestMd5 {
    pub username: String,
    pub password: String,
    pub realm: String,
    pub nonce: String,
    pub cnonce: String,
    pub digest_uri: String,
}

impl DigestMd5 {
    fn ha1(&self) -> String {
        let inner = md5(&[self.username.as_bytes(), b":", self.realm.as_bytes(), b":", self.password.as_bytes()]);
        hex::encode(md5(&[&inner, b":", self.nonce.as_bytes(), b":", self.cnonce.as_bytes()]))
    }

    fn kd(&self, a2: &str) -> String {
        let ha2 = hex::encode(md5(&[a2.as_bytes()]));
        let s = format!("{}:{}:00000001:{}:auth:{ha2}", self.ha1(), self.nonce, self.cnonce);
        hex::encode(md5(&[s.as_bytes()]))
    }

    /// The `response=` value (A2 = `AUTHENTICATE:<digest-uri>`).
    pub fn response(&self) -> String {
        self.kd(&format!("AUTHENTICATE:{}", self.digest_uri))
    }

    /// The `rspauth=` value the server must send back (A2 = `:<digest-uri>`).
    pub fn rspauth(&self) -> String {
        self.kd(&format!(":{}", self.digest_uri))
    }

    /// The client's digest-response string.
    pub fn response_string(&self) -> String {
        format!(
            "charset=utf-8,username=\"{}\",realm=\"{}\",nonce=\"{}\",nc=00000001,cnonce=\"{}\",digest-uri=\"{}\",maxbuf=65536,response={},qop=auth",
            self.username,
            self.realm,
            self.nonce,
            self.cnonce,
            self.digest_uri,
            self.response()
        )
    }

    /// Builds the exchange from a Hadoop token and the server's challenge.
    pub fn for_token(
        identifier: &[u8],
        password: &[u8],
        challenge: &str,
        digest_uri: &str,
        server: &str,
    ) -> Result<Self> {
        let kv = parse_challenge(challenge);
        let get = |k: &str| kv.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        let err = |m: String| YarnError::Sasl { server: server.to_string(), message: m };
        let qops = get("qop").unwrap_or_else(|| "auth".into());
        if !qops.split(',').any(|q| q.trim() == "auth") {
            return Err(err(format!(
                "the server requires qop '{qops}' (hadoop.rpc.protection integrity/privacy); only 'auth' is supported"
            )));
        }
        if let Some(a) = get("algorithm") {
            if a != "md5-sess" {
                return Err(err(format!("unsupported DIGEST-MD5 algorithm '{a}'")));
            }
        }
        let nonce = get("nonce").ok_or_else(|| err(format!("challenge without a nonce: {challenge}")))?;
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut c = [0u8; 12];
        rand::RngCore::fill_bytes(&mut rand::thread_rng(), &mut c);
        Ok(DigestMd5 {
            username: b64.encode(identifier),
            password: b64.encode(password),
            realm: get("realm").unwrap_or_default(),
            nonce,
            cnonce: b64.encode(c),
            digest_uri: digest_uri.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc2831_example() {
        let d = DigestMd5 {
            username: "chris".into(),
            password: "secret".into(),
            realm: "elwood.innosoft.com".into(),
            nonce: "OA6MG9tEQGm2hh".into(),
            cnonce: "OA6MHXh6VqTrRk".into(),
            digest_uri: "imap/elwood.innosoft.com".into(),
        };
        assert_eq!(d.response(), "d388dad90d4bbd760a152321f2143af7");
        assert_eq!(d.rspauth(), "ea40f60335c427b5527b84dbabcdfffd");
    }

    #[test]
    fn challenge_parsing_and_qop_check() {
        let ch = r#"realm="default",nonce="abc,def",qop="auth,auth-int",charset=utf-8,algorithm=md5-sess"#;
        let kv = parse_challenge(ch);
        assert!(kv.contains(&("nonce".into(), "abc,def".into())));
        assert!(kv.contains(&("charset".into(), "utf-8".into())));
        let d = DigestMd5::for_token(b"id", b"pw", ch, "/default", "rm").unwrap();
        assert_eq!((d.username.as_str(), d.password.as_str(), d.realm.as_str()), ("aWQ=", "cHc=", "default"));
        let e = DigestMd5::for_token(b"id", b"pw", r#"nonce="x",qop="auth-conf""#, "/default", "rm").unwrap_err();
        assert!(e.to_string().contains("only 'auth' is supported"), "{e}");
    }
}
