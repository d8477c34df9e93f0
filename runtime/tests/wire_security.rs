//! Frames between processes are protected: a man in the middle who flips one byte of the traffic
//! fails the job with an error naming the peer, under `privacy` (default) and `integrity`.
//! Real sockets: process 0 reaches process 1 through a TCP proxy that forwards both ways and
//! corrupts one byte of 0's traffic once the job is under way.

use ps_runtime::WireProtection;
use ps_runtime::{run_app, Hostfile, ProcessSpec, PsError, RowTypeRegistry, RuntimeConfig};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Forwards `from` to `to`; after `flip_after` bytes, flips one bit of the next byte (once).
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    flip_after: Option<usize>,
    flipped: Arc<AtomicBool>,
) {
    let mut seen = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if let Some(at) = flip_after {
            if seen + n > at && !flipped.swap(true, Ordering::SeqCst) {
                buf[at.saturating_sub(seen).min(n - 1)] ^= 0x04;
            }
        }
        seen += n;
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// A proxy on a fresh port in front of `target`; returns its port.
fn proxy(target: std::net::SocketAddr, flip_after: usize, flipped: Arc<AtomicBool>) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::from_std(l).unwrap();
            loop {
                let Ok((c, _)) = l.accept().await else { return };
                let Ok(s) = tokio::net::TcpStream::connect(target).await else { return };
                let ((cr, cw), (sr, sw)) = (c.into_split(), s.into_split());
                tokio::spawn(pump(cr, sw, Some(flip_after), flipped.clone()));
                tokio::spawn(pump(sr, cw, None, flipped.clone()));
            }
        });
    });
    port
}

/// Runs a 2-process demo job in which process 0 reaches process 1 through a byte-flipping proxy.
fn job_through_flipping_proxy(p: WireProtection) -> (Vec<ps_runtime::Result<ps_runtime::ProcessStats>>, bool) {
    ps_runtime::init_logging(log::LevelFilter::Warn);
    let ls: Vec<TcpListener> = (0..2).map(|_| TcpListener::bind("127.0.0.1:0").unwrap()).collect();
    let addrs: Vec<_> = ls.iter().map(|l| l.local_addr().unwrap()).collect();
    let flipped = Arc::new(AtomicBool::new(false));
    // Well past the handshake (about 140 bytes) and the first messages.
    let via = proxy(addrs[1], 20_000, flipped.clone());
    let hosts = Hostfile::new(vec![("127.0.0.1".into(), addrs[0].port()), ("127.0.0.1".into(), via)]);
    let cfg = RuntimeConfig { wire_protection: p, threads: 2, ..RuntimeConfig::default() };
    let secret = ps_runtime::secret::generate().to_vec();
    let (tx, rx) = std::sync::mpsc::channel();
    for (pid, l) in ls.into_iter().enumerate() {
        let spec = ProcessSpec {
            cfg: cfg.clone(),
            hosts: hosts.clone(),
            pid,
            secret: secret.clone(),
            listener: Some(l),
            stats_dir: None,
            live: None,
        };
        let tx = tx.clone();
        std::thread::spawn(move || {
            let app = Box::new(
                ps_apps::demo::Demo::from_args(&["--clocks".into(), "400".into(), "--delay-ms".into(), "2".into()])
                    .unwrap(),
            );
            let _ = tx.send((pid, run_app(spec, RowTypeRegistry::with_builtins(), app, serde_json::Value::Null)));
        });
    }
    let mut res: Vec<_> = (0..2).map(|_| rx.recv_timeout(Duration::from_secs(120)).expect("job hung")).collect();
    res.sort_by_key(|r| r.0);
    (res.into_iter().map(|r| r.1).collect(), flipped.load(Ordering::SeqCst))
}

#[test]
fn a_flipped_byte_fails_the_job_naming_the_peer() {
    for p in [WireProtection::Integrity, WireProtection::Privacy] {
        let (res, flipped) = job_through_flipping_proxy(p);
        assert!(flipped, "{p:?}: the proxy never saw enough traffic to tamper with");
        let errors: Vec<String> = res.iter().filter_map(|r| r.as_ref().err()).map(PsError::to_string).collect();
        assert_eq!(errors.len(), 2, "{p:?}: tampering went unnoticed: {res:?}");
        // Process 1 received the corrupted frame from process 0 and says so.
        let e1 = &errors[1];
        assert!(e1.contains("lost process 0") && e1.contains("integrity check"), "{p:?}: process 1 reported: {e1}");
    }
}
