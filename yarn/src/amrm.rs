//! The AM side of `ApplicationMasterProtocol`: register, the allocate heartbeat with strict
//! `response_id` echo and asks as totals, NMTokens cached per node, AMRMToken roll, finish until
//! the RM says the application is unregistered, and ResourceManager HA: the scheduler addresses
//! are tried in turn on connection errors and `StandbyException`, and after a failover (the new
//! RM answers `ApplicationMasterNotRegisteredException`) or a resync the client registers again,
//! restarts the response ids and re-sends what is outstanding, as Hadoop's `AMRMClientImpl` does.

use crate::credentials::Token;
use crate::error::{Result, YarnError};
use crate::failover::{worth_failover, Limit, Rotation};
use crate::ipc::{Auth, IpcConnection};
use crate::proto::*;
use prost::Message;
use std::collections::HashMap;
use std::time::{Duration, Instant};

pub const PROTOCOL: &str = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB";
const NOT_REGISTERED: &str = "ApplicationMasterNotRegisteredException";

pub struct AmRmClient {
    /// The RM scheduler addresses in failover order (one without HA).
    addrs: Vec<String>,
    /// Index of the RM in use.
    current: usize,
    /// How long a call keeps failing over before it gives up.
    max_wait: Duration,
    /// The longest wait between rounds of attempts (`...connect.retry-interval.ms`).
    retry_interval: Option<Duration>,
    token: Token,
    conn: Option<IpcConnection>,
    /// The last response id received (0 after register).
    response_id: i32,
    /// NMTokens by `host:port`; the RM sends each node's once.
    pub nm_tokens: HashMap<String, Token>,
    /// What register sent, to register again after a failover or resync.
    registration: Option<RegisterApplicationMasterRequestProto>,
    /// Outstanding asks: the last total per (priority, resource name, capability), less the
    /// containers allocated since. A new RM knows none of them.
    outstanding: Vec<ResourceRequestProto>,
    /// Containers released whose completion the RM has not reported yet.
    pending_release: Vec<ContainerIdProto>,
    /// Nodes the scheduler is asked to avoid, and those not yet sent.
    blacklist: Vec<String>,
    blacklist_unsent: Vec<String>,
    /// Set by a re-registration: the next allocate re-sends everything outstanding.
    resend: bool,
    /// Re-registrations so far (failovers and resyncs).
    pub reregistrations: u32,
}

/// `host:port` of a node.
pub fn node_key(n: &NodeIdProto) -> String {
    format!("{}:{}", n.host.clone().unwrap_or_default(), n.port.unwrap_or(0))
}

fn same_ask(a: &ResourceRequestProto, b: &ResourceRequestProto) -> bool {
    a.priority == b.priority && a.resource_name == b.resource_name && a.capability == b.capability
}

impl AmRmClient {
    /// Connects with the AMRMToken to the first RM scheduler of `addrs` (failover order) that
    /// answers; every call keeps failing over for up to `max_wait`
    /// (`yarn.resourcemanager.connect.max-wait.ms`).
    pub async fn connect(addrs: &[String], token: Token, max_wait: Duration) -> Result<Self> {
        if addrs.is_empty() {
            return Err(YarnError::Config("no ResourceManager scheduler address".into()));
        }
        let mut c = AmRmClient {
            addrs: addrs.to_vec(),
            current: 0,
            max_wait,
            retry_interval: None,
            token,
            conn: None,
            response_id: 0,
            nm_tokens: HashMap::new(),
            registration: None,
            outstanding: Vec::new(),
            pending_release: Vec::new(),
            blacklist: Vec::new(),
            blacklist_unsent: Vec::new(),
            resend: false,
            reregistrations: 0,
        };
        let mut rot = c.rotation();
        c.ensure_connected(&mut rot).await?;
        Ok(c)
    }

    /// Opens a connection if there is none, trying the RMs in `rot`'s order.
    async fn ensure_connected(&mut self, rot: &mut Rotation) -> Result<()> {
        while self.conn.is_none() {
            self.current = rot.current();
            let addr = &self.addrs[self.current];
            match IpcConnection::connect(addr, PROTOCOL, Auth::Token(&self.token)).await {
                Ok(c) => self.conn = Some(c),
                Err(e) if worth_failover(&e) => {
                    log::warn!("connecting to the ResourceManager scheduler at {addr}: {e}");
                    match rot.advance() {
                        Some(wait) => tokio::time::sleep(wait).await,
                        None => return Err(e),
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Caps the wait between rounds of failover attempts at `d`
    /// (`yarn.resourcemanager.connect.retry-interval.ms`).
    pub fn with_retry_interval(mut self, d: Duration) -> Self {
        self.retry_interval = Some(d);
        self
    }

    fn rotation(&self) -> Rotation {
        let r = Rotation::new(self.addrs.len(), self.current, Limit::Until(Instant::now() + self.max_wait));
        match self.retry_interval {
            Some(d) => r.max_backoff(d),
            None => r,
        }
    }

    /// One call on the current RM, failing over to the next on a dropped connection or a
    /// standby RM until `max_wait` has passed.
    async fn call<Req: Message, Resp: Message + Default>(&mut self, method: &str, req: &Req) -> Result<Resp> {
        let mut rot = self.rotation();
        loop {
            self.ensure_connected(&mut rot).await?;
            let conn = self.conn.as_ref().expect("connected");
            match conn.call(method, req).await {
                Err(e) if worth_failover(&e) => {
                    self.conn = None;
                    let from = self.current;
                    let Some(wait) = rot.advance() else { return Err(e) };
                    let to = &self.addrs[rot.current()];
                    match e {
                        // Already names the call and the RM.
                        YarnError::Remote { .. } | YarnError::Fatal { .. } => log::warn!("{e}; failing over to {to}"),
                        _ => log::warn!("{method} on {}: {e}; failing over to {to}", self.addrs[from]),
                    }
                    tokio::time::sleep(wait).await;
                }
                r => return r,
            }
        }
    }

    pub async fn register(
        &mut self,
        host: &str,
        rpc_port: i32,
        tracking_url: &str,
    ) -> Result<RegisterApplicationMasterResponseProto> {
        let req = RegisterApplicationMasterRequestProto {
            host: Some(host.to_string()),
            rpc_port: Some(rpc_port),
            tracking_url: Some(tracking_url.to_string()),
        };
        self.registration = Some(req);
        self.send_register().await
    }

    async fn send_register(&mut self) -> Result<RegisterApplicationMasterResponseProto> {
        let req = self.registration.clone().ok_or_else(|| YarnError::Config("register before allocate".into()))?;
        let r: RegisterApplicationMasterResponseProto = self.call("registerApplicationMaster", &req).await?;
        self.response_id = 0;
        for t in &r.nm_tokens_from_previous_attempts {
            if let (Some(n), Some(tok)) = (&t.node_id, &t.token) {
                self.nm_tokens.insert(node_key(n), tok.clone());
            }
        }
        Ok(r)
    }

    /// Registers again with what `register` sent (after a failover, or when the RM asks for a
    /// resync): the response ids start over, and the next allocate re-sends the outstanding asks
    /// and releases.
    pub async fn reregister(&mut self) -> Result<()> {
        self.send_register().await?;
        self.resend = true;
        self.reregistrations += 1;
        log::warn!(
            "registered again with the ResourceManager at {}; re-sending {} outstanding container(s)",
            self.addrs[self.current],
            self.outstanding.iter().map(|a| a.num_containers.unwrap_or(0).max(0)).sum::<i32>()
        );
        Ok(())
    }

    /// Asks the scheduler not to place containers on `node` (a host name, as YARN's blacklist
    /// takes), from the next heartbeat on.
    pub fn blacklist(&mut self, node: &str) {
        if !self.blacklist.iter().any(|n| n == node) {
            self.blacklist.push(node.to_string());
            self.blacklist_unsent.push(node.to_string());
        }
    }

    /// One heartbeat. `asks` are totals that replace earlier ones (send them only when they
    /// change). Handles the response id, NMTokens, a rolled AMRMToken, failover and re-registration.
    pub async fn allocate(
        &mut self,
        asks: Vec<ResourceRequestProto>,
        release: Vec<ContainerIdProto>,
        progress: f32,
    ) -> Result<AllocateResponseProto> {
        for a in &asks {
            match self.outstanding.iter_mut().find(|o| same_ask(o, a)) {
                Some(o) => *o = a.clone(),
                None => self.outstanding.push(a.clone()),
            }
        }
        self.pending_release.extend(release.iter().cloned());
        let additions = std::mem::take(&mut self.blacklist_unsent);
        let blacklist_request = |additions: Vec<String>| {
            (!additions.is_empty())
                .then_some(ResourceBlacklistRequestProto { blacklist_additions: additions, blacklist_removals: vec![] })
        };
        let mut req = AllocateRequestProto {
            ask: asks,
            release,
            blacklist_request: blacklist_request(additions),
            response_id: None,
            progress: Some(progress),
        };
        for _ in 0..3 {
            if std::mem::take(&mut self.resend) {
                req.ask = self.outstanding.iter().filter(|a| a.num_containers.unwrap_or(0) > 0).cloned().collect();
                req.release = self.pending_release.clone();
                // An RM that lost this attempt's state lost its blacklist too.
                req.blacklist_request = blacklist_request(self.blacklist.clone());
            }
            req.response_id = Some(self.response_id);
            match self.call::<_, AllocateResponseProto>("allocate", &req).await {
                Err(e) if e.remote_class().is_some_and(|c| c.ends_with(NOT_REGISTERED)) => {
                    log::warn!("the ResourceManager does not know this attempt ({e}): registering again");
                    self.reregister().await?;
                }
                Err(e) => return Err(e),
                Ok(r) => {
                    self.absorb(&r);
                    return Ok(r);
                }
            }
        }
        Err(YarnError::Io(format!(
            "allocate on {}: the application master was not registered after 3 attempts",
            self.addrs[self.current]
        )))
    }

    /// Bookkeeping of a heartbeat reply.
    fn absorb(&mut self, r: &AllocateResponseProto) {
        self.response_id = r.response_id.unwrap_or(self.response_id);
        for t in &r.nm_tokens {
            if let (Some(n), Some(tok)) = (&t.node_id, &t.token) {
                self.nm_tokens.insert(node_key(n), tok.clone());
            }
        }
        if let Some(t) = &r.am_rm_token {
            // The RM rolled its master key: later connections must use the new token.
            log::info!("AMRMToken rolled by the ResourceManager");
            self.token = t.clone();
        }
        for c in &r.allocated_containers {
            let at_priority = |a: &&mut ResourceRequestProto| a.priority == c.priority && a.num_containers > Some(0);
            if let Some(a) = self.outstanding.iter_mut().find(at_priority) {
                a.num_containers = a.num_containers.map(|n| n - 1);
            }
        }
        self.pending_release
            .retain(|id| !r.completed_container_statuses.iter().any(|s| s.container_id.as_ref() == Some(id)));
    }

    /// The SASL qop of the connection (what the RM's `hadoop.rpc.protection` led to).
    pub fn qop(&self) -> &'static str {
        self.conn.as_ref().map_or("none", |c| c.qop())
    }

    /// The scheduler address in use.
    pub fn address(&self) -> &str {
        &self.addrs[self.current]
    }

    /// Sends the same request id again (tests: the RM must answer with its cached response).
    pub fn set_response_id(&mut self, id: i32) {
        self.response_id = id;
    }
    pub fn response_id(&self) -> i32 {
        self.response_id
    }

    /// Unregisters with a final status (`APP_SUCCEEDED`, `APP_FAILED`...), repeating the call
    /// until the RM confirms, as it may first answer "not yet". An RM that took over meanwhile
    /// is registered with first.
    pub async fn finish(&mut self, status: i32, diagnostics: &str, tracking_url: &str) -> Result<()> {
        let req = FinishApplicationMasterRequestProto {
            diagnostics: Some(diagnostics.to_string()),
            tracking_url: Some(tracking_url.to_string()),
            final_application_status: Some(status),
        };
        let mut reregistered = 0;
        for _ in 0..600 {
            match self.call::<_, FinishApplicationMasterResponseProto>("finishApplicationMaster", &req).await {
                Ok(r) if r.is_unregistered == Some(true) => return Ok(()),
                Ok(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                Err(e) if reregistered < 3 && e.remote_class().is_some_and(|c| c.ends_with(NOT_REGISTERED)) => {
                    reregistered += 1;
                    self.reregister().await?;
                }
                Err(e) => return Err(e),
            }
        }
        Err(YarnError::Io(format!(
            "{}: the application was not unregistered after 60 s of finish calls",
            self.addrs[self.current]
        )))
    }
}

/// An ask for `n` containers of `memory_mb` / `vcores` anywhere, at `priority`.
pub fn ask_anywhere(priority: i32, memory_mb: i64, vcores: i32, n: i32) -> ResourceRequestProto {
    ResourceRequestProto {
        priority: Some(PriorityProto { priority: Some(priority) }),
        resource_name: Some("*".into()),
        capability: Some(ResourceProto { memory: Some(memory_mb), virtual_cores: Some(vcores) }),
        num_containers: Some(n),
        relax_locality: Some(true),
        node_label_expression: None,
    }
}
