//! Wire format: framing, messages and the authenticated handshake.

pub mod auth;
pub mod msg;

pub use msg::{FetchReq, Msg, RowsKind, CLOCK_FINISHED};

use tokio_util::codec::LengthDelimitedCodec;

/// The frame codec used on every connection: 4-byte big-endian length, then the message.
pub fn codec(max_frame_bytes: usize) -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder().max_frame_length(max_frame_bytes).new_codec()
}
