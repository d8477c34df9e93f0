//! Connections between processes. Process p connects to every other process q; that connection
//! carries p's client traffic to q's server (and to the name node on q = 0) one way, and q's
//! replies and pushes the other way. Messages to oneself skip the network. Every connection is
//! authenticated first (`wire::auth`), then runs a writer task (batching frames, heartbeats) and a
//! reader task (decoding, failure detection).

use crate::client::{ClientCmd, Core};
use crate::error::{panic_message, PsError, Result};
use crate::hostfile::Hostfile;
use crate::server::ServerIn;
use crate::wire::{self, auth, Msg};
use bytes::BytesMut;
use futures::{FutureExt, SinkExt, StreamExt};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio_util::codec::{Framed, FramedRead, FramedWrite};

/// Spawns a task of the communication runtime that fails the process if it panics: a task that
/// died silently would leave every thread waiting for messages nobody handles, while heartbeats
/// kept the peers believing all is well.
pub(crate) fn spawn_guarded(core: Arc<Core>, what: &'static str, fut: impl Future<Output = ()> + Send + 'static) {
    tokio::spawn(async move {
        if let Err(p) = AssertUnwindSafe(fut).catch_unwind().await {
            let e = PsError::Panicked(format!("{what} panicked: {}", panic_message(p.as_ref())));
            core.send(ClientCmd::Abort(e.to_string()));
            core.fail(e);
        }
    });
}

/// An outgoing queue to one peer. Counts queued messages in the core so that a failing process
/// can let its last messages (an abort reason) reach the peers before it exits.
#[derive(Clone)]
pub(crate) struct Link {
    tx: UnboundedSender<Msg>,
    core: Arc<Core>,
}

impl Link {
    pub fn send(&self, m: Msg) {
        self.core.queued.fetch_add(1, Ordering::SeqCst);
        if self.tx.send(m).is_err() {
            self.core.message_done();
        }
    }
}

/// Outgoing queues of a process: to each server and to each client.
pub(crate) struct Links {
    pub to_server: Vec<Link>,
    pub to_client: Vec<Link>,
}

type Rxs = Arc<Mutex<Vec<Option<UnboundedReceiver<Msg>>>>>;

/// Creates the links and starts accepting and connecting. Must run inside the tokio runtime.
pub(crate) fn start(
    core: Arc<Core>,
    hosts: &Hostfile,
    listener: TcpListener,
    secret: Arc<Vec<u8>>,
    server_in: UnboundedSender<ServerIn>,
    client_in: UnboundedSender<(usize, Msg)>,
) -> Links {
    let n = core.nprocs;
    let me = core.pid;
    let (mut to_server, mut server_rx, mut to_client, mut client_rx) = (vec![], vec![], vec![], vec![]);
    for _ in 0..n {
        let (t, r) = unbounded_channel();
        to_server.push(t);
        server_rx.push(Some(r));
        let (t, r) = unbounded_channel();
        to_client.push(t);
        client_rx.push(Some(r));
    }
    // Local delivery: my client to my server and back, without sockets.
    let mut local_srv = server_rx[me].take().expect("fresh");
    let (sin, c) = (server_in.clone(), core.clone());
    spawn_guarded(core.clone(), "local server delivery", async move {
        while let Some(m) = local_srv.recv().await {
            c.message_done();
            if sin.send(ServerIn::Net(me, m)).is_err() {
                break;
            }
        }
    });
    let mut local_cli = client_rx[me].take().expect("fresh");
    let (cin, c) = (client_in.clone(), core.clone());
    spawn_guarded(core.clone(), "local client delivery", async move {
        while let Some(m) = local_cli.recv().await {
            c.message_done();
            if cin.send((me, m)).is_err() {
                break;
            }
        }
    });

    let client_rx: Rxs = Arc::new(Mutex::new(client_rx));
    spawn_guarded(
        core.clone(),
        "the connection acceptor",
        accept_loop(core.clone(), hosts.clone(), listener, secret.clone(), client_rx, server_in),
    );
    for (q, rx) in server_rx.into_iter().enumerate() {
        if let Some(rx) = rx {
            let addr = hosts.addr(q);
            let deliver = client_in.clone();
            let (core, secret) = (core.clone(), secret.clone());
            spawn_guarded(core.clone(), "a connector", async move {
                match connect(&core, q, &addr, &secret).await {
                    Ok(conn) => run_conn(core, q, addr, conn, rx, move |m| deliver.send((q, m)).is_ok()),
                    Err(e) => core.fail(PsError::PeerLost { pid: q, addr, reason: e.to_string() }),
                }
            });
        }
    }
    let link = |tx| Link { tx, core: core.clone() };
    Links { to_server: to_server.into_iter().map(link).collect(), to_client: to_client.into_iter().map(link).collect() }
}

type Conn = Framed<TcpStream, tokio_util::codec::LengthDelimitedCodec>;

async fn connect(core: &Core, q: usize, addr: &str, secret: &[u8]) -> Result<Conn> {
    let deadline = Instant::now() + Duration::from_millis(core.cfg.connect_timeout_ms);
    let mut backoff = Duration::from_millis(20);
    loop {
        core.check()?;
        match TcpStream::connect(addr).await {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                let mut conn = Framed::new(s, wire::codec(core.cfg.max_frame_bytes));
                tokio::time::timeout(Duration::from_secs(10), auth::connect(&mut conn, secret, core.pid))
                    .await
                    .map_err(|_| PsError::Io("handshake timed out".into()))??;
                log::debug!("connected to process {q} at {addr}");
                return Ok(conn);
            }
            Err(e) if Instant::now() < deadline => {
                log::trace!("process {q} at {addr} not up yet: {e}");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(500));
            }
            Err(e) => {
                return Err(PsError::Io(format!("could not connect within {} ms: {e}", core.cfg.connect_timeout_ms)))
            }
        }
    }
}

async fn accept_loop(
    core: Arc<Core>,
    hosts: Hostfile,
    listener: TcpListener,
    secret: Arc<Vec<u8>>,
    rxs: Rxs,
    server_in: UnboundedSender<ServerIn>,
) {
    loop {
        let (sock, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                log::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let (core, secret, rxs, hosts, server_in) =
            (core.clone(), secret.clone(), rxs.clone(), hosts.clone(), server_in.clone());
        spawn_guarded(core.clone(), "a connection handshake", async move {
            let _ = sock.set_nodelay(true);
            let mut conn = Framed::new(sock, wire::codec(core.cfg.max_frame_bytes));
            let who = tokio::time::timeout(Duration::from_secs(10), auth::accept(&mut conn, &secret, core.nprocs))
                .await
                .unwrap_or_else(|_| Err(PsError::Io("handshake timed out".into())));
            let q = match who {
                Ok(q) => q,
                Err(e) => {
                    log::warn!("refused connection from {peer}: {e}");
                    return;
                }
            };
            let rx = rxs.lock().unwrap_or_else(|e| e.into_inner())[q].take();
            let Some(rx) = rx else {
                log::warn!("refused connection from {peer}: process {q} is already connected");
                return;
            };
            log::debug!("accepted process {q} from {peer}");
            run_conn(core, q, hosts.addr(q), conn, rx, move |m| server_in.send(ServerIn::Net(q, m)).is_ok());
        });
    }
}

/// Runs an authenticated connection with peer `q`: a writer draining `rx` and a reader handing
/// decoded messages to `deliver`.
fn run_conn(
    core: Arc<Core>,
    q: usize,
    addr: String,
    conn: Conn,
    rx: UnboundedReceiver<Msg>,
    deliver: impl Fn(Msg) -> bool + Send + 'static,
) {
    let parts = conn.into_parts();
    let (r, w) = parts.io.into_split();
    let codec = parts.codec;
    let mut reader = FramedRead::new(r, codec.clone());
    reader.read_buffer_mut().extend_from_slice(&parts.read_buf);
    let writer = FramedWrite::new(w, codec);
    spawn_guarded(core.clone(), "a connection writer", write_loop(core.clone(), q, addr.clone(), writer, rx));
    spawn_guarded(core.clone(), "a connection reader", async move {
        let timeout = Duration::from_millis(core.cfg.peer_timeout_ms);
        loop {
            let reason = match tokio::time::timeout(timeout, reader.next()).await {
                Err(_) => format!("no message for {} ms", core.cfg.peer_timeout_ms),
                Ok(None) => "connection closed".to_string(),
                Ok(Some(Err(e))) => format!("read failed: {e}"),
                Ok(Some(Ok(frame))) => {
                    core.net.bytes_recv.fetch_add(frame.len() as u64 + 4, Ordering::Relaxed);
                    match Msg::decode(frame.freeze()) {
                        Ok(Msg::Ping) => continue,
                        Ok(m) => {
                            if deliver(m) {
                                continue;
                            }
                            return; // process tearing down
                        }
                        Err(e) => format!("sent a malformed message: {e}"),
                    }
                }
            };
            if core.closing.load(Ordering::SeqCst) {
                core.update_ctl(|c| c.closed_peers += 1);
            } else {
                // A peer that fails on purpose sends its reason (Abort) before closing, possibly
                // on the other connection between us: give that reason a moment to win.
                tokio::time::sleep(Duration::from_millis(200)).await;
                core.fail(PsError::PeerLost { pid: q, addr, reason });
            }
            return;
        }
    });
}

async fn write_loop(
    core: Arc<Core>,
    q: usize,
    addr: String,
    mut w: FramedWrite<tokio::net::tcp::OwnedWriteHalf, tokio_util::codec::LengthDelimitedCodec>,
    mut rx: UnboundedReceiver<Msg>,
) {
    let hb = Duration::from_millis(core.cfg.heartbeat_ms);
    let mut buf = BytesMut::new();
    loop {
        let first = match tokio::time::timeout(hb, rx.recv()).await {
            Ok(Some(m)) => m,
            Ok(None) => return,
            Err(_) => Msg::Ping,
        };
        // Heartbeats are not queued through a Link, so they are not counted.
        let mut counted = usize::from(!matches!(first, Msg::Ping));
        let mut next = Some(first);
        let mut batch = 0;
        let res: std::io::Result<()> = async {
            while let Some(m) = next.take() {
                m.encode(&mut buf);
                core.net.bytes_sent.fetch_add(buf.len() as u64 + 4, Ordering::Relaxed);
                w.feed(buf.split().freeze()).await?;
                batch += 1;
                if batch < 256 {
                    next = rx.try_recv().ok();
                    counted += usize::from(next.is_some());
                }
            }
            SinkExt::<bytes::Bytes>::flush(&mut w).await
        }
        .await;
        for _ in 0..counted {
            core.message_done();
        }
        if let Err(e) = res {
            if !core.closing.load(Ordering::SeqCst) {
                core.fail(PsError::PeerLost { pid: q, addr, reason: format!("write failed: {e}") });
            }
            return;
        }
    }
}
