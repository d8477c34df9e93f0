//! Serving a [`super::JobView`]: the HTTP side shared by the YARN application master (on its
//! rendezvous port, the tracking URL) and the local launcher (`yarn-submit --ui`), and the final
//! `report.html`.
//!
//! The HTTP side is read-only and minimal on purpose (HTTP/1.0, one request per connection, no
//! request body read): `GET /` (or `/index.html`) is the page, `GET /status.json` the same data
//! for machines; HEAD answers the headers, other methods 405, other paths 404.

use super::page;
use ps_runtime::storage;
use ps_runtime::Result;
use serde_json::Value;
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

/// Request headers read at most (each a bounded line); the rest is never looked at.
const MAX_HEADERS: usize = 64;

/// One line of at most `MAX_LINE` bytes, within `limit`. `Ok(None)` at end of stream.
pub async fn line_within(r: &mut (impl AsyncBufRead + Unpin), limit: Duration) -> std::io::Result<Option<String>> {
    let max = ps_runtime::report::MAX_LINE;
    let mut buf = Vec::new();
    let mut bounded = (&mut *r).take(max as u64 + 1);
    let n = tokio::time::timeout(limit, bounded.read_until(b'\n', &mut buf))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, format!("silent for {limit:?}")))??;
    crate::rendezvous::bounded_line(buf, n, max)
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Response {
    pub code: &'static str,
    pub content_type: &'static str,
    pub body: String,
}

/// The answer to `method target`; `status` gives the `status.json` value when it is needed.
pub fn respond(method: &str, target: &str, status: impl FnOnce() -> Value) -> Response {
    let json = "application/json";
    if method != "GET" && method != "HEAD" {
        let body = r#"{"error":"the status page is read-only"}"#.into();
        return Response { code: "405 Method Not Allowed", content_type: json, body };
    }
    let path = target.split(['?', '#']).next().unwrap_or("");
    match path {
        "/" | "" | "/index.html" => {
            Response { code: "200 OK", content_type: "text/html; charset=utf-8", body: page::render(&status(), true) }
        }
        "/status.json" => Response { code: "200 OK", content_type: json, body: status().to_string() },
        _ => Response { code: "404 Not Found", content_type: json, body: r#"{"error":"no such page"}"#.into() },
    }
}

/// Answers the HTTP request whose first line was `method target` on `r`/`w`: reads its headers
/// (bounded), writes the answer and closes. `limit` bounds each wait on the client.
pub async fn answer(
    r: &mut (impl AsyncBufRead + Unpin),
    w: &mut (impl AsyncWriteExt + Unpin),
    method: &str,
    target: &str,
    limit: Duration,
    status: impl FnOnce() -> Value,
) -> std::io::Result<()> {
    for _ in 0..MAX_HEADERS {
        match line_within(r, limit).await? {
            Some(l) if !l.trim().is_empty() => continue,
            _ => break,
        }
    }
    let resp = respond(method, target, status);
    let head = format!(
        "HTTP/1.0 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nAllow: GET, HEAD\r\n\r\n",
        resp.code,
        resp.content_type,
        resp.body.len()
    );
    w.write_all(head.as_bytes()).await?;
    if method != "HEAD" {
        w.write_all(resp.body.as_bytes()).await?;
    }
    // Closing with an unread request body would reset the connection and could destroy the
    // answer in flight: end our side, then discard a bounded amount of what the client still sends.
    w.shutdown().await?;
    let _ = tokio::time::timeout(limit, async {
        let mut buf = [0u8; 4096];
        let mut left = 64usize << 10;
        while left > 0 {
            match r.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    })
    .await;
    Ok(())
}

/// Where the final page goes: beside the stats file `stats_url` (a local path or a URL), named
/// after it (`mf.json` -> `mf.report.html`), so jobs writing their stats to one folder keep
/// one page each.
pub fn report_next_to(stats_url: &str) -> String {
    let name = stats_url.rsplit('/').next().unwrap_or(stats_url);
    let stem = match name.rsplit_once('.') {
        Some((s, _)) if !s.is_empty() => s,
        _ => name,
    };
    next_to(stats_url, &format!("{stem}.report.html"))
}

/// The URL of file `name` in the directory of the `--stats` file (local or `hdfs://`).
pub fn next_to(stats_url: &str, name: &str) -> String {
    match stats_url.rsplit_once('/') {
        Some((dir, _)) => format!("{dir}/{name}"),
        None => name.into(),
    }
}

/// Copies the per-clock stats lines (`clocks-<pid>.jsonl`, `--stats-per-clock`) from `dir`, a
/// job's local directory or its stats directory on HDFS, next to the `--stats` file. Returns
/// how many files it copied.
pub fn copy_clock_logs(dir: &str, stats_url: &str) -> Result<usize> {
    let st = storage::storage_for(dir)?;
    let logs: Vec<String> =
        st.children(dir)?.into_iter().filter(|n| n.starts_with("clocks-") && n.ends_with(".jsonl")).collect();
    for name in &logs {
        let from = format!("{}/{name}", dir.trim_end_matches('/'));
        storage::copy(&from, &next_to(stats_url, name), "per-clock stats")?;
    }
    Ok(logs.len())
}

/// Writes the final page for `status` to `url` (local or `hdfs://`), atomically.
pub fn write_report(url: &str, status: &Value) -> Result<()> {
    let st = storage::storage_for(url)?;
    storage::write_atomic(st.as_ref(), url, page::render(status, false).as_bytes(), "job report page")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        let s = || serde_json::json!({"status": "running", "app": "demo"});
        assert!(respond("GET", "/", s).body.starts_with("<!DOCTYPE html>"));
        assert_eq!(respond("GET", "/index.html?x=1", s).content_type, "text/html; charset=utf-8");
        assert_eq!(respond("HEAD", "/status.json", s).body, s().to_string());
        assert_eq!(respond("GET", "/../etc/passwd", s).code, "404 Not Found");
        assert_eq!(respond("POST", "/", s).code, "405 Method Not Allowed");
        assert_eq!(report_next_to("out/run1/stats.json"), "out/run1/stats.report.html");
        assert_eq!(report_next_to("hdfs://nn:8020/jobs/mf.json"), "hdfs://nn:8020/jobs/mf.report.html");
        assert_eq!(report_next_to("/stats.json"), "/stats.report.html");
        assert_eq!(report_next_to("stats"), "stats.report.html");
        assert_eq!(report_next_to("out/.json"), "out/.json.report.html");
    }
}
