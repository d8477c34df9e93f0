//! HDFS delegation tokens (`ClientProtocol.getDelegationToken` on the NameNode, over Kerberos):
//! what a job on a secure cluster gives its containers instead of a Kerberos ticket. The token
//! is renewable by `renewer` (the ResourceManager's principal, so YARN keeps it alive while the
//! application runs) and its service is the NameNode's `ip:port`, as Hadoop's DFSClient sets it,
//! which is how HDFS clients in the containers pick it; an HA nameservice's token has the
//! logical service `ha-hdfs:<nameservice>` instead ([`fetch_for`]).

use crate::credentials::{Token, KIND_HDFS};
use crate::error::{Result, YarnError};
use crate::gssapi::Login;
use crate::ipc::{Auth, IpcConnection};
use ps_hadoop::filesystems::TokenSource;

pub const PROTOCOL: &str = "org.apache.hadoop.hdfs.protocol.ClientProtocol";

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetDelegationTokenRequestProto {
    #[prost(string, required, tag = "1")]
    pub renewer: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetDelegationTokenResponseProto {
    #[prost(message, optional, tag = "1")]
    pub token: Option<Token>,
}

/// A delegation token from the NameNode at `addr` (`host:port`), authenticating with `login`.
pub async fn fetch(addr: &str, renewer: &str, login: &Login) -> Result<Token> {
    let mut t = issue(addr, renewer, login).await?;
    t.service = service_of(addr)?;
    Ok(t)
}

/// The tokens that let a job reach the HDFS behind `source`. A single NameNode's token carries
/// its service twice: as `ip:port` (what Hadoop's Java clients look up) and, when it is written
/// with a host name, as `host:port` (what hdfs-native looks up, the address as configured). An
/// HA nameservice's token comes from whichever NameNode is active (a standby refuses to issue
/// one) and has the logical service `ha-hdfs:<nameservice>`, which its clients use against any
/// of its NameNodes, before and after a failover.
pub async fn fetch_for(source: &TokenSource, renewer: &str, login: &Login) -> Result<Vec<Token>> {
    match source {
        TokenSource::NameNode(addr) => {
            let t = fetch(addr, renewer, login).await?;
            let alias = (t.service != *addr).then(|| Token { service: addr.clone(), ..t.clone() });
            Ok(std::iter::once(t).chain(alias).collect())
        }
        TokenSource::NameService { name, namenodes } => {
            let mut refused = Vec::new();
            for addr in namenodes {
                match issue(addr, renewer, login).await {
                    Ok(mut t) => {
                        t.service = format!("ha-hdfs:{name}");
                        return Ok(vec![t]);
                    }
                    Err(e) => refused.push(format!("{addr}: {e}")),
                }
            }
            Err(YarnError::Io(format!(
                "no NameNode of nameservice {name} issued a delegation token ({})",
                refused.join("; ")
            )))
        }
    }
}

async fn issue(addr: &str, renewer: &str, login: &Login) -> Result<Token> {
    let conn = IpcConnection::connect(addr, PROTOCOL, Auth::Kerberos(login)).await?;
    log::info!("NameNode {addr}: Kerberos authenticated, qop {} (hadoop.rpc.protection)", conn.qop());
    let req = GetDelegationTokenRequestProto { renewer: renewer.to_string() };
    let r: GetDelegationTokenResponseProto = conn.call("getDelegationToken", &req).await?;
    let t = r.token.ok_or_else(|| {
        YarnError::Io(format!(
            "the NameNode at {addr} issued no delegation token (it does so only with Kerberos authentication)"
        ))
    })?;
    if t.kind != KIND_HDFS {
        return Err(YarnError::Codec(format!("the NameNode at {addr} answered a token of kind {:?}", t.kind)));
    }
    Ok(t)
}

/// `ip:port` for `host:port`, as Hadoop's `SecurityUtil.buildTokenService` (with IPs) writes it.
fn service_of(addr: &str) -> Result<String> {
    use std::net::ToSocketAddrs;
    let sa = addr
        .to_socket_addrs()
        .map_err(|e| YarnError::io(format!("resolving {addr}"), e))?
        .next()
        .ok_or_else(|| YarnError::Io(format!("{addr} resolves to no address")))?;
    Ok(format!("{}:{}", sa.ip(), sa.port()))
}

/// The owner of an HDFS delegation token (Writable `DelegationTokenIdentifier`: version byte,
/// then owner, renewer and real user as `Text`...): the principal the NameNode authenticated.
pub fn owner(t: &Token) -> Result<String> {
    let mut b: &[u8] = &t.identifier;
    let version = ps_hadoop::vint::take(&mut b, 1)?;
    if version[0] != 0 {
        return Err(YarnError::Codec(format!("delegation token identifier version {}", version[0])));
    }
    let owner = ps_hadoop::vint::read_bytes(&mut b, "token owner")?;
    String::from_utf8(owner.to_vec()).map_err(|_| YarnError::Codec("the token owner is not UTF-8".into()))
}

/// How long a delegation token lives at most: `maxDate - issueDate` of its identifier (after
/// owner, renewer and real user), in milliseconds, as the NameNode's
/// `dfs.namenode.delegation.token.max-lifetime` set it.
pub fn max_lifetime_ms(t: &Token) -> Result<i64> {
    let mut b: &[u8] = &t.identifier;
    ps_hadoop::vint::take(&mut b, 1)?;
    for what in ["token owner", "token renewer", "token real user"] {
        ps_hadoop::vint::read_bytes(&mut b, what)?;
    }
    let issued = ps_hadoop::vint::read_vlong(&mut b)?;
    let max = ps_hadoop::vint::read_vlong(&mut b)?;
    Ok(max - issued)
}

/// The short name of a principal as Hadoop's DEFAULT `auth_to_local` rule gives it (`alice` for
/// `alice@REALM` and `alice/host@REALM`): the user's home is `/user/<short name>`.
pub fn short_name(principal: &str) -> &str {
    principal.split(['/', '@']).next().unwrap_or(principal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_and_short_name_of_a_real_token() {
        // Issued by the Hadoop 2.7.3 NameNode of the secure test HDFS to alice, renewer rm.
        let id = [
            0, 13, 97, 108, 105, 99, 101, 64, 80, 83, 46, 84, 69, 83, 84, 2, 114, 109, 0, 138, 1, 162, 9, 189, 183, 75,
            138, 1, 162, 45, 202, 59, 75, 2, 2,
        ];
        let t = Token { identifier: id.to_vec(), kind: KIND_HDFS.into(), ..Default::default() };
        assert_eq!(owner(&t).unwrap(), "alice@PS.TEST");
        // Issued with Hadoop's default maximum lifetime, 7 days.
        assert_eq!(max_lifetime_ms(&t).unwrap(), 7 * 24 * 3600 * 1000);
        assert_eq!(short_name("alice@PS.TEST"), "alice");
        assert_eq!(short_name("nn/localhost@PS.TEST"), "nn");
        let bad = Token { identifier: vec![0, 200], ..Default::default() };
        assert!(owner(&bad).is_err());
    }
}
