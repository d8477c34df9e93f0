//! Entry points for the fuzz targets (`fuzz/`): the decoders of bytes a YARN or HDFS server (or
//! whoever answers in its place) sends us, and of the credentials file. Each must return for any
//! input without panicking. Not part of the API.

use crate::credentials::Credentials;
use crate::ipc::{decode_body, split_response};
use crate::proto::*;
use crate::sasl::{parse_challenge, DigestMd5};

/// A server's SASL DIGEST-MD5 challenge; then the same bytes as a wrapped message of the
/// security layer the challenge negotiated (integrity or privacy), which must be refused or
/// unwrapped, never panic.
pub fn sasl_challenge(data: &[u8]) {
    let s = String::from_utf8_lossy(data);
    let _ = parse_challenge(&s);
    if let Ok(d) = DigestMd5::for_token(b"id", b"pw", &s, "/default", "fuzz") {
        let _ = (d.response_string(), d.rspauth());
        if let Some(mut layer) = d.layer() {
            let _ = layer.recv.unwrap(data);
        }
    }
    for qop in [crate::sasl_layer::Qop::AuthInt, crate::sasl_layer::Qop::AuthConf] {
        if let Some(mut layer) = crate::sasl_layer::SecurityLayer::new(qop, &[7; 16], 65536) {
            let _ = layer.recv.unwrap(data);
        }
    }
}

/// A container credentials file (`HDTS`, both formats); what parses must write back and re-read
/// to the same value.
pub fn credentials(data: &[u8]) {
    if let Ok(c) = Credentials::parse(data) {
        let again = Credentials::parse(&c.to_bytes()).expect("written credentials parse");
        assert_eq!(again, c, "credentials changed through a write/read round trip");
    }
}

/// A Hadoop IPC response frame, decoded as each call we make expects it.
pub fn ipc_response(data: &[u8]) {
    let Ok((h, body)) = split_response(data) else { return };
    let _ = h.call_id;
    let _ = decode_body::<RpcSaslProto>(body, "SASL");
    let _ = decode_body::<RegisterApplicationMasterResponseProto>(body, "register");
    if let Ok(r) = decode_body::<AllocateResponseProto>(body, "allocate") {
        for c in r.allocated_containers {
            let _ = c.id.map(|i| i.to_hadoop_string());
        }
        for s in r.completed_container_statuses {
            let _ = s.container_id.map(|i| i.to_hadoop_string());
        }
    }
    let _ = decode_body::<FinishApplicationMasterResponseProto>(body, "finish");
    let _ = decode_body::<StartContainersResponseProto>(body, "start");
    let _ = decode_body::<StopContainersResponseProto>(body, "stop");
    let _ = decode_body::<GetContainerStatusesResponseProto>(body, "statuses");
    let _ = ContainerIdProto::application_of(&String::from_utf8_lossy(data));
}
