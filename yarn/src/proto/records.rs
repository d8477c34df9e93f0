//! YARN records and the messages of `ApplicationMasterProtocol` and `ContainerManagementProtocol`
//! (Hadoop 2.7 field numbers, which 3.x kept). Enums are plain `int32` fields with constants.

use super::rpc::TokenProto;

#[derive(Clone, PartialEq, Eq, Hash, prost::Message)]
pub struct ApplicationIdProto {
    #[prost(int32, optional, tag = "1")]
    pub id: Option<i32>,
    #[prost(int64, optional, tag = "2")]
    pub cluster_timestamp: Option<i64>,
}

#[derive(Clone, PartialEq, Eq, Hash, prost::Message)]
pub struct ApplicationAttemptIdProto {
    #[prost(message, optional, tag = "1")]
    pub application_id: Option<ApplicationIdProto>,
    #[prost(int32, optional, tag = "2")]
    pub attempt_id: Option<i32>,
}

#[derive(Clone, PartialEq, Eq, Hash, prost::Message)]
pub struct ContainerIdProto {
    #[prost(message, optional, tag = "1")]
    pub app_id: Option<ApplicationIdProto>,
    #[prost(message, optional, tag = "2")]
    pub app_attempt_id: Option<ApplicationAttemptIdProto>,
    #[prost(int64, optional, tag = "3")]
    pub id: Option<i64>,
}

#[derive(Clone, PartialEq, Eq, Hash, prost::Message)]
pub struct NodeIdProto {
    #[prost(string, optional, tag = "1")]
    pub host: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub port: Option<i32>,
}

/// `memory` is int32 in Hadoop 2.x and int64 in 3.x: the same varint on the wire.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct ResourceProto {
    #[prost(int64, optional, tag = "1")]
    pub memory: Option<i64>,
    #[prost(int32, optional, tag = "2")]
    pub virtual_cores: Option<i32>,
}

#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct PriorityProto {
    #[prost(int32, optional, tag = "1")]
    pub priority: Option<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceRequestProto {
    #[prost(message, optional, tag = "1")]
    pub priority: Option<PriorityProto>,
    /// `*` (any node), a rack or a host.
    #[prost(string, optional, tag = "2")]
    pub resource_name: Option<String>,
    #[prost(message, optional, tag = "3")]
    pub capability: Option<ResourceProto>,
    /// The total outstanding count for this (priority, name, capability); replaces the last ask.
    #[prost(int32, optional, tag = "4")]
    pub num_containers: Option<i32>,
    #[prost(bool, optional, tag = "5")]
    pub relax_locality: Option<bool>,
    #[prost(string, optional, tag = "6")]
    pub node_label_expression: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ContainerProto {
    #[prost(message, optional, tag = "1")]
    pub id: Option<ContainerIdProto>,
    #[prost(message, optional, tag = "2")]
    pub node_id: Option<NodeIdProto>,
    #[prost(string, optional, tag = "3")]
    pub node_http_address: Option<String>,
    #[prost(message, optional, tag = "4")]
    pub resource: Option<ResourceProto>,
    #[prost(message, optional, tag = "5")]
    pub priority: Option<PriorityProto>,
    #[prost(message, optional, tag = "6")]
    pub container_token: Option<TokenProto>,
}

pub const C_NEW: i32 = 1;
pub const C_RUNNING: i32 = 2;
pub const C_COMPLETE: i32 = 3;

#[derive(Clone, PartialEq, prost::Message)]
pub struct ContainerStatusProto {
    #[prost(message, optional, tag = "1")]
    pub container_id: Option<ContainerIdProto>,
    #[prost(int32, optional, tag = "2")]
    pub state: Option<i32>,
    #[prost(string, optional, tag = "3")]
    pub diagnostics: Option<String>,
    #[prost(int32, optional, tag = "4")]
    pub exit_status: Option<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NmTokenProto {
    #[prost(message, optional, tag = "1")]
    pub node_id: Option<NodeIdProto>,
    #[prost(message, optional, tag = "2")]
    pub token: Option<TokenProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RegisterApplicationMasterRequestProto {
    #[prost(string, optional, tag = "1")]
    pub host: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub rpc_port: Option<i32>,
    #[prost(string, optional, tag = "3")]
    pub tracking_url: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RegisterApplicationMasterResponseProto {
    #[prost(message, optional, tag = "1")]
    pub maximum_capability: Option<ResourceProto>,
    #[prost(message, repeated, tag = "4")]
    pub containers_from_previous_attempts: Vec<ContainerProto>,
    #[prost(string, optional, tag = "5")]
    pub queue: Option<String>,
    #[prost(message, repeated, tag = "6")]
    pub nm_tokens_from_previous_attempts: Vec<NmTokenProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AllocateRequestProto {
    #[prost(message, repeated, tag = "1")]
    pub ask: Vec<ResourceRequestProto>,
    #[prost(message, repeated, tag = "2")]
    pub release: Vec<ContainerIdProto>,
    #[prost(message, optional, tag = "3")]
    pub blacklist_request: Option<ResourceBlacklistRequestProto>,
    #[prost(int32, optional, tag = "4")]
    pub response_id: Option<i32>,
    #[prost(float, optional, tag = "5")]
    pub progress: Option<f32>,
}

/// Nodes the application asks the scheduler not to place its containers on (host names).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceBlacklistRequestProto {
    #[prost(string, repeated, tag = "1")]
    pub blacklist_additions: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    pub blacklist_removals: Vec<String>,
}

pub const AM_RESYNC: i32 = 1;
pub const AM_SHUTDOWN: i32 = 2;

#[derive(Clone, PartialEq, prost::Message)]
pub struct AllocateResponseProto {
    #[prost(int32, optional, tag = "1")]
    pub a_m_command: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub response_id: Option<i32>,
    #[prost(message, repeated, tag = "3")]
    pub allocated_containers: Vec<ContainerProto>,
    #[prost(message, repeated, tag = "4")]
    pub completed_container_statuses: Vec<ContainerStatusProto>,
    #[prost(int32, optional, tag = "7")]
    pub num_cluster_nodes: Option<i32>,
    #[prost(message, repeated, tag = "9")]
    pub nm_tokens: Vec<NmTokenProto>,
    #[prost(message, optional, tag = "12")]
    pub am_rm_token: Option<TokenProto>,
}

pub const APP_UNDEFINED: i32 = 0;
pub const APP_SUCCEEDED: i32 = 1;
pub const APP_FAILED: i32 = 2;
pub const APP_KILLED: i32 = 3;

#[derive(Clone, PartialEq, prost::Message)]
pub struct FinishApplicationMasterRequestProto {
    #[prost(string, optional, tag = "1")]
    pub diagnostics: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub tracking_url: Option<String>,
    #[prost(int32, optional, tag = "3")]
    pub final_application_status: Option<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct FinishApplicationMasterResponseProto {
    #[prost(bool, optional, tag = "1")]
    pub is_unregistered: Option<bool>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct UrlProto {
    #[prost(string, optional, tag = "1")]
    pub scheme: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub host: Option<String>,
    #[prost(int32, optional, tag = "3")]
    pub port: Option<i32>,
    #[prost(string, optional, tag = "4")]
    pub file: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub user_info: Option<String>,
}

impl UrlProto {
    /// `scheme://host[:port]/path` as the record (port -1 when absent, as Hadoop's `URL.fromURI`).
    pub fn from_url(url: &str) -> crate::Result<Self> {
        let bad = |why: &str| crate::YarnError::Config(format!("{url:?} is not a URL for a local resource: {why}"));
        let (scheme, rest) = url.split_once("://").ok_or_else(|| bad("no scheme"))?;
        let (auth, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let (host, port) = match auth.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p.parse::<i32>().map_err(|_| bad("bad port"))?),
            None => (auth.to_string(), -1),
        };
        Ok(UrlProto {
            scheme: Some(scheme.into()),
            host: Some(host),
            port: Some(port),
            file: Some(path.to_string()),
            user_info: None,
        })
    }
}

pub const ARCHIVE: i32 = 1;
pub const FILE: i32 = 2;
pub const PUBLIC: i32 = 1;
pub const PRIVATE: i32 = 2;
pub const APPLICATION: i32 = 3;

#[derive(Clone, PartialEq, prost::Message)]
pub struct LocalResourceProto {
    #[prost(message, optional, tag = "1")]
    pub resource: Option<UrlProto>,
    #[prost(int64, optional, tag = "2")]
    pub size: Option<i64>,
    #[prost(int64, optional, tag = "3")]
    pub timestamp: Option<i64>,
    #[prost(int32, optional, tag = "4")]
    pub r#type: Option<i32>,
    #[prost(int32, optional, tag = "5")]
    pub visibility: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub pattern: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StringLocalResourceMapProto {
    #[prost(string, optional, tag = "1")]
    pub key: Option<String>,
    #[prost(message, optional, tag = "2")]
    pub value: Option<LocalResourceProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StringStringMapProto {
    #[prost(string, optional, tag = "1")]
    pub key: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub value: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ContainerLaunchContextProto {
    #[prost(message, repeated, tag = "1")]
    pub local_resources: Vec<StringLocalResourceMapProto>,
    /// An `HDTS` credentials blob.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub tokens: Option<Vec<u8>>,
    #[prost(message, repeated, tag = "4")]
    pub environment: Vec<StringStringMapProto>,
    /// Joined with spaces by the NodeManager.
    #[prost(string, repeated, tag = "5")]
    pub command: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StartContainerRequestProto {
    #[prost(message, optional, tag = "1")]
    pub container_launch_context: Option<ContainerLaunchContextProto>,
    #[prost(message, optional, tag = "2")]
    pub container_token: Option<TokenProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StartContainersRequestProto {
    #[prost(message, repeated, tag = "1")]
    pub start_container_request: Vec<StartContainerRequestProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SerializedExceptionProto {
    #[prost(string, optional, tag = "1")]
    pub message: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub trace: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub class_name: Option<String>,
    #[prost(message, optional, boxed, tag = "4")]
    pub cause: Option<Box<SerializedExceptionProto>>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ContainerExceptionMapProto {
    #[prost(message, optional, tag = "1")]
    pub container_id: Option<ContainerIdProto>,
    #[prost(message, optional, tag = "2")]
    pub exception: Option<SerializedExceptionProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StartContainersResponseProto {
    #[prost(message, repeated, tag = "2")]
    pub succeeded_requests: Vec<ContainerIdProto>,
    #[prost(message, repeated, tag = "3")]
    pub failed_requests: Vec<ContainerExceptionMapProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StopContainersRequestProto {
    #[prost(message, repeated, tag = "1")]
    pub container_id: Vec<ContainerIdProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StopContainersResponseProto {
    #[prost(message, repeated, tag = "1")]
    pub succeeded_requests: Vec<ContainerIdProto>,
    #[prost(message, repeated, tag = "2")]
    pub failed_requests: Vec<ContainerExceptionMapProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetContainerStatusesRequestProto {
    #[prost(message, repeated, tag = "1")]
    pub container_id: Vec<ContainerIdProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetContainerStatusesResponseProto {
    #[prost(message, repeated, tag = "1")]
    pub status: Vec<ContainerStatusProto>,
    #[prost(message, repeated, tag = "2")]
    pub failed_requests: Vec<ContainerExceptionMapProto>,
}

impl ContainerIdProto {
    /// `container_[e<epoch>_]<clusterTs>_<appId>_<attempt>_<id>`, as Hadoop prints it: the epoch
    /// lives in the bits above 40 of `id`.
    pub fn to_hadoop_string(&self) -> String {
        // Hadoop 2.x fills only the attempt's application id; older records had `app_id`.
        let app = self
            .app_id
            .clone()
            .or_else(|| self.app_attempt_id.as_ref().and_then(|a| a.application_id.clone()))
            .unwrap_or_default();
        let attempt = self.app_attempt_id.as_ref().and_then(|a| a.attempt_id).unwrap_or(0);
        let raw = self.id.unwrap_or(0);
        let (epoch, id) = (raw >> 40, raw & ((1 << 40) - 1));
        let e = if epoch > 0 { format!("e{epoch:02}_") } else { String::new() };
        format!("container_{e}{}_{:04}_{attempt:02}_{id:06}", app.cluster_timestamp.unwrap_or(0), app.id.unwrap_or(0))
    }

    /// The application id of a container id string ([`ps_hadoop::container::application_of`]).
    pub fn application_of(container_id: &str) -> Option<String> {
        ps_hadoop::container::application_of(container_id)
    }

    /// The application attempt of a container id string ([`ps_hadoop::container::attempt_of`]).
    pub fn attempt_of(container_id: &str) -> Option<u32> {
        ps_hadoop::container::attempt_of(container_id)
    }
}
