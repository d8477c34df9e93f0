//! Protobuf messages, hand-written with Hadoop's field numbers (see the issue notes and Hadoop's
//! `RpcHeader.proto`, `IpcConnectionContext.proto`, `ProtobufRpcEngine.proto`, `Security.proto`,
//! `yarn_protos.proto`, `yarn_service_protos.proto`). Only the fields this project uses or must
//! tolerate are declared; unknown fields are skipped by prost when decoding.

pub mod client;
pub mod records;
pub mod rpc;

pub use client::*;
pub use records::*;
pub use rpc::*;
