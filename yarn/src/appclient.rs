//! `ApplicationClientProtocol` over Hadoop IPC (the RM's client port, `yarn.resourcemanager.address`,
//! 8032 by default): what the `yarn` CLI and Spark use. Unlike REST it carries the submitting
//! user in the connection itself, so queue placement, ACLs and `yarn logs` see the real user.
//! Blocking, like [`crate::rest`]: it drives its own single-threaded tokio runtime, so call it
//! from a plain thread.

use crate::credentials::Credentials;
use crate::error::{Result, YarnError};
use crate::failover::{worth_failover, Limit, Rotation};
use crate::gssapi::Login;
use crate::ipc::{Auth, IpcConnection};
use crate::proto::*;
use crate::submit::{format_app_id, parse_app_id, AppReport, NodeRack, ResourceManager, Submission};
use prost::Message;
use std::sync::Mutex;

pub const PROTOCOL: &str = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB";

/// Who calls the ResourceManager.
#[derive(Clone, Debug)]
pub enum Caller {
    /// An insecure cluster: the user named in the connection (SIMPLE).
    User(String),
    /// A secure cluster: the Kerberos principal of the ticket cache or keytab.
    Kerberos(Login),
}

pub struct RmIpc {
    /// The ResourceManagers in failover order (one without HA).
    addrs: Vec<String>,
    caller: Caller,
    rt: tokio::runtime::Runtime,
    /// The open connection and the index of its RM.
    conn: Mutex<Option<(usize, IpcConnection)>>,
}

impl RmIpc {
    /// Connects as `user` (SIMPLE authentication) to the first of `addrs` (`host:port`, in
    /// failover order) that answers.
    pub fn connect(addrs: &[String], user: &str) -> Result<Self> {
        Self::connect_as(addrs, Caller::User(user.to_string()))
    }

    /// Connects as `caller` to the first of `addrs` that answers.
    pub fn connect_as(addrs: &[String], caller: Caller) -> Result<Self> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| YarnError::io("creating the IPC runtime", e))?;
        if addrs.is_empty() {
            return Err(YarnError::Config("no ResourceManager address".into()));
        }
        let c = RmIpc { addrs: addrs.to_vec(), caller, rt, conn: Mutex::new(None) };
        let mut last = None;
        for i in 0..addrs.len() {
            match c.open(i) {
                Ok(conn) => {
                    *c.conn.lock().unwrap_or_else(|e| e.into_inner()) = Some((i, conn));
                    return Ok(c);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("at least one address was tried"))
    }

    fn open(&self, i: usize) -> Result<IpcConnection> {
        let addr = &self.addrs[i];
        let auth = match &self.caller {
            Caller::User(user) => Auth::Simple { user },
            Caller::Kerberos(login) => Auth::Kerberos(login),
        };
        self.rt.block_on(IpcConnection::connect(addr, PROTOCOL, auth)).map_err(|e| match e {
            YarnError::Io(m) => {
                YarnError::Io(format!("{m} (the ResourceManager's client port, yarn.resourcemanager.address)"))
            }
            e => e,
        })
    }

    /// One call, failing over between the RMs ([`Rotation`]): a connection error or a standby RM
    /// moves on to the next one, for up to four rounds (an RM failover takes seconds). A remote
    /// error of the active RM is final.
    fn call<Req: Message, Resp: Message + Default>(&self, method: &str, req: &Req) -> Result<Resp> {
        let mut guard = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let start = guard.as_ref().map_or(0, |(i, _)| *i);
        let mut rot = Rotation::new(self.addrs.len(), start, Limit::Rounds(4));
        loop {
            let i = rot.current();
            let e = match guard.take() {
                Some((j, conn)) if j == i => match self.rt.block_on(conn.call(method, req)) {
                    Err(e) if worth_failover(&e) => {
                        log::info!("{method} on {}: {e}; trying the next ResourceManager", self.addrs[i]);
                        e
                    }
                    r => {
                        *guard = Some((j, conn));
                        return r;
                    }
                },
                _ => match self.open(i) {
                    Ok(c) => {
                        *guard = Some((i, c));
                        continue;
                    }
                    Err(e) if worth_failover(&e) => {
                        log::debug!("{method}: {e}; trying the next ResourceManager");
                        e
                    }
                    Err(e) => return Err(e),
                },
            };
            match rot.advance() {
                Some(wait) => std::thread::sleep(wait),
                None => return Err(e),
            }
        }
    }

    /// Applications of `users` (all if empty) in `states` (names as `RUNNING`; all if empty).
    pub fn applications(&self, users: &[String], states: &[&str], types: &[String]) -> Result<Vec<AppReport>> {
        let application_states = states
            .iter()
            .map(|s| {
                APP_STATES
                    .iter()
                    .find(|(_, n)| n == s)
                    .map(|(v, _)| *v)
                    .ok_or_else(|| YarnError::Config(format!("{s:?} is not a YARN application state")))
            })
            .collect::<Result<Vec<i32>>>()?;
        let req = GetApplicationsRequestProto {
            application_types: types.to_vec(),
            application_states,
            users: users.to_vec(),
        };
        let r: GetApplicationsResponseProto = self.call("getApplications", &req)?;
        Ok(r.applications.iter().map(report).collect())
    }
}

/// The report in the REST API's terms (progress in percent, enum names without prefixes).
fn report(r: &ApplicationReportProto) -> AppReport {
    AppReport {
        id: r.application_id.as_ref().map(format_app_id).unwrap_or_default(),
        user: r.user.clone().unwrap_or_default(),
        name: r.name.clone().unwrap_or_default(),
        queue: r.queue.clone().unwrap_or_default(),
        state: enum_name(&APP_STATES, r.yarn_application_state.unwrap_or(1)),
        final_status: enum_name(&FINAL_STATUSES, r.final_application_status.unwrap_or(0)),
        progress: f64::from(r.progress.unwrap_or(0.0)) * 100.0,
        tracking_url: r.tracking_url.clone().unwrap_or_default(),
        diagnostics: r.diagnostics.clone().unwrap_or_default(),
    }
}

/// The submission as the RM's record: the job secret goes into the AM's credentials blob.
fn submission_context(s: &Submission) -> Result<ApplicationSubmissionContextProto> {
    let local_resources =
        s.local_resources
            .iter()
            .map(|(k, r)| {
                let code = |v: &str, table: &[(&str, i32)]| {
                    table.iter().find(|(n, _)| *n == v).map(|(_, c)| *c).ok_or_else(|| {
                        YarnError::Config(format!("local resource {k}: unknown type or visibility {v:?}"))
                    })
                };
                Ok(StringLocalResourceMapProto {
                    key: Some(k.clone()),
                    value: Some(LocalResourceProto {
                        resource: Some(UrlProto::from_url(&r.resource)?),
                        size: Some(r.size as i64),
                        timestamp: Some(r.timestamp as i64),
                        r#type: Some(code(&r.kind, &[("ARCHIVE", ARCHIVE), ("FILE", FILE)])?),
                        visibility: Some(code(
                            &r.visibility,
                            &[("PUBLIC", PUBLIC), ("PRIVATE", PRIVATE), ("APPLICATION", APPLICATION)],
                        )?),
                        pattern: None,
                    }),
                })
            })
            .collect::<Result<Vec<_>>>()?;
    let creds = Credentials { tokens: s.tokens.clone(), secrets: s.secrets.clone().into_iter().collect() };
    Ok(ApplicationSubmissionContextProto {
        application_id: Some(parse_app_id(&s.app_id)?),
        application_name: Some(s.name.clone()),
        queue: Some(s.queue.clone()),
        priority: None,
        am_container_spec: Some(ContainerLaunchContextProto {
            local_resources,
            tokens: Some(creds.to_bytes()),
            environment: s
                .environment
                .iter()
                .map(|(k, v)| StringStringMapProto { key: Some(k.clone()), value: Some(v.clone()) })
                .collect(),
            command: vec![s.command.clone()],
        }),
        cancel_tokens_when_complete: Some(true),
        max_app_attempts: Some(s.max_attempts.max(1) as i32),
        resource: Some(ResourceProto { memory: Some(s.memory_mb as i64), virtual_cores: Some(s.vcores as i32) }),
        application_type: Some(s.app_type.clone()),
        application_tags: Vec::new(),
    })
}

impl ResourceManager for RmIpc {
    fn list(&self, users: &[String], states: &[&str], types: &[String]) -> Result<Vec<AppReport>> {
        self.applications(users, states, types)
    }

    fn new_application(&self) -> Result<String> {
        let r: GetNewApplicationResponseProto = self.call("getNewApplication", &GetNewApplicationRequestProto {})?;
        let id = r.application_id.ok_or_else(|| {
            YarnError::Codec(format!("{}: getNewApplication answered without an id", self.addrs.join(" or ")))
        })?;
        Ok(format_app_id(&id))
    }

    fn submit(&self, s: &Submission) -> Result<()> {
        let req = SubmitApplicationRequestProto { application_submission_context: Some(submission_context(s)?) };
        let _: SubmitApplicationResponseProto = self.call("submitApplication", &req)?;
        Ok(())
    }

    fn report(&self, app: &str) -> Result<AppReport> {
        let req = GetApplicationReportRequestProto { application_id: Some(parse_app_id(app)?) };
        let r: GetApplicationReportResponseProto = self.call("getApplicationReport", &req)?;
        r.application_report
            .as_ref()
            .map(report)
            .ok_or_else(|| YarnError::Codec(format!("{}: the report of {app} is empty", self.addrs.join(" or "))))
    }

    fn request_kill(&self, app: &str) -> Result<bool> {
        let req = KillApplicationRequestProto { application_id: Some(parse_app_id(app)?) };
        let r: KillApplicationResponseProto = self.call("forceKillApplication", &req)?;
        Ok(r.is_kill_completed.unwrap_or(false))
    }

    fn node_racks(&self) -> Result<Vec<NodeRack>> {
        let r: GetClusterNodesResponseProto = self.call("getClusterNodes", &GetClusterNodesRequestProto::default())?;
        r.node_reports
            .into_iter()
            .map(|n| {
                let id = n.node_id.unwrap_or_default();
                let (host, port) = (id.host.unwrap_or_default(), id.port.unwrap_or(0));
                match (host.is_empty(), u16::try_from(port), n.rack_name) {
                    (false, Ok(port), Some(rack)) => Ok(NodeRack { host, port, rack }),
                    _ => Err(YarnError::Codec(format!(
                        "{}: getClusterNodes reported a node without host, port or rack ({host}:{port})",
                        self.addrs.join(" or ")
                    ))),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::Token;
    use crate::submit::LocalResource;
    use std::collections::BTreeMap;

    #[test]
    fn submission_becomes_the_rms_record() {
        let s = Submission {
            app_id: "application_17_0003".into(),
            name: "ps-mf".into(),
            app_type: "PARAMETER_SERVER".into(),
            queue: "q".into(),
            memory_mb: 512,
            vcores: 1,
            local_resources: BTreeMap::from([(
                "ps-app-master".to_string(),
                LocalResource {
                    resource: "hdfs://nn:8020/user/u/x".into(),
                    kind: "FILE".into(),
                    visibility: "APPLICATION".into(),
                    size: 5,
                    timestamp: 6,
                },
            )]),
            environment: BTreeMap::from([("A".to_string(), "b".to_string())]),
            command: "./ps-app-master".into(),
            secrets: BTreeMap::from([("job".to_string(), vec![1, 2, 3])]),
            tokens: vec![(
                "10.0.0.1:8020".into(),
                Token { kind: "HDFS_DELEGATION_TOKEN".into(), ..Default::default() },
            )],
            max_attempts: 2,
        };
        let c = submission_context(&s).unwrap();
        assert_eq!(c.max_app_attempts, Some(2));
        assert_eq!(c.application_id, Some(ApplicationIdProto { id: Some(3), cluster_timestamp: Some(17) }));
        let spec = c.am_container_spec.unwrap();
        let lr = spec.local_resources[0].value.clone().unwrap();
        let url = lr.resource.unwrap();
        assert_eq!((url.host.as_deref(), url.port, url.file.as_deref()), (Some("nn"), Some(8020), Some("/user/u/x")));
        assert_eq!(
            (lr.r#type, lr.visibility, lr.size, lr.timestamp),
            (Some(FILE), Some(APPLICATION), Some(5), Some(6))
        );
        let creds = Credentials::parse(&spec.tokens.unwrap()).unwrap();
        assert_eq!(creds.secrets, vec![("job".to_string(), vec![1, 2, 3])]);
        assert_eq!(creds.tokens, s.tokens, "the delegation tokens travel in the AM's credentials");
        assert_eq!(spec.command, vec!["./ps-app-master".to_string()]);
        let mut bad = s.clone();
        bad.local_resources.get_mut("ps-app-master").unwrap().visibility = "SHARED".into();
        assert!(submission_context(&bad).unwrap_err().to_string().contains("SHARED"));
    }

    #[test]
    fn reports_read_like_the_rest_api() {
        let r = ApplicationReportProto {
            application_id: Some(ApplicationIdProto { id: Some(7), cluster_timestamp: Some(99) }),
            yarn_application_state: Some(6),
            final_application_status: Some(1),
            progress: Some(0.5),
            ..Default::default()
        };
        let a = report(&r);
        assert_eq!(
            (a.id.as_str(), a.state.as_str(), a.final_status.as_str()),
            ("application_99_0007", "FINISHED", "SUCCEEDED")
        );
        assert!(a.succeeded() && (a.progress - 50.0).abs() < 1e-9);
        let odd = report(&ApplicationReportProto { yarn_application_state: Some(42), ..Default::default() });
        assert_eq!(odd.state, "UNKNOWN(42)");
    }
}
