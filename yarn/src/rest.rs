//! The ResourceManager REST API for submission (`/ws/v1/cluster/apps...`): new application,
//! submit, state and report, kill (`yarn-submit --submit-via rest`). On insecure clusters the
//! user goes in `?user.name=`, which real RMs ignore unless their web filter honours it (the
//! default static user is `dr.who`): that is why IPC is the default path.
//! Blocking (reqwest): call it from a plain thread, not from inside a tokio runtime.

use crate::error::{Result, YarnError};
use crate::submit::ResourceManager;
pub use crate::submit::{AppReport, LocalResource, Submission};
use serde::Serialize;
use std::time::Duration;

pub struct RmRest {
    base: String,
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
            "max-app-attempts": 1,
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
    /// `webapp` is `host:port` (`yarn.resourcemanager.webapp.address`).
    pub fn new(webapp: &str, user: &str) -> Result<Self> {
        let http = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| YarnError::io("creating the HTTP client", e))?;
        Ok(RmRest { base: format!("http://{webapp}/ws/v1/cluster"), user: user.to_string(), http })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}?user.name={}", self.base, self.user)
    }

    fn check(&self, what: &str, r: reqwest::blocking::Response) -> Result<reqwest::blocking::Response> {
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
        Err(YarnError::Io(format!("{what} at {}: HTTP {status}: {msg}", self.base)))
    }
}

impl ResourceManager for RmRest {
    /// `POST /apps/new-application`: a new application id.
    fn new_application(&self) -> Result<String> {
        let r = self
            .http
            .post(self.url("/apps/new-application"))
            .send()
            .map_err(|e| YarnError::io(format!("asking {} for a new application", self.base), e))?;
        let v: serde_json::Value =
            self.check("new-application", r)?.json().map_err(|e| YarnError::Codec(format!("new-application: {e}")))?;
        v["application-id"]
            .as_str()
            .map(String::from)
            .ok_or_else(|| YarnError::Codec(format!("new-application answered without an application-id: {v}")))
    }

    /// `POST /apps`: submits (202 Accepted).
    fn submit(&self, s: &Submission) -> Result<()> {
        let r = self
            .http
            .post(self.url("/apps"))
            .json(&s.body())
            .send()
            .map_err(|e| YarnError::io(format!("submitting {} to {}", s.app_id, self.base), e))?;
        self.check(&format!("submitting {}", s.app_id), r)?;
        Ok(())
    }

    fn report(&self, app: &str) -> Result<AppReport> {
        let r = self
            .http
            .get(self.url(&format!("/apps/{app}")))
            .send()
            .map_err(|e| YarnError::io(format!("getting the report of {app}"), e))?;
        let v: serde_json::Value =
            self.check(&format!("report of {app}"), r)?.json().map_err(|e| YarnError::Codec(format!("{app}: {e}")))?;
        serde_json::from_value(v["app"].clone()).map_err(|e| YarnError::Codec(format!("report of {app}: {e}")))
    }

    /// `PUT /apps/{id}/state {"state":"KILLED"}`: 200 once killed, 202 while in progress.
    fn request_kill(&self, app: &str) -> Result<bool> {
        let r = self
            .http
            .put(self.url(&format!("/apps/{app}/state")))
            .json(&serde_json::json!({"state": "KILLED"}))
            .send()
            .map_err(|e| YarnError::io(format!("killing {app}"), e))?;
        let done = r.status() == reqwest::StatusCode::OK;
        self.check(&format!("killing {app}"), r)?;
        Ok(done)
    }
}
