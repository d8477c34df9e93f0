//! Start-up through a YARN application master, without fixed ports. Each process binds port 0 and
//! reports it to the AM's rendezvous port; once every process has, the AM answers each with the
//! job's hostfile. The connection then carries progress lines until the process exits.
//!
//! The rendezvous port is reachable by anyone who can reach the AM, so both directions are
//! authenticated with the job secret (which only the job's containers hold):
//!
//! ```text
//! process -> AM   hello <id> <host> <port> <nonce> <mac>      mac over (app id, id, host, port, nonce)
//! AM -> process   hosts <n> <mac>                              mac over (app id, nonce, the n lines)
//!                 <id> <host> <port>   (n lines)
//! process -> AM   clock <c> <total>    progress, once a second
//!                 failed <reason>      the process's last words before it exits with an error
//! ```
//!
//! A fresh nonce per hello binds the AM's answer to it (a recorded answer cannot be replayed). All
//! lines are at most [`MAX_LINE`] bytes.
//!
//! Each kind of line has one type here that both encodes and parses it ([`Hello`], [`HostsHeader`]
//! with [`HostsReply`], [`Report`]); the runtime and the AM write and read the protocol only
//! through them, so the two sides cannot drift apart.

use ps_runtime::live::Live;
use ps_runtime::secret;
use ps_runtime::Hostfile;
use ps_runtime::{PsError, Result};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Longest line either side accepts (a hello is about 150 bytes, a failure reason is cut to fit).
pub use ps_runtime::report::MAX_LINE;
pub use ps_runtime::report::{Report, SnapshotState, Tick};
/// Most processes a hostfile from the AM may list.
pub const MAX_PROCESSES: usize = 1 << 16;
const HELLO: &str = "ps-rendezvous hello v1";
const HOSTS: &str = "ps-rendezvous hosts v1";

/// `hello <id> <host> <port> <nonce> <mac>`: a process reporting the port it bound. Parsed ones
/// are not yet verified ([`Hello::verify`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub id: usize,
    pub host: String,
    pub port: u16,
    pub nonce: [u8; 16],
    mac: [u8; 32],
}

fn hex_array<const N: usize>(s: &str) -> Option<[u8; N]> {
    let v = hex_decode(s)?;
    v.try_into().ok()
}

pub(crate) fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok()).collect()
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A host name as it may appear in a hostfile: no spaces or control characters.
fn valid_host(h: &str) -> bool {
    !h.is_empty() && h.len() <= 255 && h.bytes().all(|b| b.is_ascii_graphic())
}

impl Hello {
    fn fields<'a>(app: &'a str, id: &'a str, host: &'a str, port: &'a str, nonce: &'a [u8]) -> [&'a [u8]; 5] {
        [app.as_bytes(), id.as_bytes(), host.as_bytes(), port.as_bytes(), nonce]
    }

    /// The hello of process `id` of application `app`, signed with the job secret.
    pub fn new(secret: &[u8], app: &str, id: usize, host: &str, port: u16, nonce: [u8; 16]) -> Hello {
        let (ids, ports) = (id.to_string(), port.to_string());
        let mac = secret::mac(secret, HELLO, &Self::fields(app, &ids, host, &ports, &nonce));
        Hello { id, host: host.to_string(), port, nonce, mac }
    }

    /// The line as sent (with its newline).
    pub fn encode(&self) -> String {
        format!("hello {} {} {} {} {}\n", self.id, self.host, self.port, hex(&self.nonce), hex(&self.mac))
    }

    /// Parses a hello line (syntax only; see [`Hello::verify`]).
    pub fn parse(line: &str) -> Result<Hello> {
        let bad = || PsError::codec(format!("not a rendezvous hello: '{}'", line.chars().take(80).collect::<String>()));
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        let ["hello", id, host, port, nonce, mac] = f.as_slice() else { return Err(bad()) };
        Ok(Hello {
            id: id.parse().map_err(|_| bad())?,
            host: valid_host(host).then(|| host.to_string()).ok_or_else(bad)?,
            port: port.parse().map_err(|_| bad())?,
            nonce: hex_array(nonce).ok_or_else(bad)?,
            mac: hex_array(mac).ok_or_else(bad)?,
        })
    }

    /// True if the hello was made with the job secret for application `app`.
    pub fn verify(&self, secret: &[u8], app: &str) -> bool {
        let (ids, ports) = (self.id.to_string(), self.port.to_string());
        secret::verify(secret, HELLO, &Self::fields(app, &ids, &self.host, &ports, &self.nonce), &self.mac)
    }
}

/// `hosts <n> <mac>`: the first line of the AM's answer to a hello; `n` hostfile lines follow
/// (`<id> <host> <port>`, [`Hostfile::render`]), and `mac` covers the application, the hello's
/// nonce and those lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostsHeader {
    pub n: usize,
    mac: [u8; 32],
}

/// Why a line is not a [`HostsHeader`]. The texts are part of the errors a process reports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostsHeaderError {
    #[error("sent '{0}' instead of a hostfile")]
    NotHosts(String),
    #[error("bad process count")]
    Count,
    #[error("bad hostfile MAC")]
    Mac,
}

impl HostsHeader {
    fn fields<'a>(app: &'a str, nonce: &'a [u8; 16], body: &'a str) -> [&'a [u8]; 3] {
        [app.as_bytes(), nonce, body.as_bytes()]
    }

    /// The line as sent (with its newline).
    pub fn encode(&self) -> String {
        format!("hosts {} {}\n", self.n, hex(&self.mac))
    }

    /// Parses the header line; the count must be within 1..=[`MAX_PROCESSES`], so that a reader
    /// never waits for (or buffers) more lines than a job can have.
    pub fn parse(line: &str) -> std::result::Result<HostsHeader, HostsHeaderError> {
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        let ["hosts", n, mac] = f.as_slice() else { return Err(HostsHeaderError::NotHosts(line.to_string())) };
        let n = n.parse().ok().filter(|n| (1..=MAX_PROCESSES).contains(n)).ok_or(HostsHeaderError::Count)?;
        Ok(HostsHeader { n, mac: hex_array(mac).ok_or(HostsHeaderError::Mac)? })
    }

    /// True if `body` (the `n` lines that followed, each with its newline) is the AM's answer
    /// for application `app` to the hello that carried `nonce`.
    pub fn verify(&self, secret: &[u8], app: &str, nonce: &[u8; 16], body: &str) -> bool {
        secret::verify(secret, HOSTS, &Self::fields(app, nonce, body), &self.mac)
    }
}

/// The AM's whole answer to a verified hello: the header and the hostfile, authenticated for that
/// hello's nonce (a recorded answer does not verify for another hello). Read by [`join`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostsReply {
    pub header: HostsHeader,
    /// The hostfile lines, each with its newline.
    pub body: String,
}

impl HostsReply {
    pub fn new(secret: &[u8], app: &str, nonce: &[u8; 16], hosts: &Hostfile) -> HostsReply {
        let body = hosts.render();
        let mac = secret::mac(secret, HOSTS, &HostsHeader::fields(app, nonce, &body));
        HostsReply { header: HostsHeader { n: hosts.len(), mac }, body }
    }

    /// The bytes as sent: the header line, then the hostfile.
    pub fn encode(&self) -> String {
        let mut s = self.header.encode();
        s.push_str(&self.body);
        s
    }
}

/// Reads one line of at most `max` bytes (without its newline). `Ok(None)` at end of stream; an
/// error for a longer line or one that is not UTF-8, so a peer cannot make us buffer without end.
pub fn read_line_bounded(r: &mut impl BufRead, max: usize) -> std::io::Result<Option<String>> {
    let mut buf = Vec::new();
    let n = r.by_ref().take(max as u64 + 1).read_until(b'\n', &mut buf)?;
    bounded_line(buf, n, max)
}

/// The line in `buf`, read by `read_until(b'\n')` of at most `max + 1` bytes that returned `n`:
/// shared by the blocking reader above and the AM's asynchronous one.
pub fn bounded_line(mut buf: Vec<u8>, n: usize, max: usize) -> std::io::Result<Option<String>> {
    if n == 0 {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    } else if n > max {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("line longer than {max} bytes")));
    }
    String::from_utf8(buf)
        .map(Some)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "line is not UTF-8"))
}

/// The connection to the job's tracker after start-up (the AM, or the local launcher): progress
/// and the failure report share it.
#[derive(Clone)]
pub struct AmLink {
    stream: Arc<Mutex<TcpStream>>,
    /// What `report_progress` reports (and the planned clocks), flushed once more at the end.
    watched: Option<(Arc<Live>, i64)>,
}

impl AmLink {
    fn send(&self, line: &str) -> bool {
        let mut s = self.stream.lock().unwrap_or_else(|e| e.into_inner());
        s.write_all(line.as_bytes()).and_then(|_| s.flush()).is_ok()
    }

    /// A reader of what the AM sends on this connection after the hostfile
    /// (what `token_push` reads).
    pub fn reader(&self) -> Result<BufReader<TcpStream>> {
        let s = self.stream.lock().unwrap_or_else(|e| e.into_inner());
        s.try_clone().map(BufReader::new).map_err(|e| PsError::io("cloning the AM connection", e))
    }

    /// Sends what `live` has to tell: the clock, the events queued since the last report and,
    /// if it changed since `stale` (updated), the staleness histogram. Events are taken under
    /// the connection's lock, so reports from two threads keep their order.
    fn report(&self, live: &Live, total: i64, stale: &mut Vec<u64>) -> bool {
        let mut s = self.stream.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Report::Clock(live.clock.load(Ordering::Relaxed), total).encode();
        for e in live.take_events() {
            out += &e.encode();
        }
        let now = live.staleness();
        if now != *stale {
            out += &Report::Staleness(now.clone()).encode();
            *stale = now;
        }
        s.write_all(out.as_bytes()).and_then(|_| s.flush()).is_ok()
    }

    /// Reports `live` once a second until the connection or the process goes away.
    pub fn report_progress(&mut self, live: Arc<Live>, total: Option<i64>) {
        self.watched = Some((live.clone(), total.unwrap_or(-1)));
        let link = self.clone();
        std::thread::Builder::new()
            .name("ps-progress".into())
            .spawn(move || {
                let mut stale = Vec::new();
                while link.report(&live, total.unwrap_or(-1), &mut stale) {
                    std::thread::sleep(Duration::from_secs(1));
                }
            })
            .ok();
    }

    /// Sends what is left to report (the job's last evaluation, its final clock) before the
    /// process exits.
    pub fn flush(&self) {
        if let Some((live, total)) = &self.watched {
            self.report(live, *total, &mut Vec::new());
        }
    }

    /// Tells the AM what happened up to the failure (the tracker's page), then why this process
    /// is about to fail (one line, cut to fit), so that the YARN diagnostics say more than an
    /// exit status.
    pub fn report_failure(&self, reason: &str) {
        self.flush();
        self.send(&Report::Failed(reason.to_string()).encode());
    }
}

/// The application name a local launcher's tracker expects in the hellos of restart `attempt`'s
/// processes (a process of an earlier attempt does not authenticate for a later one).
pub fn local_app(attempt: u32) -> String {
    format!("local-attempt-{attempt}")
}

/// Connects process `id` to a tracker without a hostfile to wait for (the local launcher, at
/// `addr`): one authenticated hello (port 0), then reports.
pub fn report_to(addr: &str, app: &str, secret: &[u8], id: usize) -> Result<AmLink> {
    let mut s =
        TcpStream::connect(addr).map_err(|e| PsError::io(format!("connecting to the job tracker {addr}"), e))?;
    let mut nonce = [0u8; 16];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut nonce);
    s.write_all(Hello::new(secret, app, id, "127.0.0.1", 0, nonce).encode().as_bytes())
        .map_err(|e| PsError::io(format!("reporting to the job tracker {addr}"), e))?;
    Ok(AmLink { stream: Arc::new(Mutex::new(s)), watched: None })
}

/// Binds a listener (any port, or one in `ports`), reports it to the AM at `am` (application `app`) and returns it
/// with the hostfile. Retries until `timeout` if the AM drops the connection before answering
/// (it bounds its connections; a flood of strangers may hold them for a while).
pub fn join(
    am: &str,
    app: &str,
    secret: &[u8],
    id: usize,
    host: &str,
    timeout: Duration,
    ports: Option<ps_runtime::ports::PortRange>,
) -> Result<(TcpListener, Hostfile, AmLink)> {
    let listener = ps_runtime::ports::bind("0.0.0.0", ports)?;
    let port = listener.local_addr().map_err(|e| PsError::io("reading the bound port", e))?.port();
    let deadline = Instant::now() + timeout;
    let mut backoff = Duration::from_millis(100);
    loop {
        match try_join(am, app, secret, id, host, port, deadline) {
            Ok((hosts, link)) => return Ok((listener, hosts, link)),
            // Only a connection the AM accepted and then dropped is worth another try (it sheds
            // connections beyond its limit); no listener means the AM is gone.
            Err(Attempt::Retry(e)) if Instant::now() + backoff < deadline => {
                log::warn!("rendezvous with {am} failed ({e}); retrying");
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(2));
            }
            Err(Attempt::Retry(e)) => {
                return Err(PsError::Io(format!(
                    "no hostfile from the application master {am} within {timeout:?}: {e}"
                )))
            }
            Err(Attempt::Fail(e)) => return Err(e),
        }
    }
}

/// How one rendezvous attempt failed.
enum Attempt {
    /// The AM dropped or reset the connection before answering.
    Retry(PsError),
    Fail(PsError),
}

fn try_join(
    am: &str,
    app: &str,
    secret: &[u8],
    id: usize,
    host: &str,
    port: u16,
    deadline: Instant,
) -> std::result::Result<(Hostfile, AmLink), Attempt> {
    let fail = Attempt::Fail;
    let s = TcpStream::connect(am)
        .map_err(|e| fail(PsError::io(format!("connecting to the application master {am}"), e)))?;
    let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    s.set_read_timeout(Some(left)).ok();
    let mut nonce = [0u8; 16];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut nonce);
    let clone = || s.try_clone().map_err(|e| fail(PsError::io("cloning the AM connection", e)));
    let mut w = clone()?;
    w.write_all(Hello::new(secret, app, id, host, port, nonce).encode().as_bytes())
        .map_err(|e| Attempt::Retry(PsError::io(format!("reporting to {am}"), e)))?;
    let mut r = BufReader::new(clone()?);
    let hosts = read_hosts(&mut r, am, app, secret, &nonce)?;
    s.set_read_timeout(None).ok();
    Ok((hosts, AmLink { stream: Arc::new(Mutex::new(s)), watched: None }))
}

/// Reads and checks the AM's answer to a hello made with `nonce`: `hosts <n> <mac>` and n lines.
fn read_hosts(
    r: &mut impl BufRead,
    am: &str,
    app: &str,
    secret: &[u8],
    nonce: &[u8; 16],
) -> std::result::Result<Hostfile, Attempt> {
    let fail = Attempt::Fail;
    let what = |e: std::io::Error| Attempt::Retry(PsError::io(format!("waiting for the hostfile from {am}"), e));
    let first = read_line_bounded(r, MAX_LINE).map_err(what)?.ok_or_else(|| {
        Attempt::Retry(PsError::Io(format!("{am} closed the connection without sending the hostfile")))
    })?;
    let bad = |why: &str| fail(PsError::codec(format!("application master {am}: {why}")));
    let header = HostsHeader::parse(&first).map_err(|e| bad(&e.to_string()))?;
    let mut body = String::new();
    for _ in 0..header.n {
        let l = read_line_bounded(r, MAX_LINE).map_err(what)?.ok_or_else(|| bad("hostfile cut short"))?;
        body.push_str(&l);
        body.push('\n');
    }
    if !header.verify(secret, app, nonce, &body) {
        return Err(fail(PsError::Config(format!(
            "the hostfile from {am} is not authenticated by the job secret (not our application master?)"
        ))));
    }
    let hosts = Hostfile::parse(&body, &format!("hostfile from {am}")).map_err(fail)?;
    if hosts.len() != header.n {
        return Err(bad("hostfile lists a different number of processes than announced"));
    }
    Ok(hosts)
}

/// The method and target of an HTTP request line such as `GET /status.json HTTP/1.1` (the
/// tracker's pages share the rendezvous port), or `None` if the line is not one.
pub fn http_request(line: &str) -> Option<(&str, &str)> {
    let f: Vec<&str> = line.split(' ').collect();
    match f.as_slice() {
        [m, target, v] if v.starts_with("HTTP/") && !m.is_empty() && m.bytes().all(|b| b.is_ascii_uppercase()) => {
            Some((m, target))
        }
        _ => None,
    }
}

/// Parses an AM's answer as a process would (for the fuzz targets): `Ok` only if it is a
/// hostfile authenticated for `nonce`.
pub fn parse_hosts_reply(data: &[u8], app: &str, secret: &[u8], nonce: &[u8; 16]) -> Result<Hostfile> {
    read_hosts(&mut std::io::Cursor::new(data), "am", app, secret, nonce).map_err(|e| match e {
        Attempt::Retry(e) | Attempt::Fail(e) => e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hellos_verify_only_with_the_secret_and_application() {
        let k = [3u8; 32];
        let line = Hello::new(&k, "application_1_0001", 2, "node-a", 4242, [9; 16]).encode();
        let h = Hello::parse(line.trim()).unwrap();
        assert_eq!((h.id, h.host.as_str(), h.port), (2, "node-a", 4242));
        assert!(h.verify(&k, "application_1_0001"));
        assert!(!h.verify(&k, "application_1_0002"));
        assert!(!h.verify(&[4u8; 32], "application_1_0001"));
        // Any field changed: the MAC no longer matches.
        let forged = line.replace(" 4242 ", " 4243 ");
        assert!(!Hello::parse(forged.trim()).unwrap().verify(&k, "application_1_0001"));
        for bad in ["hello 1 h 2", "hello x h 1 00 00", "GET / HTTP/1.1", "", "hello 1 h\u{7} 2 00 00"] {
            assert!(Hello::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bounded_lines() {
        let mut r = std::io::Cursor::new(b"short\nxxxxxxxxxx\n".to_vec());
        assert_eq!(read_line_bounded(&mut r, 8).unwrap().as_deref(), Some("short"));
        assert!(read_line_bounded(&mut r, 8).is_err());
        let mut r = std::io::Cursor::new(b"12345678\n".to_vec());
        assert_eq!(read_line_bounded(&mut r, 8).unwrap().as_deref(), Some("12345678"));
        assert_eq!(read_line_bounded(&mut r, 8).unwrap(), None);
        assert_eq!(Report::parse("clock 3 10"), Some(Report::Clock(3, 10)));
        assert_eq!(Report::parse("failed boom at 3"), Some(Report::Failed("boom at 3".into())));
        assert_eq!(Report::parse("clock x"), None);
    }

    // The exact bytes the protocol had before the codec types existed (recorded from the
    // hand-written `format!`s they replaced): a change here breaks mixed-version jobs.
    const K: [u8; 32] = [3; 32];
    const APP: &str = "application_1_0001";
    const HELLO_LINE: &str =
        "hello 2 node-a 4242 09090909090909090909090909090909 781d9c377fd7774c26c0f2a92c425fc07e62bf8a7af1f60fdd25aeedc89ee33c\n";
    const HOSTS_REPLY: &str =
        "hosts 2 2628ecb5584ebe1770ed827b38515d83b4b582f41b61c17086b274d4d98e41da\n0 node-a 4242\n1 node-b 17\n";

    #[test]
    fn hello_round_trip() {
        let h = Hello::new(&K, APP, 2, "node-a", 4242, [9; 16]);
        let line = h.encode();
        assert_eq!(line, HELLO_LINE);
        // Parsed as the AM reads it (newline stripped) and as read with it.
        assert_eq!(Hello::parse(line.trim_end_matches('\n')).unwrap(), h);
        assert_eq!(Hello::parse(&line).unwrap(), h);
        assert_eq!(Hello::parse(&line).unwrap().encode(), line);
    }

    #[test]
    fn hosts_round_trip() {
        let hosts = Hostfile::new(vec![("node-a".into(), 4242), ("node-b".into(), 17)]);
        let reply = HostsReply::new(&K, APP, &[9; 16], &hosts);
        let bytes = reply.encode();
        assert_eq!(bytes, HOSTS_REPLY);
        let (first, body) = bytes.split_once('\n').unwrap();
        let header = HostsHeader::parse(first).unwrap();
        assert_eq!(header, reply.header);
        assert_eq!(header.encode(), format!("{first}\n"));
        assert!(header.verify(&K, APP, &[9; 16], body));
        assert!(!header.verify(&K, APP, &[8; 16], body), "verified for another hello's nonce");
        // The process's reader takes exactly these bytes, and only for its own nonce.
        assert_eq!(parse_hosts_reply(bytes.as_bytes(), APP, &K, &[9; 16]).unwrap(), hosts);
        assert!(parse_hosts_reply(bytes.as_bytes(), APP, &K, &[8; 16]).is_err());
        let bad = |l: &str| HostsHeader::parse(l).unwrap_err().to_string();
        assert_eq!(bad("hello 1"), "sent 'hello 1' instead of a hostfile");
        assert_eq!(bad("hosts 0 00"), "bad process count");
        assert_eq!(bad(&format!("hosts {} 00", MAX_PROCESSES + 1)), "bad process count");
        assert_eq!(bad("hosts 2 0g"), "bad hostfile MAC");
    }
}
