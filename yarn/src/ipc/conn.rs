//! One authenticated IPC connection: SASL handshake, connection context, then concurrent calls
//! multiplexed by call id over a reader task.

use super::{decode_body, packet, preamble, request_header, split_response, CALL_CONTEXT, CALL_SASL, MAX_FRAME};
use crate::credentials::Token;
use crate::error::{Result, YarnError};
use crate::gssapi::{Context, Login};
use crate::proto::*;
use crate::sasl::DigestMd5;
use crate::sasl_layer::{Half, Qop, SecurityLayer};
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
    /// The sink and, with qop integrity/privacy, the sending half of the security layer (both
    /// used under one lock, so wrapped messages leave in sequence-number order).
    sink: tokio::sync::Mutex<(Sink, Option<Half>)>,
    /// Set once the connection failed; later calls fail at once with it.
    closed: Arc<Mutex<Option<YarnError>>>,
    /// Largest plaintext per wrapped message (with a security layer).
    max_plain: usize,
    /// The negotiated SASL qop (`auth`, `auth-int`, `auth-conf`), or `none` without SASL.
    qop: &'static str,
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

/// How a connection authenticates.
#[derive(Clone, Copy, Debug)]
pub enum Auth<'a> {
    /// SASL TOKEN / DIGEST-MD5 with a token (AM to RM, AM to NM).
    Token(&'a Token),
    /// No SASL: the connection context names the user (`SIMPLE`, insecure clusters only). The
    /// server takes it on trust, as Hadoop's own clients do when security is off.
    Simple { user: &'a str },
    /// SASL KERBEROS / GSSAPI (secure clusters): the user is the Kerberos principal.
    Kerberos(&'a Login),
}

impl IpcConnection {
    /// Connects to `addr` for `protocol` (e.g. `org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB`).
    pub async fn connect(addr: &str, protocol: &str, auth: Auth<'_>) -> Result<Self> {
        let stream = TcpStream::connect(addr).await.map_err(|e| YarnError::io(format!("connecting to {addr}"), e))?;
        stream.set_nodelay(true).ok();
        let mut framed = Framed::new(stream, codec());
        framed
            .get_mut()
            .write_all_preamble(&preamble(!matches!(auth, Auth::Simple { .. })))
            .await
            .map_err(|e| YarnError::io(format!("writing the preamble to {addr}"), e))?;
        // With a token the connection itself establishes the user, so the context names none.
        let (user_info, layer) = match auth {
            Auth::Token(t) => (None, sasl(&mut framed, addr, t).await?),
            // The principal is the user; the context may name none.
            Auth::Kerberos(login) => (None, sasl_kerberos(&mut framed, addr, login).await?),
            Auth::Simple { user } => {
                (Some(UserInformationProto { effective_user: Some(user.into()), real_user: None }), None)
            }
        };
        let qop = match (&auth, &layer) {
            (Auth::Simple { .. }, _) => "none",
            (_, Some(l)) => l.qop.name(),
            (_, None) => "auth",
        };
        let (mut send_half, mut recv_half, max_plain) = match layer {
            Some(SecurityLayer { send, recv, max_plain, .. }) => (Some(send), Some(recv), max_plain),
            None => (None, None, 0),
        };
        let ctx = IpcConnectionContextProto { user_info, protocol: Some(protocol.to_string()) };
        let (mut sink, mut stream) = framed.split();
        send_frame(&mut sink, &mut send_half, max_plain, packet(&[&request_header(CALL_CONTEXT, &[]), &ctx]))
            .await
            .map_err(|e| YarnError::io(format!("sending the connection context to {addr}"), e))?;
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
            // With a security layer, the frames come wrapped: unwrapped bytes collect here and
            // are cut into the inner frames (4-byte length + payload) they carry.
            let mut unwrapped = bytes::BytesMut::new();
            let mut inner: std::collections::VecDeque<Bytes> = Default::default();
            loop {
                let frame = match inner.pop_front() {
                    Some(f) => f,
                    None => {
                        let outer = match stream.next().await {
                            Some(Ok(f)) => f.freeze(),
                            Some(Err(e)) => return fail_all(YarnError::io(format!("reading from {server}"), e)),
                            None => return fail_all(YarnError::Io(format!("{server} closed the connection"))),
                        };
                        let Some(half) = &mut recv_half else {
                            inner.push_back(outer);
                            continue;
                        };
                        match unwrap_frame(half, &outer, &mut unwrapped, &mut inner) {
                            Ok(()) => continue,
                            Err(e) => return fail_all(YarnError::Io(format!("from {server}: {e}"))),
                        }
                    }
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
            sink: tokio::sync::Mutex::new((sink, send_half)),
            closed,
            max_plain,
            qop,
        })
    }

    /// The negotiated SASL qop: `auth`, `auth-int` or `auth-conf` (`none` for SIMPLE).
    pub fn qop(&self) -> &'static str {
        self.qop
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
        let sent = {
            let mut guard = self.sink.lock().await;
            let (sink, half) = &mut *guard;
            send_frame(sink, half, self.max_plain, frame).await
        };
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

/// Sends one frame; with a security layer, as SASL WRAP messages carrying its bytes (length
/// prefix included) in pieces of at most `max_plain`, as Hadoop's `WrappedOutputStream` does.
async fn send_frame(sink: &mut Sink, half: &mut Option<Half>, max_plain: usize, frame: Bytes) -> std::io::Result<()> {
    let Some(half) = half else { return sink.send(frame).await };
    let mut plain = Vec::with_capacity(frame.len() + 4);
    plain.extend_from_slice(&(frame.len() as u32).to_be_bytes());
    plain.extend_from_slice(&frame);
    for chunk in plain.chunks(max_plain) {
        let token = half.wrap(chunk).map_err(|e| std::io::Error::other(e.to_string()))?;
        let msg = RpcSaslProto { state: SASL_WRAP, token: Some(token), ..Default::default() };
        sink.feed(packet(&[&request_header(CALL_SASL, &[]), &msg])).await?;
    }
    sink.flush().await
}

/// Unwraps one SASL WRAP frame from the server and queues the complete inner frames it finishes.
fn unwrap_frame(
    half: &mut Half,
    outer: &[u8],
    buf: &mut bytes::BytesMut,
    out: &mut std::collections::VecDeque<Bytes>,
) -> Result<()> {
    let (h, body) = split_response(outer)?;
    if h.call_id as i32 != CALL_SASL {
        return Err(YarnError::Codec(format!(
            "an unwrapped frame (call {}) on a wrapped connection",
            h.call_id as i32
        )));
    }
    let msg: RpcSaslProto = decode_body(body, "SASL WRAP")?;
    if msg.state != SASL_WRAP {
        return Err(YarnError::Codec(format!("SASL state {} where WRAP was expected", msg.state)));
    }
    buf.extend_from_slice(&half.unwrap(msg.token.as_deref().unwrap_or_default())?);
    while buf.len() >= 4 {
        let n = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        if n > MAX_FRAME {
            return Err(YarnError::Codec(format!("a wrapped frame of {n} bytes exceeds {MAX_FRAME}")));
        }
        if buf.len() < 4 + n {
            break;
        }
        let _ = buf.split_to(4);
        out.push_back(buf.split_to(n).freeze());
    }
    Ok(())
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
async fn sasl(
    framed: &mut Framed<TcpStream, LengthDelimitedCodec>,
    server: &str,
    token: &Token,
) -> Result<Option<SecurityLayer>> {
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
    if d.qop != crate::sasl_layer::Qop::Auth {
        log::debug!("{server}: SASL qop {} (hadoop.rpc.protection)", d.qop.name());
    }
    Ok(d.layer())
}

/// NEGOTIATE → (the server offers KERBEROS/GSSAPI for `protocol@serverId`) → INITIATE with the
/// first GSSAPI token → CHALLENGE/RESPONSE until the context is established → the SASL GSSAPI
/// security-layer handshake (RFC 4752) → SUCCESS.
async fn sasl_kerberos(
    framed: &mut Framed<TcpStream, LengthDelimitedCodec>,
    server: &str,
    login: &Login,
) -> Result<Option<SecurityLayer>> {
    let err = |m: String| YarnError::Sasl { server: server.into(), message: m };
    let neg = sasl_round(framed, server, RpcSaslProto { state: SASL_NEGOTIATE, ..Default::default() }).await?;
    let auth = neg.auths.iter().find(|a| a.method == "KERBEROS" && a.mechanism == "GSSAPI").ok_or_else(|| {
        let offered: Vec<String> = neg.auths.iter().map(|a| format!("{}/{}", a.method, a.mechanism)).collect();
        err(format!("the server does not offer Kerberos (offered: {offered:?}); is the cluster secure?"))
    })?;
    let (service, host) = (auth.protocol.clone().unwrap_or_default(), auth.server_id.clone().unwrap_or_default());
    let mut gss = Context::new(&service, &host, login)?;
    let first = gss.step(None)?;
    let mut chosen = auth.clone();
    chosen.challenge = None;
    let mut msg = RpcSaslProto { state: SASL_INITIATE, auths: vec![chosen], token: Some(first), ..Default::default() };
    let mut layer = None;
    for _ in 0..16 {
        let r = sasl_round(framed, server, msg).await?;
        let token = r.token.unwrap_or_default();
        let out = match r.state {
            SASL_SUCCESS if gss.established() => {
                return Ok(
                    layer.and_then(|(qop, maxbuf)| (qop != Qop::Auth).then(|| SecurityLayer::gss(gss, qop, maxbuf)))
                );
            }
            SASL_CHALLENGE if !gss.established() => gss.step(Some(&token))?,
            SASL_CHALLENGE => {
                let (reply, qop, maxbuf) = security_layer_reply(&mut gss, &token).map_err(err)?;
                layer = Some((qop, maxbuf));
                reply
            }
            s => return Err(err(format!("unexpected SASL state {s} during Kerberos authentication"))),
        };
        msg = RpcSaslProto { state: SASL_RESPONSE, token: Some(out), ..Default::default() };
    }
    Err(err("Kerberos authentication did not finish in 16 rounds".into()))
}

/// Our receive buffer, announced to the server (it wraps at most this much per message).
const GSS_MAXBUF: u32 = 1 << 16;

/// RFC 4752's last step: the server offers security layers (bits: 1 none, 2 integrity,
/// 4 privacy, as `hadoop.rpc.protection` allows) and its buffer size, wrapped; we choose the
/// strongest offered, as with DIGEST-MD5, and announce ours.
fn security_layer_reply(gss: &mut Context, challenge: &[u8]) -> std::result::Result<(Vec<u8>, Qop, usize), String> {
    let offer = gss.unwrap(challenge).map_err(|e| e.to_string())?;
    if offer.len() != 4 {
        return Err(format!("a GSSAPI security-layer offer of {} bytes (4 expected)", offer.len()));
    }
    let (bit, qop) = match offer[0] {
        m if m & 4 != 0 => (4u8, Qop::AuthConf),
        m if m & 2 != 0 => (2, Qop::AuthInt),
        m if m & 1 != 0 => (1, Qop::Auth),
        m => return Err(format!("the server offers no security layer we know (mask {m:#x})")),
    };
    let server_maxbuf = u32::from_be_bytes([0, offer[1], offer[2], offer[3]]) as usize;
    let ours = if bit == 1 { 0 } else { GSS_MAXBUF };
    let mut reply = vec![bit];
    reply.extend_from_slice(&ours.to_be_bytes()[1..]);
    let wrapped = gss.wrap(&reply, false).map_err(|e| e.to_string())?;
    Ok((wrapped, qop, server_maxbuf))
}
