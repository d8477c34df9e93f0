//! The AM's rendezvous server: runtime processes report `hello <id> <host> <port>` (they bound
//! port 0 themselves); once all N have, each gets the hostfile; afterwards their `clock <c> <total>`
//! lines give the job's progress. An HTTP GET on the same port answers a JSON status (the tracking URL).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

#[derive(Default)]
pub struct Shared {
    /// Per process: (clock, total clocks if known).
    pub progress: BTreeMap<usize, (i64, i64)>,
    pub status: String,
}

impl Shared {
    /// Slowest process clock over the planned total (0 when unknown).
    pub fn fraction(&self, n: usize) -> f32 {
        if self.progress.len() < n {
            return 0.0;
        }
        let (c, t) = self.progress.values().fold((i64::MAX, 0), |(c, t), (pc, pt)| (c.min(*pc), t.max(*pt)));
        if t <= 0 {
            0.0
        } else {
            (c as f32 / t as f32).clamp(0.0, 1.0)
        }
    }
}

/// Serves connections: hellos go to `hello_tx`, then wait for the hostfile on `hosts_rx`.
pub async fn serve(
    l: TcpListener,
    shared: Arc<Mutex<Shared>>,
    hello_tx: mpsc::UnboundedSender<(usize, String, u16)>,
    hosts_rx: watch::Receiver<Option<String>>,
) {
    loop {
        let Ok((s, peer)) = l.accept().await else { return };
        let (shared, hello_tx, hosts_rx) = (shared.clone(), hello_tx.clone(), hosts_rx.clone());
        tokio::spawn(async move {
            if let Err(e) = handle(s, shared, hello_tx, hosts_rx).await {
                log::warn!("rendezvous connection from {peer}: {e}");
            }
        });
    }
}

async fn handle(
    s: TcpStream,
    shared: Arc<Mutex<Shared>>,
    hello_tx: mpsc::UnboundedSender<(usize, String, u16)>,
    mut hosts_rx: watch::Receiver<Option<String>>,
) -> std::io::Result<()> {
    let (r, mut w) = s.into_split();
    let mut lines = BufReader::new(r).lines();
    let Some(first) = lines.next_line().await? else { return Ok(()) };
    if first.starts_with("GET ") {
        let body = {
            let g = shared.lock().unwrap_or_else(|e| e.into_inner());
            serde_json::json!({"status": g.status, "progress": g.progress}).to_string()
        };
        let resp = format!(
            "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        return w.write_all(resp.as_bytes()).await;
    }
    let f: Vec<&str> = first.split_whitespace().collect();
    let parsed = match f.as_slice() {
        ["hello", id, host, port] => {
            id.parse::<usize>().ok().zip(port.parse::<u16>().ok()).map(|(i, p)| (i, host.to_string(), p))
        }
        _ => None,
    };
    let Some((id, host, port)) = parsed else {
        return Err(std::io::Error::other(format!("unexpected first line '{first}'")));
    };
    let _ = hello_tx.send((id, host, port));
    let hosts = loop {
        if let Some(h) = hosts_rx.borrow().clone() {
            break h;
        }
        if hosts_rx.changed().await.is_err() {
            return Ok(());
        }
    };
    w.write_all(hosts.as_bytes()).await?;
    while let Some(l) = lines.next_line().await? {
        let f: Vec<&str> = l.split_whitespace().collect();
        if let ["clock", c, t] = f.as_slice() {
            if let (Ok(c), Ok(t)) = (c.parse(), t.parse()) {
                shared.lock().unwrap_or_else(|e| e.into_inner()).progress.insert(id, (c, t));
            }
        }
    }
    Ok(())
}
