//! The AM side of `ApplicationMasterProtocol`: register, the allocate heartbeat with strict
//! `response_id` echo and asks as totals, NMTokens cached per node, AMRMToken roll, and finish
//! until the RM says the application is unregistered.

use crate::credentials::Token;
use crate::error::{Result, YarnError};
use crate::ipc::{Auth, IpcConnection};
use crate::proto::*;
use std::collections::HashMap;
use std::time::Duration;

pub const PROTOCOL: &str = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB";

pub struct AmRmClient {
    addr: String,
    token: Token,
    conn: IpcConnection,
    /// The last response id received (0 after register).
    response_id: i32,
    /// NMTokens by `host:port`; the RM sends each node's once.
    pub nm_tokens: HashMap<String, Token>,
}

/// `host:port` of a node.
pub fn node_key(n: &NodeIdProto) -> String {
    format!("{}:{}", n.host.clone().unwrap_or_default(), n.port.unwrap_or(0))
}

impl AmRmClient {
    /// Connects to the RM scheduler at `addr` with the AMRMToken.
    pub async fn connect(addr: &str, token: Token) -> Result<Self> {
        let conn = IpcConnection::connect(addr, PROTOCOL, Auth::Token(&token)).await?;
        Ok(AmRmClient { addr: addr.to_string(), token, conn, response_id: 0, nm_tokens: HashMap::new() })
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
        let r: RegisterApplicationMasterResponseProto = self.conn.call("registerApplicationMaster", &req).await?;
        self.response_id = 0;
        for t in &r.nm_tokens_from_previous_attempts {
            if let (Some(n), Some(tok)) = (&t.node_id, &t.token) {
                self.nm_tokens.insert(node_key(n), tok.clone());
            }
        }
        Ok(r)
    }

    /// One heartbeat. `asks` are totals that replace earlier ones (send them only when they
    /// change). Handles the response id, NMTokens and a rolled AMRMToken.
    pub async fn allocate(
        &mut self,
        asks: Vec<ResourceRequestProto>,
        release: Vec<ContainerIdProto>,
        progress: f32,
    ) -> Result<AllocateResponseProto> {
        let req =
            AllocateRequestProto { ask: asks, release, response_id: Some(self.response_id), progress: Some(progress) };
        let r: AllocateResponseProto = self.conn.call("allocate", &req).await?;
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
        Ok(r)
    }

    /// The SASL qop of the connection (what the RM's `hadoop.rpc.protection` led to).
    pub fn qop(&self) -> &'static str {
        self.conn.qop()
    }

    /// Sends the same request id again (tests: the RM must answer with its cached response).
    pub fn set_response_id(&mut self, id: i32) {
        self.response_id = id;
    }
    pub fn response_id(&self) -> i32 {
        self.response_id
    }

    /// Reconnects with the current token (after the RM restarted or the connection dropped).
    pub async fn reconnect(&mut self) -> Result<()> {
        self.conn = IpcConnection::connect(&self.addr, PROTOCOL, Auth::Token(&self.token)).await?;
        Ok(())
    }

    /// Unregisters with a final status (`APP_SUCCEEDED`, `APP_FAILED`...), repeating the call
    /// until the RM confirms, as it may first answer "not yet".
    pub async fn finish(&mut self, status: i32, diagnostics: &str, tracking_url: &str) -> Result<()> {
        let req = FinishApplicationMasterRequestProto {
            diagnostics: Some(diagnostics.to_string()),
            tracking_url: Some(tracking_url.to_string()),
            final_application_status: Some(status),
        };
        for _ in 0..600 {
            let r: FinishApplicationMasterResponseProto = self.conn.call("finishApplicationMaster", &req).await?;
            if r.is_unregistered == Some(true) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(YarnError::Io(format!("{}: the application was not unregistered after 60 s of finish calls", self.addr)))
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
