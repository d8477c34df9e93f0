//! The records of a credentials file, hand-written as prost messages with the field numbers of
//! Hadoop's `Security.proto` (no generated or copied `.proto` files).

/// `hadoop.common.TokenProto`.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct TokenProto {
    #[prost(bytes = "vec", required, tag = "1")]
    pub identifier: Vec<u8>,
    #[prost(bytes = "vec", required, tag = "2")]
    pub password: Vec<u8>,
    #[prost(string, required, tag = "3")]
    pub kind: String,
    #[prost(string, required, tag = "4")]
    pub service: String,
}

/// `hadoop.common.CredentialsKVProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CredentialsKvProto {
    #[prost(string, required, tag = "1")]
    pub alias: String,
    #[prost(message, optional, tag = "2")]
    pub token: Option<TokenProto>,
    #[prost(bytes = "vec", optional, tag = "3")]
    pub secret: Option<Vec<u8>>,
}

/// `hadoop.common.CredentialsProto` (the body of an `HDTS` version 1 file).
#[derive(Clone, PartialEq, prost::Message)]
pub struct CredentialsProto {
    #[prost(message, repeated, tag = "1")]
    pub tokens: Vec<CredentialsKvProto>,
    #[prost(message, repeated, tag = "2")]
    pub secrets: Vec<CredentialsKvProto>,
}
