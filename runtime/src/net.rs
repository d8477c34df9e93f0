//! Connections between processes. Process p connects to every other process q; that connection
//! carries p's client traffic to q's server (and to the name node on q = 0) one way, and q's
//! replies and pushes the other way. Messages to oneself skip the network. Every connection is
//! authenticated first (`wire::auth`), then runs a writer task (batching frames, heartbeats) and a
//! reader task (decoding, failure detection).

use crate::error::{panic_message, PsError, Result};
use crate::hostfile::Hostfile;
use crate::state::{ClientCmd, Shared};
use crate::wan::{Shaper, BURST};
use crate::wire::auth::{self, HandshakeError, Keys};
use crate::wire::{FrameCodec, Msg};
use bytes::BytesMut;
use futures::{FutureExt, SinkExt, StreamExt};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio_util::codec::{Encoder, Framed, FramedRead, FramedWrite, LengthDelimitedCodec};

/// Handshakes in progress at once. Unauthenticated connections beyond this are closed as soon as
/// they are accepted (a connector retries until `connect_timeout_ms`), so a flood of strangers
/// costs a bounded amount of memory and cannot starve the process of file descriptors.
const MAX_PENDING_HANDSHAKES: usize = 64;
/// Time an unauthenticated connection gets to complete the handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Spawns a task of the communication runtime that fails the process if it panics: a task that
/// died silently would leave every thread waiting for messages nobody handles, while heartbeats
/// kept the peers believing all is well.
pub(crate) fn spawn_guarded(core: Arc<Shared>, what: &'static str, fut: impl Future<Output = ()> + Send + 'static) {
    tokio::spawn(async move {
        if let Err(p) = AssertUnwindSafe(fut).catch_unwind().await {
            let e = PsError::Panicked(format!("{what} panicked: {}", panic_message(p.as_ref())));
            core.send(ClientCmd::Abort(e.to_string()));
            core.fail(e);
        }
    });
}

/// An outgoing queue to one peer. Counts queued messages so that a failing process can let its
/// last messages (an abort reason) reach the peers before it exits. Control messages (Gaia's
/// control queue: selective barriers) overtake queued data; the writer counts the mirror updates
/// that have left, so a server can tell whether the link keeps up.
#[derive(Clone)]
pub(crate) struct Link {
    tx: UnboundedSender<Msg>,
    ctl: UnboundedSender<Msg>,
    departed: Arc<AtomicU64>,
    core: Arc<Shared>,
}

impl Link {
    pub fn send(&self, m: Msg) {
        self.queue(&self.tx, m)
    }

    /// Sends `m` ahead of every data message still queued (but after those already written).
    pub fn send_control(&self, m: Msg) {
        self.queue(&self.ctl, m)
    }

    fn queue(&self, tx: &UnboundedSender<Msg>, m: Msg) {
        self.core.control.message_queued();
        if tx.send(m).is_err() {
            self.core.control.message_done();
        }
    }

    /// How many `MirrorUpdate`s sent on this link have left (in the order they were sent): on
    /// the socket, or into the emulated WAN's delay line. Whatever is sent from now on arrives
    /// after them.
    pub fn departed(&self) -> u64 {
        self.departed.load(Ordering::Acquire)
    }
}

/// A link's queues as its writer sees them.
struct Outbox {
    ctl: UnboundedReceiver<Msg>,
    data: UnboundedReceiver<Msg>,
    departed: Arc<AtomicU64>,
}

impl Outbox {
    async fn recv(&mut self) -> Option<Msg> {
        tokio::select! {
            biased;
            Some(m) = self.ctl.recv() => Some(m),
            m = self.data.recv() => m,
        }
    }

    fn try_recv(&mut self) -> Option<Msg> {
        self.ctl.try_recv().ok().or_else(|| self.data.try_recv().ok())
    }
}

fn link_pair(core: &Arc<Shared>) -> (Link, Outbox) {
    let ((tx, data), (ctl_tx, ctl)) = (unbounded_channel(), unbounded_channel());
    let departed = Arc::new(AtomicU64::new(0));
    (Link { tx, ctl: ctl_tx, departed: departed.clone(), core: core.clone() }, Outbox { ctl, data, departed })
}

/// Hands a message from process `from` to the local server task; false once it is gone.
pub(crate) type ToServer = Arc<dyn Fn(usize, Msg) -> bool + Send + Sync>;

/// Outgoing queues of a process: to each server and to each client.
pub(crate) struct Links {
    pub to_server: Vec<Link>,
    pub to_client: Vec<Link>,
}

type Rxs = Arc<Mutex<Vec<Option<Outbox>>>>;

/// What the way to a peer crosses: a data-center boundary (its bytes count as WAN traffic) and,
/// when a WAN is emulated, the shaper of this direction, shared by both connections to the peer.
#[derive(Clone, Default)]
struct Wan {
    crosses: bool,
    shaper: Option<Arc<Shaper>>,
}

fn wan_links(core: &Shared) -> Arc<Vec<Wan>> {
    let (geo, n, me) = (&core.cfg.geo, core.nprocs, core.pid);
    Arc::new(
        (0..n)
            .map(|q| Wan {
                crosses: geo.crosses(me, q, n),
                shaper: geo.link(me, q, n).map(|l| Arc::new(Shaper::new(l))),
            })
            .collect(),
    )
}

/// Creates the links and starts accepting and connecting. Must run inside the tokio runtime.
pub(crate) fn start(
    core: Arc<Shared>,
    hosts: &Hostfile,
    listener: TcpListener,
    secret: Arc<Vec<u8>>,
    server_in: ToServer,
    client_in: UnboundedSender<(usize, Msg)>,
) -> Links {
    let n = core.nprocs;
    let me = core.pid;
    let (mut to_server, mut server_rx, mut to_client, mut client_rx) = (vec![], vec![], vec![], vec![]);
    for _ in 0..n {
        let (t, r) = link_pair(&core);
        to_server.push(t);
        server_rx.push(Some(r));
        let (t, r) = link_pair(&core);
        to_client.push(t);
        client_rx.push(Some(r));
    }
    // Local delivery: my client to my server and back, without sockets.
    let mut local_srv = server_rx[me].take().expect("fresh");
    let (sin, c) = (server_in.clone(), core.clone());
    spawn_guarded(core.clone(), "local server delivery", async move {
        while let Some(m) = local_srv.recv().await {
            c.control.message_done();
            if !sin(me, m) {
                break;
            }
        }
    });
    let mut local_cli = client_rx[me].take().expect("fresh");
    let (cin, c) = (client_in.clone(), core.clone());
    spawn_guarded(core.clone(), "local client delivery", async move {
        while let Some(m) = local_cli.recv().await {
            c.control.message_done();
            if cin.send((me, m)).is_err() {
                break;
            }
        }
    });

    let client_rx: Rxs = Arc::new(Mutex::new(client_rx));
    let wan = wan_links(&core);
    spawn_guarded(
        core.clone(),
        "the connection acceptor",
        accept_loop(core.clone(), hosts.clone(), listener, secret.clone(), client_rx, server_in, wan.clone()),
    );
    for (q, rx) in server_rx.into_iter().enumerate() {
        if let Some(rx) = rx {
            let addr = hosts.addr(q);
            let deliver = client_in.clone();
            let (core, secret, wan) = (core.clone(), secret.clone(), wan[q].clone());
            spawn_guarded(core.clone(), "a connector", async move {
                match connect(&core, q, &addr, &secret).await {
                    Ok((conn, keys)) => {
                        run_conn(core, (q, addr, wan), conn, keys, rx, move |m| deliver.send((q, m)).is_ok())
                    }
                    Err(e) => core.fail(PsError::PeerLost { pid: q, addr, reason: e.to_string() }),
                }
            });
        }
    }
    Links { to_server, to_client }
}

type Conn = Framed<TcpStream, LengthDelimitedCodec>;

/// Connects to process `q` and runs the handshake, retrying until `connect_timeout_ms` while the
/// peer is not listening yet or drops us (it sheds handshakes beyond its limit). A peer that
/// proves it does not share our secret or settings is final.
async fn connect(core: &Shared, q: usize, addr: &str, secret: &[u8]) -> Result<(Conn, Keys)> {
    let deadline = Instant::now() + Duration::from_millis(core.cfg.connect_timeout_ms);
    let mut backoff = Duration::from_millis(20);
    loop {
        core.check()?;
        let why = match TcpStream::connect(addr).await {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                let mut conn = Framed::new(s, auth::handshake_codec());
                let hs = auth::connect(&mut conn, secret, core.pid, core.cfg.wire_protection);
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, hs).await {
                    Ok(Ok(keys)) => {
                        log::debug!("connected to process {q} at {addr}");
                        return Ok((conn, keys));
                    }
                    Ok(Err(e @ HandshakeError::Refused(_))) => return Err(e.into()),
                    Ok(Err(e @ HandshakeError::Transport(_))) => e.to_string(),
                    Err(_) => "handshake timed out".to_string(),
                }
            }
            Err(e) => e.to_string(),
        };
        if Instant::now() + backoff >= deadline {
            return Err(PsError::Io(format!("could not connect within {} ms: {why}", core.cfg.connect_timeout_ms)));
        }
        log::trace!("process {q} at {addr} not reachable yet: {why}");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_millis(500));
    }
}

async fn accept_loop(
    core: Arc<Shared>,
    hosts: Hostfile,
    listener: TcpListener,
    secret: Arc<Vec<u8>>,
    rxs: Rxs,
    server_in: ToServer,
    wan: Arc<Vec<Wan>>,
) {
    let pending = Arc::new(tokio::sync::Semaphore::new(MAX_PENDING_HANDSHAKES));
    let refused = Arc::new(AtomicU64::new(0));
    loop {
        let (sock, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                log::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = pending.clone().try_acquire_owned() else {
            note_refusal(&refused, peer, &format!("{MAX_PENDING_HANDSHAKES} handshakes already in progress"));
            continue;
        };
        let (core, secret, rxs, hosts, server_in, refused, wan) =
            (core.clone(), secret.clone(), rxs.clone(), hosts.clone(), server_in.clone(), refused.clone(), wan.clone());
        spawn_guarded(core.clone(), "a connection handshake", async move {
            let _ = sock.set_nodelay(true);
            let mut conn = Framed::new(sock, auth::handshake_codec());
            let hs = auth::accept(&mut conn, &secret, core.nprocs, core.cfg.wire_protection);
            let who = tokio::time::timeout(HANDSHAKE_TIMEOUT, hs)
                .await
                .unwrap_or_else(|_| Err(HandshakeError::Transport("timed out".into())));
            drop(permit);
            let (q, keys) = match who {
                Ok(x) => x,
                Err(e) => {
                    note_refusal(&refused, peer, &e.to_string());
                    return;
                }
            };
            let rx = rxs.lock().unwrap_or_else(|e| e.into_inner())[q].take();
            let Some(rx) = rx else {
                log::warn!("refused connection from {peer}: process {q} is already connected");
                return;
            };
            log::debug!("accepted process {q} from {peer}");
            run_conn(core, (q, hosts.addr(q), wan[q].clone()), conn, keys, rx, move |m| server_in(q, m));
        });
    }
}

/// Logs a refused connection without letting a flood of them flood the log: the first ten, then
/// every 100th.
fn note_refusal(count: &AtomicU64, peer: std::net::SocketAddr, why: &str) {
    let n = count.fetch_add(1, Ordering::Relaxed) + 1;
    if n <= 10 || n.is_multiple_of(100) {
        log::warn!("refused connection from {peer}: {why} ({n} refused so far)");
    }
}

/// Runs an authenticated connection with peer `q`: a writer draining `rx` and a reader handing
/// decoded messages to `deliver`. From here on every frame is protected with the handshake's keys.
fn run_conn(
    core: Arc<Shared>,
    (q, addr, wan): (usize, String, Wan),
    conn: Conn,
    keys: Keys,
    rx: Outbox,
    deliver: impl Fn(Msg) -> bool + Send + 'static,
) {
    let parts = conn.into_parts();
    let (r, w) = parts.io.into_split();
    let (max, p) = (core.cfg.max_frame_bytes, core.cfg.wire_protection);
    let mut reader = FramedRead::new(r, FrameCodec::new(max, p, keys.recv));
    // Frames the peer sent right after the handshake may already sit in the handshake's buffer.
    reader.read_buffer_mut().extend_from_slice(&parts.read_buf);
    let codec = FrameCodec::new(max, p, keys.send);
    match wan.shaper {
        Some(shaper) => spawn_guarded(
            core.clone(),
            "a WAN connection writer",
            shaped_write_loop(core.clone(), q, addr.clone(), codec, w, rx, shaper),
        ),
        None => spawn_guarded(
            core.clone(),
            "a connection writer",
            write_loop(core.clone(), q, addr.clone(), FramedWrite::new(w, codec), rx, wan.crosses),
        ),
    }
    spawn_guarded(core.clone(), "a connection reader", async move {
        let timeout = Duration::from_millis(core.cfg.peer_timeout_ms);
        let overhead = reader.decoder().overhead() as u64;
        loop {
            let reason = match tokio::time::timeout(timeout, reader.next()).await {
                Err(_) => format!("no message for {} ms", core.cfg.peer_timeout_ms),
                Ok(None) => "connection closed".to_string(),
                Ok(Some(Err(e))) => format!("read failed: {e}"),
                Ok(Some(Ok(frame))) => {
                    core.net.bytes_recv.fetch_add(frame.len() as u64 + overhead, Ordering::Relaxed);
                    if wan.crosses {
                        core.net.wan_bytes_recv.fetch_add(frame.len() as u64 + overhead, Ordering::Relaxed);
                    }
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
            if core.control.is_closing() {
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

/// The messages a writer sends together: the first queued one (a heartbeat after `heartbeat_ms`
/// of silence), then whatever else is queued, up to 256, control messages first.
struct Batch<'a> {
    out: &'a mut Outbox,
    first: Option<Msg>,
    taken: usize,
    /// Messages of the batch queued through a `Link` (heartbeats are not, so they do not count).
    counted: usize,
    /// Mirror updates among them.
    bulk: u64,
}

impl<'a> Batch<'a> {
    /// Waits for the first message; `None` once the queue is closed.
    async fn start(out: &'a mut Outbox, heartbeat: Duration) -> Option<Batch<'a>> {
        let first = match tokio::time::timeout(heartbeat, out.recv()).await {
            Ok(Some(m)) => m,
            Ok(None) => return None,
            Err(_) => Msg::Ping,
        };
        Some(Batch { out, first: Some(first), taken: 0, counted: 0, bulk: 0 })
    }

    fn next(&mut self) -> Option<Msg> {
        let m = match self.first.take() {
            Some(m) => m,
            None if self.taken < 256 => self.out.try_recv()?,
            None => return None,
        };
        self.taken += 1;
        self.counted += usize::from(!matches!(m, Msg::Ping));
        self.bulk += u64::from(matches!(m, Msg::MirrorUpdate { .. }));
        Some(m)
    }

    /// The batch has left: counts its mirror updates as departed; returns how many messages
    /// it carried that were queued through a `Link`.
    fn departed(self) -> usize {
        if self.bulk > 0 {
            self.out.departed.fetch_add(self.bulk, Ordering::Release);
        }
        self.counted
    }
}

async fn write_loop(
    core: Arc<Shared>,
    q: usize,
    addr: String,
    mut w: FramedWrite<tokio::net::tcp::OwnedWriteHalf, FrameCodec>,
    mut rx: Outbox,
    crosses: bool,
) {
    let hb = Duration::from_millis(core.cfg.heartbeat_ms);
    loop {
        let Some(mut batch) = Batch::start(&mut rx, hb).await else { return };
        let before = w.encoder().encoded_bytes;
        let mut served = 0;
        let res: std::io::Result<()> = async {
            // Messages are encoded and sealed straight into the socket's write buffer; a batch
            // goes out with one flush.
            while let Some(m) = batch.next() {
                let (server, at) = (m.is_server_to_client(), w.encoder().encoded_bytes);
                w.feed(m).await?;
                if server {
                    served += w.encoder().encoded_bytes - at;
                }
            }
            SinkExt::<Msg>::flush(&mut w).await
        }
        .await;
        let counted = batch.departed();
        let sent = w.encoder().encoded_bytes - before;
        core.net.bytes_sent.fetch_add(sent, Ordering::Relaxed);
        core.net.server_bytes_sent.fetch_add(served, Ordering::Relaxed);
        if crosses {
            core.net.wan_bytes_sent.fetch_add(sent, Ordering::Relaxed);
        }
        for _ in 0..counted {
            core.control.message_done();
        }
        if let Err(e) = res {
            if !core.control.is_closing() {
                core.fail(PsError::PeerLost { pid: q, addr, reason: format!("write failed: {e}") });
            }
            return;
        }
    }
}

/// The writer of a connection across an emulated WAN link: batches are encoded as usual, then
/// handed in pieces to a pump task that writes each piece when the link's [`Shaper`] says it
/// arrives. Messages count as delivered once their last piece is written.
async fn shaped_write_loop(
    core: Arc<Shared>,
    q: usize,
    addr: String,
    mut codec: FrameCodec,
    mut io: tokio::net::tcp::OwnedWriteHalf,
    mut rx: Outbox,
    shaper: Arc<Shaper>,
) {
    let (tx, mut pieces) = unbounded_channel::<(Instant, bytes::Bytes, usize)>();
    let (pump_core, pump_addr) = (core.clone(), addr.clone());
    spawn_guarded(core.clone(), "a WAN link", async move {
        while let Some((at, piece, done)) = pieces.recv().await {
            // The timer rounds up to whole milliseconds: a piece already due goes at once, or
            // every round trip over an idle link would gain a millisecond or two.
            if at > Instant::now() {
                tokio::time::sleep_until(at.into()).await;
            }
            if let Err(e) = io.write_all(&piece).await {
                if !pump_core.control.is_closing() {
                    let reason = format!("write failed: {e}");
                    pump_core.fail(PsError::PeerLost { pid: q, addr: pump_addr, reason });
                }
                return;
            }
            (0..done).for_each(|_| pump_core.control.message_done());
        }
    });
    let hb = Duration::from_millis(core.cfg.heartbeat_ms);
    loop {
        // Messages wait in their queues until the link can take them, so that a control
        // message queued meanwhile still goes before the data.
        if let Some(at) = shaper.ready_at() {
            if at > Instant::now() {
                tokio::time::sleep_until(at.into()).await;
            }
        }
        let Some(mut batch) = Batch::start(&mut rx, hb).await else { return };
        let mut buf = BytesMut::new();
        while let Some(m) = batch.next() {
            if let Err(e) = codec.encode(m, &mut buf) {
                core.fail(PsError::PeerLost { pid: q, addr, reason: format!("encoding failed: {e}") });
                return;
            }
            if buf.len() >= BURST {
                break;
            }
        }
        let n = buf.len();
        core.net.bytes_sent.fetch_add(n as u64, Ordering::Relaxed);
        core.net.wan_bytes_sent.fetch_add(n as u64, Ordering::Relaxed);
        let mut bytes = buf.freeze();
        let plan = shaper.schedule(n, Instant::now());
        let counted = batch.departed();
        let last = plan.len() - 1;
        for (i, (len, at)) in plan.into_iter().enumerate() {
            let piece = bytes.split_to(len);
            if tx.send((at, piece, if i == last { counted } else { 0 })).is_err() {
                return;
            }
        }
    }
}
