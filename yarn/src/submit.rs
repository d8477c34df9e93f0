//! What a submission is, independent of how it reaches the ResourceManager: the application
//! master's launch context ([`Submission`]), the report ([`AppReport`]) and the
//! [`ResourceManager`] trait that the IPC client (`appclient`, the default) and the REST
//! client (`rest`) implement.

use crate::error::{Result, YarnError};
use crate::proto::ApplicationIdProto;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// What `GET /apps/{id}` reports.
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct AppReport {
    pub id: String,
    pub user: String,
    pub name: String,
    pub queue: String,
    pub state: String,
    pub final_status: String,
    pub progress: f64,
    pub tracking_url: String,
    pub diagnostics: String,
}

impl AppReport {
    pub fn is_terminal(&self) -> bool {
        matches!(self.state.as_str(), "FINISHED" | "FAILED" | "KILLED")
    }
    /// The only success: FINISHED with final status SUCCEEDED.
    pub fn succeeded(&self) -> bool {
        self.state == "FINISHED" && self.final_status == "SUCCEEDED"
    }
}

/// A file the NodeManager downloads into the container (`size` and `timestamp` must match HDFS exactly).
#[derive(Serialize, Debug, Clone)]
pub struct LocalResource {
    pub resource: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub visibility: String,
    pub size: u64,
    pub timestamp: u64,
}

/// The submission: everything the RM needs to start the application master.
#[derive(Debug, Clone, Default)]
pub struct Submission {
    pub app_id: String,
    pub name: String,
    pub app_type: String,
    pub queue: String,
    pub memory_mb: u64,
    pub vcores: u32,
    pub local_resources: BTreeMap<String, LocalResource>,
    pub environment: BTreeMap<String, String>,
    pub command: String,
    /// Secrets for the AM's credentials (`Credentials.addSecretKey`), by alias.
    pub secrets: BTreeMap<String, Vec<u8>>,
    /// Tokens for the AM's credentials (secure clusters: HDFS delegation tokens), by alias.
    pub tokens: Vec<(String, crate::credentials::Token)>,
    /// How many times YARN may start the application master (a new attempt after the AM's
    /// container dies); 0 is taken as 1.
    pub max_attempts: u32,
}

/// A NodeManager of the cluster and its rack (as the RM's topology resolves it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRack {
    pub host: String,
    pub port: u16,
    pub rack: String,
}

/// Submitting, following and killing applications, whichever way the RM is reached.
pub trait ResourceManager {
    /// A new application id (`application_<cluster timestamp>_<sequence>`).
    fn new_application(&self) -> Result<String>;
    fn submit(&self, s: &Submission) -> Result<()>;
    fn report(&self, app: &str) -> Result<AppReport>;
    /// Asks the RM to kill `app`; true once the RM says the kill is complete.
    fn request_kill(&self, app: &str) -> Result<bool>;
    /// Every node the RM knows, with its rack.
    fn node_racks(&self) -> Result<Vec<NodeRack>>;
    /// Applications of `users` (all if empty) in `states` (all if empty) of `types` (all if empty).
    fn list(&self, _users: &[String], _states: &[&str], _types: &[String]) -> Result<Vec<AppReport>> {
        Err(YarnError::Config("listing applications needs the RM's IPC protocol (--submit-via ipc)".into()))
    }

    /// Kills `app`, repeating the request (as Hadoop's `YarnClientImpl` does) until the RM says the
    /// kill is complete or the application is in a final state.
    fn kill(&self, app: &str) -> Result<AppReport> {
        for _ in 0..100 {
            let done = self.request_kill(app)?;
            let rep = self.report(app)?;
            if done || rep.is_terminal() {
                return Ok(rep);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Err(YarnError::Io(format!("{app} did not reach a final state after 20 s of kill requests")))
    }
}

/// `application_1700000000000_0001` → its record; the error names the string.
pub fn parse_app_id(s: &str) -> Result<ApplicationIdProto> {
    let bad = || YarnError::Config(format!("{s:?} is not an application id (application_<timestamp>_<number>)"));
    let rest = s.strip_prefix("application_").ok_or_else(bad)?;
    let (ts, n) = rest.split_once('_').ok_or_else(bad)?;
    Ok(ApplicationIdProto {
        cluster_timestamp: Some(ts.parse().map_err(|_| bad())?),
        id: Some(n.parse().map_err(|_| bad())?),
    })
}

/// The record as Hadoop prints it: the sequence number has at least four digits.
pub fn format_app_id(id: &ApplicationIdProto) -> String {
    format!("application_{}_{:04}", id.cluster_timestamp.unwrap_or(0), id.id.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn application_ids_round_trip_as_hadoop_prints_them() {
        let id = parse_app_id("application_1700000000000_0042").unwrap();
        assert_eq!((id.cluster_timestamp, id.id), (Some(1_700_000_000_000), Some(42)));
        assert_eq!(format_app_id(&id), "application_1700000000000_0042");
        assert_eq!(format_app_id(&parse_app_id("application_1_12345").unwrap()), "application_1_12345");
        for bad in ["app_1_2", "application_1", "application_x_2", "application_1_y", ""] {
            let e = parse_app_id(bad).unwrap_err().to_string();
            assert!(e.contains("is not an application id"), "{bad}: {e}");
        }
    }
}
