//! HDFS delegation tokens (`ClientProtocol.getDelegationToken` on the NameNode, over Kerberos):
//! what a job on a secure cluster gives its containers instead of a Kerberos ticket. The token
//! is renewable by `renewer` (the ResourceManager's principal, so YARN keeps it alive while the
//! application runs) and its service is the NameNode's `ip:port`, as Hadoop's DFSClient sets it,
//! which is how HDFS clients in the containers pick it.

use crate::credentials::{Token, KIND_HDFS};
use crate::error::{Result, YarnError};
use crate::gssapi::Login;
use crate::ipc::{Auth, IpcConnection};

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
    let conn = IpcConnection::connect(addr, PROTOCOL, Auth::Kerberos(login)).await?;
    let req = GetDelegationTokenRequestProto { renewer: renewer.to_string() };
    let r: GetDelegationTokenResponseProto = conn.call("getDelegationToken", &req).await?;
    let mut t = r.token.ok_or_else(|| {
        YarnError::Io(format!(
            "the NameNode at {addr} issued no delegation token (it does so only with Kerberos authentication)"
        ))
    })?;
    if t.kind != KIND_HDFS {
        return Err(YarnError::Codec(format!("the NameNode at {addr} answered a token of kind {:?}", t.kind)));
    }
    t.service = service_of(addr)?;
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
