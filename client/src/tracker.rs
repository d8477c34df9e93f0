//! The local launcher's job tracker: what the application master is on YARN. Every runtime
//! process connects to it (`job.json`'s `tracker`), says an authenticated hello and reports its
//! progress lines into one `JobView`; with `--ui` it also serves the job's page and
//! `status.json` (`ps_job::tracking`). It binds 127.0.0.1 unless `--ui-bind` says otherwise.

use ps_job::rendezvous::{http_request, local_app, Hello, Report};
use ps_job::tracking::serve::{self, line_within};
use ps_job::tracking::JobView;
use serde_json::Value;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::BufReader;
use tokio::net::{TcpListener, TcpStream};

/// A connection must say something within this time; a process reports every second.
const FIRST_LINE: Duration = Duration::from_secs(10);
const IDLE: Duration = Duration::from_secs(60);

struct Inner {
    view: Mutex<JobView>,
    /// The restart attempt whose processes may report (hellos of others do not verify).
    attempt: AtomicU32,
    secret: Vec<u8>,
    processes: usize,
    ui: bool,
    open: AtomicUsize,
}

#[derive(Clone)]
pub struct Tracker {
    inner: Arc<Inner>,
    pub addr: std::net::SocketAddr,
}

impl Tracker {
    /// Starts the tracker of a job `what` of `n` processes on `bind` (`HOST:PORT`), in a thread
    /// of its own. `ui`: also answer HTTP.
    pub fn start(bind: &str, secret: Vec<u8>, what: &str, n: usize, ui: bool) -> std::io::Result<Tracker> {
        let std_listener = std::net::TcpListener::bind(bind)?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let inner = Arc::new(Inner {
            view: Mutex::new(JobView::new(what, n)),
            attempt: AtomicU32::new(0),
            secret,
            processes: n,
            ui,
            open: AtomicUsize::new(0),
        });
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let i2 = inner.clone();
        std::thread::Builder::new().name("tracker".into()).spawn(move || {
            rt.block_on(async move {
                let Ok(l) = TcpListener::from_std(std_listener) else { return };
                while let Ok((s, _)) = l.accept().await {
                    // Every process keeps one connection; the rest is room for browsers.
                    if i2.open.load(Ordering::Relaxed) >= i2.processes + 32 {
                        continue;
                    }
                    i2.open.fetch_add(1, Ordering::Relaxed);
                    let inner = i2.clone();
                    tokio::spawn(async move {
                        if let Err(e) = handle(s, &inner).await {
                            log::debug!("tracker connection: {e}");
                        }
                        inner.open.fetch_sub(1, Ordering::Relaxed);
                    });
                }
            })
        })?;
        Ok(Tracker { inner, addr })
    }

    fn view(&self) -> std::sync::MutexGuard<'_, JobView> {
        self.inner.view.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Restart `attempt` starts now: only its processes may report from here on.
    pub fn begin_attempt(&self, attempt: u32, restarts: Value) {
        self.inner.attempt.store(attempt, Ordering::SeqCst);
        self.view().begin_attempt(attempt, restarts);
    }

    pub fn set_status(&self, s: &str) {
        self.view().status = s.to_string();
    }

    /// The newest clock any process reported (for the restart record).
    pub fn newest_clock(&self) -> Option<i64> {
        self.view().newest_clock()
    }

    pub fn status_json(&self) -> Value {
        self.view().status_json()
    }
}

async fn handle(s: TcpStream, inner: &Inner) -> std::io::Result<()> {
    let (r, mut w) = s.into_split();
    let mut r = BufReader::new(r);
    let Some(first) = line_within(&mut r, FIRST_LINE).await? else { return Ok(()) };
    let first = first.trim_end_matches('\r');
    if let Some((method, target)) = http_request(first) {
        if inner.ui {
            let status = || inner.view.lock().unwrap_or_else(|e| e.into_inner()).status_json();
            serve::answer(&mut r, &mut w, method, target, FIRST_LINE, status).await?;
        }
        return Ok(());
    }
    let attempt = inner.attempt.load(Ordering::SeqCst);
    let hello = Hello::parse(first).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
    if hello.id >= inner.processes || !hello.verify(&inner.secret, &local_app(attempt)) {
        return Err(std::io::Error::new(std::io::ErrorKind::PermissionDenied, "hello not authenticated"));
    }
    while let Some(l) = line_within(&mut r, IDLE).await? {
        let Some(report) = Report::parse(&l) else { continue };
        if inner.attempt.load(Ordering::SeqCst) != attempt {
            return Ok(());
        }
        inner.view.lock().unwrap_or_else(|e| e.into_inner()).apply(hello.id, report);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn get(addr: &std::net::SocketAddr, path: &str) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    /// Sends `lines` as a stranger would and returns once the tracker has closed the connection.
    fn refused(addr: &str, lines: &str) {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(lines.as_bytes()).unwrap();
        let mut out = Vec::new();
        // Closed with our lines unread, the connection may also end in a reset; only a timeout
        // (the tracker kept it) fails.
        match s.read_to_end(&mut out) {
            Ok(0) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            other => panic!("the tracker kept a connection that sent {lines:?}: {other:?}"),
        }
    }

    /// A real process's reporter (the runtime's own `report_to`) feeds the view; a forged hello
    /// and a process of an earlier attempt are cut off.
    #[test]
    fn authenticated_reports_reach_the_page() {
        let key = vec![7u8; 32];
        let t = Tracker::start("127.0.0.1:0", key.clone(), "demo --clocks 5", 2, true).unwrap();
        let addr = t.addr.to_string();
        let forged = Hello::new(&[1u8; 32], &local_app(0), 0, "127.0.0.1", 0, [0; 16]).encode();
        refused(&addr, &format!("{forged}clock 99 100\n"));
        let mut link = ps_job::rendezvous::report_to(&addr, &local_app(0), &key, 1).unwrap();
        let live = Arc::new(ps_runtime::live::Live::new(1));
        live.clock.store(3, Ordering::Relaxed);
        live.tick(2, 1.5, 100, 50);
        link.report_progress(live, Some(5));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while t.status_json()["progress"]["1"] != serde_json::json!([3, 5]) {
            assert!(std::time::Instant::now() < deadline, "{}", t.status_json());
            std::thread::sleep(Duration::from_millis(20));
        }
        let s = t.status_json();
        assert!(s["progress"].get("0").is_none(), "a forged hello reported: {s}");
        assert_eq!(s["bytes_per_clock"][0]["sent"], 100);
        // A process of attempt 0 cannot report into attempt 1.
        t.begin_attempt(1, serde_json::json!({"restarts": [], "clocks_redone": 0}));
        let old = Hello::new(&key, &local_app(0), 0, "127.0.0.1", 0, [2; 16]).encode();
        refused(&addr, &format!("{old}clock 4 5\n"));
        let page = get(&t.addr, "/");
        assert!(page.starts_with("HTTP/1.0 200") && page.contains("demo --clocks 5"), "{page}");
        let status = get(&t.addr, "/status.json");
        assert!(status.contains("\"attempt\":1") && !status.contains("[4,5]"), "{status}");
    }
}
