//! The Hadoop IPC client: a 7-byte preamble (`hrpc`, version 9, service class 0, auth protocol),
//! then frames of a 4-byte big-endian length followed by varint-delimited protobufs. Calls carry
//! increasing call ids and replies may come back in any order; SASL uses call id -33 and the
//! connection context -3. An ERROR reply fails one call; a FATAL one closes the connection.

mod conn;

pub use conn::{Auth, IpcConnection};

use crate::error::{Result, YarnError};
use crate::proto::{RpcRequestHeaderProto, RpcResponseHeaderProto};
use bytes::{Bytes, BytesMut};
use prost::Message;

pub const RPC_VERSION: u8 = 9;
pub const AUTH_NONE: u8 = 0;
pub const AUTH_SASL: u8 = 0xDF;
pub const CALL_SASL: i32 = -33;
pub const CALL_CONTEXT: i32 = -3;
/// `RPC_PROTOCOL_BUFFER`.
pub const RPC_KIND_PB: i32 = 2;
/// Largest frame accepted from a server.
pub const MAX_FRAME: usize = 128 << 20;

/// The connection preamble.
pub fn preamble(sasl: bool) -> [u8; 7] {
    [b'h', b'r', b'p', b'c', RPC_VERSION, 0, if sasl { AUTH_SASL } else { AUTH_NONE }]
}

/// A request header for `call_id` (`client_id` empty and retry -1 for SASL and the context).
pub fn request_header(call_id: i32, client_id: &[u8]) -> RpcRequestHeaderProto {
    let special = call_id < 0;
    RpcRequestHeaderProto {
        rpc_kind: Some(RPC_KIND_PB),
        rpc_op: Some(0),
        call_id,
        client_id: if special { Vec::new() } else { client_id.to_vec() },
        retry_count: Some(if special { -1 } else { 0 }),
    }
}

/// The payload of one frame: each message varint-length-delimited, in order.
pub fn packet(parts: &[&dyn DynMessage]) -> Bytes {
    let mut b = BytesMut::new();
    for p in parts {
        p.encode_delimited(&mut b);
    }
    b.freeze()
}

/// Object-safe view of a prost message (so headers and bodies can be listed together).
pub trait DynMessage {
    fn encode_delimited(&self, out: &mut BytesMut);
}

impl<M: Message> DynMessage for M {
    fn encode_delimited(&self, out: &mut BytesMut) {
        self.encode_length_delimited(out).expect("BytesMut grows");
    }
}

/// Splits a response frame into its header and the rest (the delimited body, if any).
pub fn split_response(frame: &[u8]) -> Result<(RpcResponseHeaderProto, &[u8])> {
    let mut s = frame;
    let h = RpcResponseHeaderProto::decode_length_delimited(&mut s)
        .map_err(|e| YarnError::Codec(format!("RPC response header: {e}")))?;
    Ok((h, s))
}

/// Decodes the delimited body of a response.
pub fn decode_body<M: Message + Default>(mut body: &[u8], what: &str) -> Result<M> {
    M::decode_length_delimited(&mut body).map_err(|e| YarnError::Codec(format!("{what} response: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{RequestHeaderProto, STATUS_SUCCESS};

    #[test]
    fn preamble_and_frame_layout() {
        assert_eq!(&preamble(true), b"hrpc\x09\x00\xdf");
        assert_eq!(&preamble(false), b"hrpc\x09\x00\x00");
        // A SASL header: kind 2, op 0, call id -33 (zig-zag 65), empty client id, retry -1 (zig-zag 1).
        let h = request_header(CALL_SASL, &[1; 16]);
        let p = packet(&[&h]);
        assert_eq!(&p[..], &[10, 0x08, 0x02, 0x10, 0x00, 0x18, 65, 0x22, 0x00, 0x28, 0x01]);
        // A call: header + request header + (empty) body, each delimited.
        let rh = RequestHeaderProto {
            method_name: "allocate".into(),
            declaring_class_protocol_name: "p".into(),
            client_protocol_version: 1,
        };
        let call = packet(&[&request_header(5, &[7; 16]), &rh, &crate::proto::AllocateRequestProto::default()]);
        let mut s: &[u8] = &call;
        let h2 = RpcRequestHeaderProto::decode_length_delimited(&mut s).unwrap();
        assert_eq!((h2.call_id, h2.client_id.len(), h2.retry_count), (5, 16, Some(0)));
        assert_eq!(RequestHeaderProto::decode_length_delimited(&mut s).unwrap(), rh);
        assert_eq!(s, &[0]);
    }

    #[test]
    fn negative_call_ids_come_back_as_u32() {
        let h = RpcResponseHeaderProto { call_id: (-33i32) as u32, status: STATUS_SUCCESS, ..Default::default() };
        let f = packet(&[&h]);
        let (h2, rest) = split_response(&f).unwrap();
        assert_eq!(h2.call_id as i32, -33);
        assert!(rest.is_empty());
        assert!(split_response(&[0x05, 0x08]).is_err());
    }
}
