//! Hadoop IPC headers, SASL, connection context and token messages.

/// `hadoop.common.RpcRequestHeaderProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RpcRequestHeaderProto {
    /// RPC_PROTOCOL_BUFFER = 2.
    #[prost(int32, optional, tag = "1")]
    pub rpc_kind: Option<i32>,
    /// RPC_FINAL_PACKET = 0.
    #[prost(int32, optional, tag = "2")]
    pub rpc_op: Option<i32>,
    #[prost(sint32, required, tag = "3")]
    pub call_id: i32,
    #[prost(bytes = "vec", required, tag = "4")]
    pub client_id: Vec<u8>,
    #[prost(sint32, optional, tag = "5")]
    pub retry_count: Option<i32>,
}

/// Status of a response (`RpcResponseHeaderProto.RpcStatusProto`).
pub const STATUS_SUCCESS: i32 = 0;
pub const STATUS_ERROR: i32 = 1;
pub const STATUS_FATAL: i32 = 2;

/// `hadoop.common.RpcResponseHeaderProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RpcResponseHeaderProto {
    /// Negative call ids come back as their u32 bit pattern.
    #[prost(uint32, required, tag = "1")]
    pub call_id: u32,
    #[prost(int32, required, tag = "2")]
    pub status: i32,
    #[prost(uint32, optional, tag = "3")]
    pub server_ipc_version_num: Option<u32>,
    #[prost(string, optional, tag = "4")]
    pub exception_class_name: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub error_msg: Option<String>,
    #[prost(int32, optional, tag = "6")]
    pub error_detail: Option<i32>,
    #[prost(bytes = "vec", optional, tag = "7")]
    pub client_id: Option<Vec<u8>>,
    #[prost(sint32, optional, tag = "8")]
    pub retry_count: Option<i32>,
}

/// SASL states (`RpcSaslProto.SaslState`).
pub const SASL_SUCCESS: i32 = 0;
pub const SASL_NEGOTIATE: i32 = 1;
pub const SASL_INITIATE: i32 = 2;
pub const SASL_CHALLENGE: i32 = 3;
pub const SASL_RESPONSE: i32 = 4;
pub const SASL_WRAP: i32 = 5;

/// `hadoop.common.RpcSaslProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RpcSaslProto {
    #[prost(uint32, optional, tag = "1")]
    pub version: Option<u32>,
    #[prost(int32, required, tag = "2")]
    pub state: i32,
    #[prost(bytes = "vec", optional, tag = "3")]
    pub token: Option<Vec<u8>>,
    #[prost(message, repeated, tag = "4")]
    pub auths: Vec<SaslAuth>,
}

/// `RpcSaslProto.SaslAuth`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SaslAuth {
    #[prost(string, required, tag = "1")]
    pub method: String,
    #[prost(string, required, tag = "2")]
    pub mechanism: String,
    #[prost(string, optional, tag = "3")]
    pub protocol: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub server_id: Option<String>,
    #[prost(bytes = "vec", optional, tag = "5")]
    pub challenge: Option<Vec<u8>>,
}

/// `hadoop.common.UserInformationProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct UserInformationProto {
    #[prost(string, optional, tag = "1")]
    pub effective_user: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub real_user: Option<String>,
}

/// `hadoop.common.IpcConnectionContextProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct IpcConnectionContextProto {
    #[prost(message, optional, tag = "2")]
    pub user_info: Option<UserInformationProto>,
    #[prost(string, optional, tag = "3")]
    pub protocol: Option<String>,
}

/// `hadoop.common.RequestHeaderProto` (ProtobufRpcEngine).
#[derive(Clone, PartialEq, prost::Message)]
pub struct RequestHeaderProto {
    #[prost(string, required, tag = "1")]
    pub method_name: String,
    #[prost(string, required, tag = "2")]
    pub declaring_class_protocol_name: String,
    #[prost(uint64, required, tag = "3")]
    pub client_protocol_version: u64,
}

pub use ps_hadoop::tokens::{CredentialsKvProto, CredentialsProto, TokenProto};
