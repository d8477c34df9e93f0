//! Start-up through a YARN application master, without fixed ports: each process binds port 0,
//! tells the AM `hello <id> <host> <port>`, and receives the job's hostfile (`hosts <n>`, then
//! `<id> <host> <port>` lines) once every process has reported. The connection then carries
//! `clock <c> <total>` progress lines until the process exits.

use crate::error::{PsError, Result};
use crate::hostfile::Hostfile;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Binds a listener on port 0, reports it to the AM at `am` and returns it with the hostfile.
pub fn join(am: &str, id: usize, host: &str, timeout: Duration) -> Result<(TcpListener, Hostfile, TcpStream)> {
    let listener = TcpListener::bind(("0.0.0.0", 0)).map_err(|e| PsError::io("binding a listening port", e))?;
    let port = listener.local_addr().map_err(|e| PsError::io("reading the bound port", e))?.port();
    let mut s =
        TcpStream::connect(am).map_err(|e| PsError::io(format!("connecting to the application master {am}"), e))?;
    s.set_read_timeout(Some(timeout)).ok();
    writeln!(s, "hello {id} {host} {port}").map_err(|e| PsError::io(format!("reporting to {am}"), e))?;
    let mut r = BufReader::new(s.try_clone().map_err(|e| PsError::io("cloning the AM connection", e))?);
    let mut line = String::new();
    let what = |e: std::io::Error| PsError::io(format!("waiting for the hostfile from {am}"), e);
    r.read_line(&mut line).map_err(what)?;
    let n: usize = line.strip_prefix("hosts ").and_then(|x| x.trim().parse().ok()).ok_or_else(|| {
        PsError::codec(format!("application master {am} sent '{}' instead of a hostfile", line.trim()))
    })?;
    let mut hosts = Vec::with_capacity(n);
    for k in 0..n {
        line.clear();
        r.read_line(&mut line).map_err(what)?;
        let f: Vec<&str> = line.split_whitespace().collect();
        let ok = f.len() == 3 && f[0].parse::<usize>().ok() == Some(k);
        let port = f.get(2).and_then(|p| p.parse::<u16>().ok()).filter(|_| ok);
        let port = port.ok_or_else(|| PsError::codec(format!("hostfile line {k} from {am}: '{}'", line.trim())))?;
        hosts.push((f[1].to_string(), port));
    }
    s.set_read_timeout(None).ok();
    Ok((listener, Hostfile::new(hosts), s))
}

/// Reports `clock <c> <total>` once a second until the connection or the process goes away.
pub fn report_progress(mut s: TcpStream, clock: Arc<AtomicI64>, total: Option<i64>) {
    std::thread::Builder::new()
        .name("ps-progress".into())
        .spawn(move || loop {
            let c = clock.load(Ordering::Relaxed);
            if writeln!(s, "clock {c} {}", total.unwrap_or(-1)).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        })
        .ok();
}
