//! The AM's rendezvous server (protocol: `ps_job::rendezvous`). Runtime processes report
//! `hello` with the port they bound; once all N have, each gets the hostfile; afterwards their
//! report lines (progress, ticks, objective, staleness, snapshots, and a `failed` line with the
//! reason a process is failing) go into the job's view. HTTP on the same port serves that view
//! as the job's page and `status.json` (`ps_job::tracking`): it is the tracking URL.
//!
//! The port is published as the tracking URL and listens on all interfaces, so it trusts nobody:
//! a hello counts only if its MAC verifies under the job secret, names a process id of this job
//! and the node YARN allocated that process's container on; lines are capped at `MAX_LINE`, silent
//! connections time out, and at most `max_connections` are served at once (the rest are closed
//! at once). The HTTP side is read-only: GET and HEAD answer, anything else is 405.

use crate::error::RendezvousError;
use ps_job::rendezvous::{http_request, Hello, HostsReply, Report};
use ps_job::tracking::serve::{self, line_within};
use ps_job::tracking::JobView;
use ps_runtime::Hostfile;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Semaphore};

/// Settings of the rendezvous server.
#[derive(Clone, Debug)]
pub struct Config {
    pub secret: Arc<Vec<u8>>,
    /// Fresh delegation tokens for the running processes (`refresh`), sent down every
    /// registered process's connection as they come.
    pub tokens: watch::Receiver<Option<Arc<String>>>,
    pub app_id: String,
    /// A connection must send its first line within this time.
    pub first_line_timeout: Duration,
    /// An established process connection silent for this long is closed (they report each second).
    pub idle_timeout: Duration,
    /// Connections served at once; more are closed as soon as they are accepted.
    pub max_connections: usize,
}

pub struct Shared {
    /// The job's attempt (automatic restarts): reports from connections of an earlier one are
    /// ignored.
    pub attempt: u32,
    /// What the processes reported: progress, objective, failures (the tracking page).
    pub view: JobView,
    /// The node host YARN allocated each process's container on; hellos are refused before this
    /// is known and for any other host.
    pub expected: Option<Vec<String>>,
    /// Processes registered so far: (host, port) each. A process may hello again (its connection
    /// broke) only with the same address.
    pub registered: BTreeMap<usize, (String, u16)>,
    /// Connections refused (bad MAC, unknown process, oversized or silent, over the limit).
    pub refused: u64,
    /// Connections being served now.
    pub open: usize,
}

impl Shared {
    pub fn new(view: JobView) -> Shared {
        Shared { attempt: 0, view, expected: None, registered: BTreeMap::new(), refused: 0, open: 0 }
    }

    /// `status.json`: the job's view plus the rendezvous's own counters.
    pub fn status_json(&self) -> serde_json::Value {
        let mut v = self.view.status_json();
        v["registered"] = self.registered.len().into();
        v["refused_connections"] = self.refused.into();
        v
    }
}

pub type SharedRef = Arc<Mutex<Shared>>;

pub fn lock(s: &SharedRef) -> std::sync::MutexGuard<'_, Shared> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// Logs refusals without letting a flood of them flood the log: the first ten, then every 100th.
fn refused(shared: &SharedRef, why: String) {
    let n = {
        let mut g = lock(shared);
        g.refused += 1;
        g.refused
    };
    if n <= 10 || n.is_multiple_of(100) {
        log::warn!("rendezvous: {why} ({n} refused so far)");
    }
}

/// Serves connections: verified hellos go to `hello_tx`, then wait for the hostfile on `hosts_rx`.
pub async fn serve(
    l: TcpListener,
    cfg: Config,
    shared: SharedRef,
    hello_tx: mpsc::UnboundedSender<(usize, String, u16)>,
    hosts_rx: watch::Receiver<Option<Hostfile>>,
) {
    let slots = Arc::new(Semaphore::new(cfg.max_connections));
    loop {
        let Ok((s, peer)) = l.accept().await else { return };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            refused(&shared, format!("connection from {peer} closed: {} connections open", cfg.max_connections));
            continue;
        };
        let (cfg, shared, hello_tx, hosts_rx) = (cfg.clone(), shared.clone(), hello_tx.clone(), hosts_rx.clone());
        lock(&shared).open += 1;
        tokio::spawn(async move {
            let mut s = s;
            if let Err(e) = handle(&mut s, &cfg, &shared, hello_tx, hosts_rx).await {
                refused(&shared, format!("connection from {peer}: {e}"));
            }
            // Closed only once the refusal is counted, so that a peer that sees the connection end
            // also sees it in the status (the tests rely on that order).
            drop(s);
            lock(&shared).open -= 1;
            drop(permit);
        });
    }
}

/// Checks a hello against the secret, the process ids and the allocated nodes, and registers it.
fn admit(h: &Hello, cfg: &Config, shared: &SharedRef) -> Result<(), RendezvousError> {
    if !h.verify(&cfg.secret, &cfg.app_id) {
        return Err(RendezvousError::Unauthenticated(h.id));
    }
    let mut g = lock(shared);
    let expected = g.expected.as_ref().ok_or(RendezvousError::NotAllocated)?;
    let node = expected.get(h.id).ok_or(RendezvousError::UnknownProcess(h.id))?;
    if *node != h.host {
        return Err(RendezvousError::WrongNode { id: h.id, host: h.host.clone(), node: node.clone() });
    }
    match g.registered.get(&h.id) {
        Some((host, port)) if (host, *port) != (&h.host, h.port) => {
            Err(RendezvousError::Registered { id: h.id, host: host.clone(), port: *port })
        }
        _ => {
            g.registered.insert(h.id, (h.host.clone(), h.port));
            Ok(())
        }
    }
}

async fn handle(
    s: &mut TcpStream,
    cfg: &Config,
    shared: &SharedRef,
    hello_tx: mpsc::UnboundedSender<(usize, String, u16)>,
    mut hosts_rx: watch::Receiver<Option<Hostfile>>,
) -> Result<(), RendezvousError> {
    let (r, mut w) = s.split();
    let mut r = BufReader::new(r);
    let Some(first) = line_within(&mut r, cfg.first_line_timeout).await.map_err(RendezvousError::Io)? else {
        return Ok(());
    };
    let first = first.trim_end_matches('\r');
    if let Some((method, target)) = http_request(first) {
        let status = || lock(shared).status_json();
        return serve::answer(&mut r, &mut w, method, target, cfg.first_line_timeout, status)
            .await
            .map_err(RendezvousError::Io);
    }
    let hello = Hello::parse(first).map_err(RendezvousError::BadHello)?;
    admit(&hello, cfg, shared)?;
    let attempt = lock(shared).attempt;
    let _ = hello_tx.send((hello.id, hello.host.clone(), hello.port));
    let hosts = loop {
        if let Some(h) = hosts_rx.borrow().clone() {
            break h;
        }
        if hosts_rx.changed().await.is_err() {
            return Ok(());
        }
    };
    let msg = HostsReply::new(&cfg.secret, &cfg.app_id, &hello.nonce, &hosts).encode();
    w.write_all(msg.as_bytes()).await.map_err(RendezvousError::SendHosts)?;
    // Reports until the process goes away; only this authenticated connection may make them.
    // Meanwhile fresh tokens go the other way (the writer only ends if the AM drops its sender).
    let reports = async {
        while let Some(l) = line_within(&mut r, cfg.idle_timeout).await.map_err(RendezvousError::Io)? {
            let report = Report::parse(&l).ok_or(RendezvousError::UnknownReport(hello.id))?;
            let mut g = lock(shared);
            if g.attempt != attempt {
                return Ok(()); // a process of an attempt that has been given up
            }
            if let Report::Failed(why) = &report {
                log::error!("process {} reports: {why}", hello.id);
            }
            g.view.apply(hello.id, report);
        }
        Ok(())
    };
    let mut tokens = cfg.tokens.clone();
    let push = async {
        while tokens.changed().await.is_ok() {
            let line = tokens.borrow_and_update().clone();
            if let Some(line) = line {
                if let Err(e) = w.write_all(line.as_bytes()).await {
                    log::warn!("sending fresh tokens to process {}: {e}", hello.id);
                }
            }
        }
        std::future::pending::<()>().await
    };
    tokio::select! {
        r = reports => r,
        _ = push => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    const APP: &str = "application_1_0001";

    type Started = (String, SharedRef, mpsc::UnboundedReceiver<(usize, String, u16)>, watch::Sender<Option<Hostfile>>);

    fn start(max: usize) -> Started {
        start_with_tokens(max, watch::channel(None).1)
    }

    fn start_with_tokens(max: usize, tokens: watch::Receiver<Option<Arc<String>>>) -> Started {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let l = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let cfg = Config {
            secret: Arc::new(vec![1; 32]),
            tokens,
            app_id: APP.into(),
            first_line_timeout: Duration::from_millis(300),
            idle_timeout: Duration::from_secs(5),
            max_connections: max,
        };
        let shared: SharedRef = Arc::new(Mutex::new(Shared::new(JobView::new("test", 2))));
        lock(&shared).expected = Some(vec!["127.0.0.1".into(), "127.0.0.1".into()]);
        let (htx, hrx) = mpsc::unbounded_channel();
        let (stx, srx) = watch::channel(None);
        let s2 = shared.clone();
        std::thread::spawn(move || rt.block_on(serve(l, cfg, s2, htx, srx)));
        (addr, shared, hrx, stx)
    }

    /// Sends `data` and returns everything the server answers before it closes the connection.
    fn exchange(addr: &str, data: &[u8]) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let _ = s.write_all(data);
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn only_authenticated_hellos_for_allocated_hosts_are_admitted() {
        let (addr, shared, mut hellos, hosts_tx) = start(8);
        let key = [1u8; 32];
        // Forged MAC, other secret, other application, unknown process, wrong node: all refused
        // with the connection closed and nothing registered.
        let forged = Hello::new(&key, APP, 0, "127.0.0.1", 9, [0; 16]).encode().replace(" 9 ", " 10 ");
        let bad = [
            forged,
            Hello::new(&[2u8; 32], APP, 0, "127.0.0.1", 9, [0; 16]).encode(),
            Hello::new(&key, "application_1_0002", 0, "127.0.0.1", 9, [0; 16]).encode(),
            Hello::new(&key, APP, 7, "127.0.0.1", 9, [0; 16]).encode(),
            Hello::new(&key, APP, 1, "10.1.2.3", 9, [0; 16]).encode(),
            "hello 0 127.0.0.1 9\n".into(),
            "\u{0}\u{1}garbage\n".into(),
        ];
        for b in &bad {
            assert_eq!(exchange(&addr, b.as_bytes()), "", "{b:?} got an answer");
        }
        // An oversized line and a silent connection are cut off, not buffered or kept.
        assert_eq!(exchange(&addr, &vec![b'x'; 100_000]), "");
        let t0 = std::time::Instant::now();
        assert_eq!(exchange(&addr, b""), "");
        assert!(t0.elapsed() < Duration::from_secs(5), "silent connection kept {:?}", t0.elapsed());
        assert!(hellos.try_recv().is_err(), "a refused hello was registered");
        assert!(lock(&shared).registered.is_empty());
        assert!(lock(&shared).refused >= bad.len() as u64 + 2);
        // The status page is read-only.
        assert!(exchange(&addr, b"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc").starts_with("HTTP/1.0 405"));
        let get = exchange(&addr, b"GET /status.json HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(get.starts_with("HTTP/1.0 200") && get.contains("\"refused_connections\""), "{get}");
        let page = exchange(&addr, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(page.starts_with("HTTP/1.0 200") && page.contains("text/html") && page.contains("<svg"), "{page}");
        // A genuine process (ps_runtime's own client) is admitted and gets an authenticated hostfile.
        let a = addr.clone();
        let joined = std::thread::spawn(move || {
            ps_job::rendezvous::join(&a, APP, &key, 1, "127.0.0.1", Duration::from_secs(20), None).map(|r| r.1)
        });
        let (id, host, port) = hellos.blocking_recv().unwrap();
        assert_eq!((id, host.as_str()), (1, "127.0.0.1"));
        let hosts = Hostfile::new(vec![("127.0.0.1".into(), 1), ("127.0.0.1".into(), port)]);
        hosts_tx.send(Some(hosts.clone())).unwrap();
        assert_eq!(joined.join().unwrap().unwrap(), hosts);
        // Now registered, process 1 may not move to another address.
        let other = Hello::new(&key, APP, 1, "127.0.0.1", port.wrapping_add(1), [5; 16]).encode();
        assert_eq!(exchange(&addr, other.as_bytes()), "");
    }

    /// What `refresh` hands on reaches a registered process over its connection, sealed, and
    /// replaces the process's credentials file (ps_job's own process side).
    #[test]
    fn fresh_tokens_reach_a_registered_process_and_replace_its_credentials_file() {
        let (tokens_tx, tokens_rx) = watch::channel(None);
        let (addr, _shared, mut hellos, hosts_tx) = start_with_tokens(8, tokens_rx);
        let key = [1u8; 32];
        let a = addr.clone();
        let joined = std::thread::spawn(move || {
            ps_job::rendezvous::join(&a, APP, &key, 0, "127.0.0.1", Duration::from_secs(20), None).map(|r| r.2)
        });
        let (_, _, port) = hellos.blocking_recv().unwrap();
        let hosts = Hostfile::new(vec![("127.0.0.1".into(), port), ("127.0.0.1".into(), 1)]);
        hosts_tx.send(Some(hosts)).unwrap();
        let link = joined.join().unwrap().unwrap();
        let dir = std::env::temp_dir().join(format!("ps-am-tokens-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("container_tokens");
        std::fs::write(&file, b"old tokens").unwrap();
        ps_job::token_push::take_from(&link, &key, APP, file.clone()).unwrap();
        for (seq, creds) in [(1, b"HDTS fresh 1"), (2, b"HDTS fresh 2")] {
            tokens_tx.send_replace(Some(Arc::new(ps_job::token_push::seal(&key, APP, seq, creds))));
            let t0 = std::time::Instant::now();
            while std::fs::read(&file).unwrap_or_default() != creds {
                assert!(t0.elapsed() < Duration::from_secs(10), "refresh {seq} never reached the file");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn connections_beyond_the_limit_are_closed_at_once() {
        let (addr, shared, _hellos, _hosts) = start(2);
        // Two silent connections hold both slots until their first-line timeout.
        let hold: Vec<_> = (0..2).map(|_| std::net::TcpStream::connect(&addr).unwrap()).collect();
        let t0 = std::time::Instant::now();
        while lock(&shared).open < 2 {
            assert!(t0.elapsed() < Duration::from_secs(5), "the server never took the two connections");
            std::thread::yield_now();
        }
        let t0 = std::time::Instant::now();
        assert_eq!(exchange(&addr, b"GET / HTTP/1.0\r\n\r\n"), "");
        assert!(t0.elapsed() < Duration::from_millis(250), "the third connection was not closed at once");
        assert!(lock(&shared).refused >= 1);
        drop(hold);
    }
}
