//! The Hadoop credentials file (`$HADOOP_TOKEN_FILE_LOCATION`, the container's `container_tokens`):
//! magic `HDTS`, a format byte, then tokens and secrets. Format 0 (Writable: vints and `Text`) is
//! what Hadoop 2.x writes and what we write; format 1 (protobuf `CredentialsProto`) is read too.

use crate::error::{HadoopError, Result};
use crate::tokens::{CredentialsKvProto, CredentialsProto, TokenProto};
use crate::vint::{read_bytes, read_len, take, write_text, write_vlong};
use prost::Message;

/// A Hadoop token (identifier and password are opaque bytes).
pub type Token = TokenProto;

pub const KIND_AMRM: &str = "YARN_AM_RM_TOKEN";
pub const KIND_NM: &str = "NMToken";
pub const KIND_HDFS: &str = "HDFS_DELEGATION_TOKEN";

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Credentials {
    /// (alias, token); aliases may be empty (the AMRMToken's is).
    pub tokens: Vec<(String, Token)>,
    pub secrets: Vec<(String, Vec<u8>)>,
}

fn text(buf: &mut &[u8], what: &str) -> Result<String> {
    let b = read_bytes(buf, what)?;
    String::from_utf8(b.to_vec()).map_err(|_| HadoopError::Codec(format!("{what} is not UTF-8")))
}

impl Credentials {
    pub fn read_file(path: &std::path::Path) -> Result<Self> {
        let bytes =
            std::fs::read(path).map_err(|e| HadoopError::io(format!("reading token file {}", path.display()), e))?;
        Self::parse(&bytes).map_err(|e| HadoopError::Codec(format!("token file {}: {e}", path.display())))
    }

    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let mut s = bytes;
        if take(&mut s, 4).ok() != Some(b"HDTS") {
            return Err(HadoopError::Codec("not a Hadoop token file (no HDTS magic)".into()));
        }
        match take(&mut s, 1)?[0] {
            0 => Self::parse_writable(s),
            1 => Self::parse_proto(s),
            v => Err(HadoopError::Codec(format!("token file format {v} is not supported (0 and 1 are)"))),
        }
    }

    fn parse_writable(mut s: &[u8]) -> Result<Self> {
        let mut c = Credentials::default();
        let n = read_len(&mut s, "token count")?;
        for _ in 0..n {
            let alias = text(&mut s, "token alias")?;
            let identifier = read_bytes(&mut s, "token identifier")?.to_vec();
            let password = read_bytes(&mut s, "token password")?.to_vec();
            let kind = text(&mut s, "token kind")?;
            let service = text(&mut s, "token service")?;
            c.tokens.push((alias, Token { identifier, password, kind, service }));
        }
        let n = read_len(&mut s, "secret count")?;
        for _ in 0..n {
            let alias = text(&mut s, "secret alias")?;
            c.secrets.push((alias, read_bytes(&mut s, "secret")?.to_vec()));
        }
        Ok(c)
    }

    fn parse_proto(s: &[u8]) -> Result<Self> {
        let p = CredentialsProto::decode_length_delimited(s)
            .or_else(|_| CredentialsProto::decode(s))
            .map_err(|e| HadoopError::Codec(format!("CredentialsProto: {e}")))?;
        let mut c = Credentials::default();
        for kv in p.tokens {
            if let Some(t) = kv.token {
                c.tokens.push((kv.alias, t));
            }
        }
        for kv in p.secrets {
            c.secrets.push((kv.alias, kv.secret.unwrap_or_default()));
        }
        Ok(c)
    }

    /// Format 0, as `Credentials.writeTokenStorageToStream` writes it in Hadoop 2.x.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = b"HDTS\x00".to_vec();
        write_vlong(&mut out, self.tokens.len() as i64);
        for (alias, t) in &self.tokens {
            write_text(&mut out, alias.as_bytes());
            write_text(&mut out, &t.identifier);
            write_text(&mut out, &t.password);
            write_text(&mut out, t.kind.as_bytes());
            write_text(&mut out, t.service.as_bytes());
        }
        write_vlong(&mut out, self.secrets.len() as i64);
        for (alias, v) in &self.secrets {
            write_text(&mut out, alias.as_bytes());
            write_text(&mut out, v);
        }
        out
    }

    /// Format 1 (protobuf), for tests of the reader.
    pub fn to_proto_bytes(&self) -> Vec<u8> {
        let p = CredentialsProto {
            tokens: self
                .tokens
                .iter()
                .map(|(a, t)| CredentialsKvProto { alias: a.clone(), token: Some(t.clone()), secret: None })
                .collect(),
            secrets: self
                .secrets
                .iter()
                .map(|(a, s)| CredentialsKvProto { alias: a.clone(), token: None, secret: Some(s.clone()) })
                .collect(),
        };
        let mut out = b"HDTS\x01".to_vec();
        out.extend_from_slice(&p.encode_length_delimited_to_vec());
        out
    }

    /// The first token of `kind` (select by kind: the AMRMToken's alias and service are empty).
    pub fn find_kind(&self, kind: &str) -> Option<&Token> {
        self.tokens.iter().map(|(_, t)| t).find(|t| t.kind == kind)
    }

    /// A copy without tokens of `kind` (workers must not get the AMRMToken).
    pub fn without_kind(&self, kind: &str) -> Credentials {
        Credentials {
            tokens: self.tokens.iter().filter(|(_, t)| t.kind != kind).cloned().collect(),
            secrets: self.secrets.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Credentials {
        Credentials {
            tokens: vec![
                (
                    String::new(),
                    Token {
                        identifier: vec![1, 2, 3],
                        password: vec![9; 20],
                        kind: KIND_AMRM.into(),
                        service: "".into(),
                    },
                ),
                (
                    "127.0.0.1:8020".into(),
                    Token {
                        identifier: vec![0xff; 200],
                        password: b"pw".to_vec(),
                        kind: KIND_HDFS.into(),
                        service: "127.0.0.1:8020".into(),
                    },
                ),
            ],
            secrets: vec![("s".into(), b"secret".to_vec())],
        }
    }

    #[test]
    fn writable_format_golden_bytes() {
        // One token, hand-assembled as Hadoop writes it: alias "a", identifier [7], password [8, 9],
        // kind "K", service "S", no secrets.
        let c = Credentials {
            tokens: vec![(
                "a".into(),
                Token { identifier: vec![7], password: vec![8, 9], kind: "K".into(), service: "S".into() },
            )],
            secrets: vec![],
        };
        let golden = b"HDTS\x00\x01\x01a\x01\x07\x02\x08\x09\x01K\x01S\x00";
        assert_eq!(c.to_bytes(), golden);
        assert_eq!(Credentials::parse(golden).unwrap(), c);
    }

    #[test]
    fn both_formats_roundtrip_and_amrm_token_is_found_and_stripped() {
        let c = sample();
        for bytes in [c.to_bytes(), c.to_proto_bytes()] {
            let p = Credentials::parse(&bytes).unwrap();
            assert_eq!(p, c);
            assert_eq!(p.find_kind(KIND_AMRM).unwrap().identifier, vec![1, 2, 3]);
            let w = p.without_kind(KIND_AMRM);
            assert!(w.find_kind(KIND_AMRM).is_none() && w.find_kind(KIND_HDFS).is_some());
        }
    }

    #[test]
    fn damaged_files_are_errors() {
        let good = sample().to_bytes();
        for bad in [&b"XXXX\x00"[..], b"HDTS\x07", &good[..good.len() - 3], b"HDTS\x00\x05"] {
            assert!(Credentials::parse(bad).is_err(), "{bad:?}");
        }
    }
}
