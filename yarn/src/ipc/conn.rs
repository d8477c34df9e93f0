//! One authenticated IPC connection: SASL handshake, connection context, then concurrent calls
//! multiplexed by call id over a reader task.

use super::{decode_body, packet, preamble, request_header, split_response, CALL_CONTEXT, CALL_SASL, MAX_FRAME};
use crate::credentials::Token;
use crate::error::{Result, YarnError};
use crate::proto::*;
use crate::sasl::DigestMd5;
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use prost::Message;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio_util::codec::{Framed, LengthDelimitedCodec};

type Pending = Arc<Mutex<HashMap<i32, oneshot::Sender<Result<Bytes>>>>>;
type Sink = futures::stream::SplitSink<Framed<TcpStream, LengthDelimitedCodec>, Bytes>;

pub struct IpcConnection {
    server: String,
    protocol: String,
    client_id: [u8; 16],
    next_id: AtomicI32,
    pending: Pending,
    sink: tokio::sync::Mutex<Sink>,
    /// Set once the connection failed; later calls fail at once with it.
    closed: Arc<Mutex<Option<YarnError>>>,
}

fn codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder().length_field_length(4).max_frame_length(MAX_FRAME).new_codec()
}

fn fatal(server: &str, h: &RpcResponseHeaderProto) -> YarnError {
    YarnError::Fatal {
        server: server.to_string(),
        class: h.exception_class_name.clone().unwrap_or_default(),
        message: h.error_msg.clone().unwrap_or_default(),
    }
}

impl IpcConnection {
    /// Connects to `addr` for `protocol` (e.g. `org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB`),
    /// authenticating with `token` through SASL TOKEN / DIGEST-MD5 (or none, if `token` is `None`).
    pub async fn connect(addr: &str, protocol: &str, token: Option<&Token>) -> Result<Self> {
        let stream = TcpStream::connect(addr).await.map_err(|e| YarnError::io(format!("connecting to {addr}"), e))?;
        stream.set_nodelay(true).ok();
        let mut framed = Framed::new(stream, codec());
        framed
            .get_mut()
            .write_all_preamble(&preamble(token.is_some()))
            .await
            .map_err(|e| YarnError::io(format!("writing the preamble to {addr}"), e))?;
        if let Some(t) = token {
            sasl(&mut framed, addr, t).await?;
        }
        let ctx = IpcConnectionContextProto { user_info: None, protocol: Some(protocol.to_string()) };
        framed
            .send(packet(&[&request_header(CALL_CONTEXT, &[]), &ctx]))
            .await
            .map_err(|e| YarnError::io(format!("sending the connection context to {addr}"), e))?;
        let (sink, mut stream) = framed.split();
        let pending: Pending = Arc::default();
        let closed: Arc<Mutex<Option<YarnError>>> = Arc::default();
        let (p, c, server) = (pending.clone(), closed.clone(), addr.to_string());
        tokio::spawn(async move {
            let fail_all = |e: YarnError| {
                *c.lock().unwrap_or_else(|x| x.into_inner()) = Some(e.clone());
                for (_, tx) in p.lock().unwrap_or_else(|x| x.into_inner()).drain() {
                    let _ = tx.send(Err(e.clone()));
                }
            };
            loop {
                let frame = match stream.next().await {
                    Some(Ok(f)) => f.freeze(),
                    Some(Err(e)) => return fail_all(YarnError::io(format!("reading from {server}"), e)),
                    None => return fail_all(YarnError::Io(format!("{server} closed the connection"))),
                };
                let (h, _) = match split_response(&frame) {
                    Ok(x) => x,
                    Err(e) => return fail_all(e),
                };
                let id = h.call_id as i32;
                if h.status == STATUS_FATAL {
                    let e = fatal(&server, &h);
                    if let Some(tx) = p.lock().unwrap_or_else(|x| x.into_inner()).remove(&id) {
                        let _ = tx.send(Err(e.clone()));
                    }
                    return fail_all(e);
                }
                match p.lock().unwrap_or_else(|x| x.into_inner()).remove(&id) {
                    Some(tx) => {
                        let _ = tx.send(Ok(frame));
                    }
                    None => log::warn!("{server}: reply to unknown call {id} ignored"),
                }
            }
        });
        Ok(IpcConnection {
            server: addr.to_string(),
            protocol: protocol.to_string(),
            client_id: *uuid::Uuid::new_v4().as_bytes(),
            next_id: AtomicI32::new(0),
            pending,
            sink: tokio::sync::Mutex::new(sink),
            closed,
        })
    }

    /// Calls `method` and decodes its response. Several calls may be in flight at once.
    pub async fn call<Req: Message, Resp: Message + Default>(&self, method: &str, req: &Req) -> Result<Resp> {
        if let Some(e) = self.closed.lock().unwrap_or_else(|x| x.into_inner()).clone() {
            return Err(e);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap_or_else(|x| x.into_inner()).insert(id, tx);
        let rh = RequestHeaderProto {
            method_name: method.to_string(),
            declaring_class_protocol_name: self.protocol.clone(),
            client_protocol_version: 1,
        };
        let frame = packet(&[&request_header(id, &self.client_id), &rh, req]);
        let sent = self.sink.lock().await.send(frame).await;
        if let Err(e) = sent {
            self.pending.lock().unwrap_or_else(|x| x.into_inner()).remove(&id);
            return Err(YarnError::io(format!("sending {method} to {}", self.server), e));
        }
        let frame =
            rx.await.map_err(|_| YarnError::Io(format!("{}: connection dropped during {method}", self.server)))??;
        let (h, body) = split_response(&frame)?;
        if h.status != STATUS_SUCCESS {
            return Err(YarnError::Remote {
                server: self.server.clone(),
                method: method.to_string(),
                class: h.exception_class_name.unwrap_or_default(),
                // Java puts the stack trace after the first line; keep the message.
                message: h.error_msg.unwrap_or_default().lines().next().unwrap_or_default().to_string(),
            });
        }
        decode_body(body, method)
    }
}

trait PreambleWrite {
    async fn write_all_preamble(&mut self, b: &[u8]) -> std::io::Result<()>;
}

impl PreambleWrite for TcpStream {
    async fn write_all_preamble(&mut self, b: &[u8]) -> std::io::Result<()> {
        tokio::io::AsyncWriteExt::write_all(self, b).await
    }
}

async fn sasl_round(
    framed: &mut Framed<TcpStream, LengthDelimitedCodec>,
    server: &str,
    msg: RpcSaslProto,
) -> Result<RpcSaslProto> {
    framed
        .send(packet(&[&request_header(CALL_SASL, &[]), &msg]))
        .await
        .map_err(|e| YarnError::io(format!("SASL with {server}"), e))?;
    let frame = framed
        .next()
        .await
        .ok_or_else(|| YarnError::Sasl { server: server.into(), message: "connection closed during SASL".into() })?
        .map_err(|e| YarnError::io(format!("SASL with {server}"), e))?;
    let (h, body) = split_response(&frame)?;
    if h.status != STATUS_SUCCESS {
        return Err(fatal(server, &h));
    }
    decode_body(body, "SASL")
}

/// NEGOTIATE → (server offers TOKEN/DIGEST-MD5 with its challenge) → INITIATE with our response
/// → SUCCESS carrying `rspauth`, which we verify (the server proves it knows the password too).
async fn sasl(framed: &mut Framed<TcpStream, LengthDelimitedCodec>, server: &str, token: &Token) -> Result<()> {
    let err = |m: String| YarnError::Sasl { server: server.into(), message: m };
    let neg = sasl_round(framed, server, RpcSaslProto { state: SASL_NEGOTIATE, ..Default::default() }).await?;
    if neg.state != SASL_NEGOTIATE {
        return Err(err(format!("expected NEGOTIATE, got state {}", neg.state)));
    }
    let auth = neg
        .auths
        .iter()
        .find(|a| a.method == "TOKEN" && a.mechanism == "DIGEST-MD5")
        .ok_or_else(|| {
            let offered: Vec<String> = neg.auths.iter().map(|a| format!("{}/{}", a.method, a.mechanism)).collect();
            err(format!("the server does not offer TOKEN/DIGEST-MD5 (offered: {offered:?})"))
        })?
        .clone();
    let mut chosen = auth.clone();
    chosen.challenge = None;
    let challenge = match &auth.challenge {
        Some(c) => c.clone(),
        None => {
            let r = sasl_round(
                framed,
                server,
                RpcSaslProto { state: SASL_INITIATE, auths: vec![chosen.clone()], ..Default::default() },
            )
            .await?;
            r.token.ok_or_else(|| err("no challenge from the server".into()))?
        }
    };
    let uri = format!("{}/{}", auth.protocol.clone().unwrap_or_default(), auth.server_id.clone().unwrap_or_default());
    let d =
        DigestMd5::for_token(&token.identifier, &token.password, &String::from_utf8_lossy(&challenge), &uri, server)?;
    let state = if auth.challenge.is_some() { SASL_INITIATE } else { SASL_RESPONSE };
    let reply = sasl_round(
        framed,
        server,
        RpcSaslProto {
            state,
            token: Some(d.response_string().into_bytes()),
            auths: if state == SASL_INITIATE { vec![chosen] } else { vec![] },
            ..Default::default()
        },
    )
    .await?;
    if reply.state != SASL_SUCCESS {
        return Err(err(format!("expected SUCCESS, got state {}", reply.state)));
    }
    let rsp = String::from_utf8_lossy(reply.token.as_deref().unwrap_or_default()).to_string();
    if rsp.strip_prefix("rspauth=") != Some(d.rspauth().as_str()) {
        return Err(err(format!("the server's rspauth does not match ({rsp}): it does not know the token's password")));
    }
    Ok(())
}
