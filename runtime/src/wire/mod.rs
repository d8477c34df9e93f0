//! Wire format: the handshake (`auth`), protected framing (`frame`) and messages (`msg`).

pub mod auth;
pub mod frame;
pub mod msg;

pub use frame::{FrameCodec, WireProtection};
pub use msg::{FetchReq, Msg, RowsKind};
