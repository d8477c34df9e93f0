//! The ResourceManager REST API for submission (`/ws/v1/cluster/apps...`): new application,
//! submit, state and report, kill (`yarn-submit --submit-via rest`). On insecure clusters the
//! user goes in `?user.name=`, which real RMs ignore unless their web filter honours it (the
//! default static user is `dr.who`): that is why IPC is the default path.
//! Blocking (reqwest): call it from a plain thread, not from inside a tokio runtime.

use crate::error::{Result, YarnError};
use crate::failover::{Limit, Rotation};
pub use crate::submit::{AppReport, LocalResource, Submission};
use crate::submit::{NodeRack, ResourceManager};
use serde::Serialize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

pub struct RmRest {
    /// `<scheme>://host:port/ws/v1/cluster` of each RM, in failover order.
    bases: Vec<String>,
    /// The RM that answered last.
    current: AtomicUsize,
    user: String,
    http: reqwest::blocking::Client,
}

#[derive(Serialize, Debug, Clone)]
struct Entry<V> {
    key: String,
    value: V,
}

impl Submission {
    fn body(&self) -> serde_json::Value {
        let lr: Vec<Entry<&LocalResource>> =
            self.local_resources.iter().map(|(k, v)| Entry { key: k.clone(), value: v }).collect();
        let env: Vec<Entry<&String>> =
            self.environment.iter().map(|(k, v)| Entry { key: k.clone(), value: v }).collect();
        // The RM decodes secrets with commons-codec Base64 (standard or URL-safe alphabet).
        let b64 = base64::engine::general_purpose::STANDARD;
        let secrets: Vec<Entry<String>> = self
            .secrets
            .iter()
            .map(|(k, v)| Entry { key: k.clone(), value: base64::Engine::encode(&b64, v) })
            .collect();
        serde_json::json!({
            "application-id": self.app_id,
            "application-name": self.name,
            "application-type": self.app_type,
            "queue": self.queue,
            "max-app-attempts": self.max_attempts.max(1),
            "resource": {"memory": self.memory_mb, "vCores": self.vcores},
            "am-container-spec": {
                "local-resources": {"entry": lr},
                "environment": {"entry": env},
                "commands": {"command": self.command},
                "credentials": {"tokens": {"entry": []}, "secrets": {"entry": secrets}},
            },
        })
    }
}

impl RmRest {
    /// `web_urls` are the RMs' web base URLs (`http://host:port` or `https://host:port`, see
    /// `HadoopConf::rm_web_urls`), in failover order. HTTPS trusts the system's certificate
    /// store, or the PEM file named by `SSL_CERT_FILE`.
    pub fn new(web_urls: &[String], user: &str) -> Result<Self> {
        if web_urls.is_empty() {
            return Err(YarnError::Config("no ResourceManager web address".into()));
        }
        let http = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| YarnError::io("creating the HTTP client", e))?;
        let bases = web_urls.iter().map(|u| format!("{}/ws/v1/cluster", u.trim_end_matches('/'))).collect();
        Ok(RmRest { bases, current: AtomicUsize::new(0), user: user.to_string(), http })
    }

    fn url(&self, base: &str, path: &str) -> String {
        format!("{base}{path}?user.name={}", self.user)
    }

    /// Sends the request `build` makes for an RM's base URL, moving on to the next RM when one
    /// cannot be reached (a standby RM's web server redirects to the active one, and the
    /// redirect is followed). `what` says what was being done, for the error.
    fn send(
        &self,
        what: &str,
        build: impl Fn(&str) -> reqwest::blocking::RequestBuilder,
    ) -> Result<reqwest::blocking::Response> {
        let mut rot = Rotation::new(self.bases.len(), self.current.load(Ordering::Relaxed), Limit::Rounds(2));
        loop {
            let base = &self.bases[rot.current()];
            match build(base).send() {
                Ok(r) => {
                    self.current.store(rot.current(), Ordering::Relaxed);
                    return self.check(what, base, r);
                }
                Err(e) => {
                    let msg = chain(&e);
                    let err = YarnError::Io(format!("{what} at {base}: {msg}"));
                    // An untrusted certificate is the same on every RM.
                    if !e.is_connect() || msg.contains("certificate") {
                        return Err(err);
                    }
                    log::debug!("{err}; trying the next ResourceManager");
                    match rot.advance() {
                        Some(wait) => std::thread::sleep(wait),
                        None => return Err(err),
                    }
                }
            }
        }
    }

    fn check(&self, what: &str, base: &str, r: reqwest::blocking::Response) -> Result<reqwest::blocking::Response> {
        let status = r.status();
        if status.is_success() {
            return Ok(r);
        }
        let text = r.text().unwrap_or_default();
        // The RM wraps errors as {"RemoteException": {"exception", "message", ...}}.
        let msg = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v["RemoteException"]["message"].as_str().map(String::from))
            .unwrap_or(text);
        Err(YarnError::Io(format!("{what} at {base}: HTTP {status}: {msg}")))
    }
}

/// An HTTP error with its causes (reqwest's own message omits them), and what to do when the
/// RM's certificate is not trusted.
fn chain(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    let mut cur = std::error::Error::source(e);
    while let Some(c) = cur {
        s = format!("{s}: {c}");
        cur = c.source();
    }
    if s.contains("certificate") || s.contains("UnknownIssuer") {
        s.push_str(
            " (the ResourceManager's HTTPS certificate is not trusted: add the cluster's CA to the \
             system trust store, or set SSL_CERT_FILE to a PEM file holding it)",
        );
    }
    s
}

impl ResourceManager for RmRest {
    /// `POST /apps/new-application`: a new application id.
    fn new_application(&self) -> Result<String> {
        let r = self.send("asking for a new application", |b| self.http.post(self.url(b, "/apps/new-application")))?;
        let v: serde_json::Value = r.json().map_err(|e| YarnError::Codec(format!("new-application: {e}")))?;
        v["application-id"]
            .as_str()
            .map(String::from)
            .ok_or_else(|| YarnError::Codec(format!("new-application answered without an application-id: {v}")))
    }

    /// `POST /apps`: submits (202 Accepted).
    fn submit(&self, s: &Submission) -> Result<()> {
        let body = s.body();
        self.send(&format!("submitting {}", s.app_id), |b| self.http.post(self.url(b, "/apps")).json(&body))?;
        Ok(())
    }

    fn report(&self, app: &str) -> Result<AppReport> {
        let path = format!("/apps/{app}");
        let r = self.send(&format!("getting the report of {app}"), |b| self.http.get(self.url(b, &path)))?;
        let v: serde_json::Value = r.json().map_err(|e| YarnError::Codec(format!("{app}: {e}")))?;
        serde_json::from_value(v["app"].clone()).map_err(|e| YarnError::Codec(format!("report of {app}: {e}")))
    }

    /// `PUT /apps/{id}/state {"state":"KILLED"}`: 200 once killed, 202 while in progress.
    fn request_kill(&self, app: &str) -> Result<bool> {
        let (path, body) = (format!("/apps/{app}/state"), serde_json::json!({"state": "KILLED"}));
        let r = self.send(&format!("killing {app}"), |b| self.http.put(self.url(b, &path)).json(&body))?;
        Ok(r.status() == reqwest::StatusCode::OK)
    }

    /// `GET /nodes`: `{"nodes": {"node": [{"id": "host:port", "rack": ...}, ...]}}` (`null`
    /// instead of the object when there are none).
    fn node_racks(&self) -> Result<Vec<NodeRack>> {
        let r = self.send("listing the cluster's nodes", |b| self.http.get(self.url(b, "/nodes")))?;
        let v: serde_json::Value = r.json().map_err(|e| YarnError::Codec(format!("nodes: {e}")))?;
        let empty = Vec::new();
        let nodes = v["nodes"]["node"].as_array().unwrap_or(&empty);
        nodes
            .iter()
            .map(|n| {
                let bad = || YarnError::Codec(format!("nodes: a node without an id host:port or a rack: {n}"));
                let (host, port) = n["id"].as_str().and_then(|id| id.rsplit_once(':')).ok_or_else(bad)?;
                Ok(NodeRack {
                    host: host.to_string(),
                    port: port.parse().map_err(|_| bad())?,
                    rack: n["rack"].as_str().ok_or_else(bad)?.to_string(),
                })
            })
            .collect()
    }
}
