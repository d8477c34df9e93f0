//! The messages of `ApplicationClientProtocol` (how the `yarn` CLI and Spark submit, follow and
//! kill applications), with the field numbers of Hadoop's `yarn_protos.proto` /
//! `yarn_service_protos.proto` (2.7, kept by 3.x). Only the fields this project sets or reads.

use super::records::{
    ApplicationAttemptIdProto, ApplicationIdProto, ContainerLaunchContextProto, PriorityProto, ResourceProto,
};

/// `YarnApplicationStateProto`.
pub const APP_STATES: [(i32, &str); 8] = [
    (1, "NEW"),
    (2, "NEW_SAVING"),
    (3, "SUBMITTED"),
    (4, "ACCEPTED"),
    (5, "RUNNING"),
    (6, "FINISHED"),
    (7, "FAILED"),
    (8, "KILLED"),
];

/// `FinalApplicationStatusProto` (`APP_` prefix dropped, as the REST API and the CLI print it).
pub const FINAL_STATUSES: [(i32, &str); 4] = [(0, "UNDEFINED"), (1, "SUCCEEDED"), (2, "FAILED"), (3, "KILLED")];

/// The name of an enum value, or `UNKNOWN(n)` for one a newer Hadoop added.
pub fn enum_name(table: &[(i32, &str)], v: i32) -> String {
    table.iter().find(|(n, _)| *n == v).map(|(_, s)| s.to_string()).unwrap_or_else(|| format!("UNKNOWN({v})"))
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetNewApplicationRequestProto {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetNewApplicationResponseProto {
    #[prost(message, optional, tag = "1")]
    pub application_id: Option<ApplicationIdProto>,
    #[prost(message, optional, tag = "2")]
    pub maximum_capability: Option<ResourceProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ApplicationSubmissionContextProto {
    #[prost(message, optional, tag = "1")]
    pub application_id: Option<ApplicationIdProto>,
    #[prost(string, optional, tag = "2")]
    pub application_name: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub queue: Option<String>,
    #[prost(message, optional, tag = "4")]
    pub priority: Option<PriorityProto>,
    #[prost(message, optional, tag = "5")]
    pub am_container_spec: Option<ContainerLaunchContextProto>,
    #[prost(bool, optional, tag = "6")]
    pub cancel_tokens_when_complete: Option<bool>,
    #[prost(int32, optional, tag = "8")]
    pub max_app_attempts: Option<i32>,
    #[prost(message, optional, tag = "9")]
    pub resource: Option<ResourceProto>,
    #[prost(string, optional, tag = "10")]
    pub application_type: Option<String>,
    #[prost(string, repeated, tag = "12")]
    pub application_tags: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SubmitApplicationRequestProto {
    #[prost(message, optional, tag = "1")]
    pub application_submission_context: Option<ApplicationSubmissionContextProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SubmitApplicationResponseProto {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetApplicationReportRequestProto {
    #[prost(message, optional, tag = "1")]
    pub application_id: Option<ApplicationIdProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetApplicationReportResponseProto {
    #[prost(message, optional, tag = "1")]
    pub application_report: Option<ApplicationReportProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ApplicationReportProto {
    #[prost(message, optional, tag = "1")]
    pub application_id: Option<ApplicationIdProto>,
    #[prost(string, optional, tag = "2")]
    pub user: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub queue: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub host: Option<String>,
    #[prost(int32, optional, tag = "8")]
    pub yarn_application_state: Option<i32>,
    #[prost(string, optional, tag = "9")]
    pub tracking_url: Option<String>,
    #[prost(string, optional, tag = "10")]
    pub diagnostics: Option<String>,
    #[prost(int64, optional, tag = "11")]
    pub start_time: Option<i64>,
    #[prost(int64, optional, tag = "12")]
    pub finish_time: Option<i64>,
    #[prost(int32, optional, tag = "13")]
    pub final_application_status: Option<i32>,
    #[prost(message, optional, tag = "16")]
    pub current_application_attempt_id: Option<ApplicationAttemptIdProto>,
    /// 0..1 (the REST API reports 0..100).
    #[prost(float, optional, tag = "17")]
    pub progress: Option<f32>,
    #[prost(string, optional, tag = "18")]
    pub application_type: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct KillApplicationRequestProto {
    #[prost(message, optional, tag = "1")]
    pub application_id: Option<ApplicationIdProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct KillApplicationResponseProto {
    #[prost(bool, optional, tag = "1")]
    pub is_kill_completed: Option<bool>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetApplicationsRequestProto {
    #[prost(string, repeated, tag = "1")]
    pub application_types: Vec<String>,
    #[prost(int32, repeated, packed = "false", tag = "2")]
    pub application_states: Vec<i32>,
    #[prost(string, repeated, tag = "3")]
    pub users: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetApplicationsResponseProto {
    #[prost(message, repeated, tag = "1")]
    pub applications: Vec<ApplicationReportProto>,
}

/// `getClusterNodes`: empty `node_states` asks for nodes in every state.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetClusterNodesRequestProto {
    #[prost(int32, repeated, packed = "false", tag = "1")]
    pub node_states: Vec<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetClusterNodesResponseProto {
    #[prost(message, repeated, tag = "1")]
    pub node_reports: Vec<NodeReportProto>,
}

/// `NodeReportProto`: only the node and its rack.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeReportProto {
    #[prost(message, optional, tag = "1")]
    pub node_id: Option<super::records::NodeIdProto>,
    #[prost(string, optional, tag = "3")]
    pub rack_name: Option<String>,
}
