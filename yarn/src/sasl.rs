//! DIGEST-MD5 (RFC 2831) as Hadoop's token SASL uses it: username = base64(token identifier),
//! password = base64(token password), realm and nonce from the server's challenge, digest-uri
//! `<protocol>/<serverId>` (Hadoop: `/default`). The strongest qop the server offers is chosen:
//! `auth-conf` (privacy, RC4) over `auth-int` (integrity) over `auth`; the first two switch on
//! the security layer of [`crate::sasl_layer`].

use crate::error::{Result, YarnError};
use crate::sasl_layer::{Qop, SecurityLayer};
use base64::Engine;
use md5::{Digest, Md5};

/// Parses `key=value,key="quoted, value",...` into pairs. Never panics: a server's challenge is
/// untrusted input. A token without `=` becomes a key with an empty value; an unterminated quote
/// runs to the end; backslash escapes inside quotes are honoured (RFC 2831 quoted-string).
pub fn parse_challenge(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = s;
    loop {
        rest = rest.trim_start_matches([',', ' ', '\t']);
        if rest.is_empty() {
            return out;
        }
        let cut = rest.find(['=', ',']).unwrap_or(rest.len());
        let key = rest[..cut].trim().to_string();
        if !rest[cut..].starts_with('=') {
            // `foo` or `foo,`: a bare token.
            if !key.is_empty() {
                out.push((key, String::new()));
            }
            rest = &rest[cut..];
            continue;
        }
        let after = &rest[cut + 1..];
        let (val, next) = match after.strip_prefix('"') {
            Some(q) => {
                let mut val = String::new();
                let mut chars = q.char_indices();
                let mut end = q.len();
                while let Some((i, c)) = chars.next() {
                    match c {
                        '"' => {
                            end = i + 1;
                            break;
                        }
                        '\\' => {
                            if let Some((_, e)) = chars.next() {
                                val.push(e);
                            }
                        }
                        c => val.push(c),
                    }
                }
                (val, &q[end.min(q.len())..])
            }
            None => {
                let e = after.find(',').unwrap_or(after.len());
                (after[..e].trim().to_string(), &after[e..])
            }
        };
        if !key.is_empty() {
            out.push((key, val));
        }
        rest = next;
    }
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
    pub qop: Qop,
    /// The server's `maxbuf`: the largest wrapped message it accepts.
    pub server_maxbuf: usize,
}

impl DigestMd5 {
    /// H(A1), binary: the base of the response and of the security layer's keys.
    fn ha1(&self) -> [u8; 16] {
        let inner = md5(&[self.username.as_bytes(), b":", self.realm.as_bytes(), b":", self.password.as_bytes()]);
        md5(&[&inner, b":", self.nonce.as_bytes(), b":", self.cnonce.as_bytes()])
    }

    fn kd(&self, a2_head: &str) -> String {
        // With a security layer, A2 ends with 32 zeros (RFC 2831 §2.1.2.1).
        let a2 = match self.qop {
            Qop::Auth => format!("{a2_head}{}", self.digest_uri),
            _ => format!("{a2_head}{}:00000000000000000000000000000000", self.digest_uri),
        };
        let ha2 = hex::encode(md5(&[a2.as_bytes()]));
        let s =
            format!("{}:{}:00000001:{}:{}:{ha2}", hex::encode(self.ha1()), self.nonce, self.cnonce, self.qop.name());
        hex::encode(md5(&[s.as_bytes()]))
    }

    /// The `response=` value (A2 = `AUTHENTICATE:<digest-uri>`).
    pub fn response(&self) -> String {
        self.kd("AUTHENTICATE:")
    }

    /// The `rspauth=` value the server must send back (A2 = `:<digest-uri>`).
    pub fn rspauth(&self) -> String {
        self.kd(":")
    }

    /// The client's digest-response string.
    pub fn response_string(&self) -> String {
        let cipher = if self.qop == Qop::AuthConf { ",cipher=rc4" } else { "" };
        format!(
            "charset=utf-8,username=\"{}\",realm=\"{}\",nonce=\"{}\",nc=00000001,cnonce=\"{}\",digest-uri=\"{}\",maxbuf=65536,response={},qop={}{cipher}",
            self.username,
            self.realm,
            self.nonce,
            self.cnonce,
            self.digest_uri,
            self.response(),
            self.qop.name()
        )
    }

    /// The security layer the negotiated qop needs (none for `auth`).
    pub fn layer(&self) -> Option<SecurityLayer> {
        SecurityLayer::new(self.qop, &self.ha1(), self.server_maxbuf)
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
        let ciphers = get("cipher").unwrap_or_default();
        let has_rc4 = ciphers.split(',').any(|c| c.trim() == "rc4");
        // Privacy needs a cipher we have; without rc4 fall back to what else is offered.
        let qop = qops.split(',').filter_map(Qop::parse).filter(|q| *q != Qop::AuthConf || has_rc4).max();
        let qop = qop.ok_or_else(|| {
            err(format!("no usable qop among '{qops}' (ciphers offered for privacy: '{ciphers}'; rc4 is supported)"))
        })?;
        let server_maxbuf = match get("maxbuf") {
            Some(m) => m.parse::<usize>().map_err(|_| err(format!("maxbuf '{m}' is not a number")))?,
            None => 65536,
        };
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
            qop,
            server_maxbuf,
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
            qop: Qop::Auth,
            server_maxbuf: 65536,
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
        assert_eq!(d.qop, Qop::AuthInt);
        assert!(d.response_string().ends_with(",qop=auth-int"));
        let both = r#"nonce="x",qop="auth,auth-int,auth-conf",cipher="3des,rc4,des",maxbuf=1000"#;
        let d = DigestMd5::for_token(b"id", b"pw", both, "/default", "rm").unwrap();
        assert_eq!((d.qop, d.server_maxbuf), (Qop::AuthConf, 1000));
        assert!(d.response_string().ends_with(",qop=auth-conf,cipher=rc4"));
        assert_eq!(d.layer().unwrap().max_plain, 984);
        let e = DigestMd5::for_token(b"id", b"pw", r#"nonce="x",qop="auth-conf",cipher="3des""#, "/default", "rm");
        assert!(e.unwrap_err().to_string().contains("no usable qop among 'auth-conf'"));
    }

    /// Challenges from a hostile or broken server parse without panicking (the old parser
    /// sliced past the end on a last element without `=`).
    #[test]
    fn malformed_challenges_do_not_panic() {
        let kv = parse_challenge(r#"nonce="x",foo"#);
        assert_eq!(kv, vec![("nonce".into(), "x".into()), ("foo".into(), String::new())]);
        for bad in ["foo", "=", "a=", "a=\"unterminated", "a=\"\\", ",,,", "é=ü,\"=\"", "k=\"a\\\"b\"", "x=\"é"] {
            let _ = parse_challenge(bad);
        }
        assert_eq!(parse_challenge(r#"k="a\"b",z=1"#), vec![("k".into(), "a\"b".into()), ("z".into(), "1".into())]);
        // A challenge without a nonce is a clear error, not a panic.
        assert!(DigestMd5::for_token(b"i", b"p", "realm=x,foo", "/default", "rm").is_err());
    }
}
