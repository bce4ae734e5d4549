#![doc = include_str!("../README.md")]
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod changes;
mod decoder;
mod diff;
mod error;
#[cfg(feature = "follow")]
mod follow;
mod page;
mod record;
mod replay;
mod rows;
mod schema;
mod sql;
mod tree;
mod varint;
mod view;
mod wal;

pub use changes::{Changes, Column, Row, TableChanges, Update};
pub use decoder::Decoder;
pub use error::DecodeError;
#[cfg(feature = "follow")]
pub use follow::{
    CHECKPOINT_FRAMES, Event, FollowError, Follower, Gap, GapReason, LogPosition, Stats,
};
pub use replay::{ReplayError, replay};
pub use view::PageSource;
pub use wal::{
    Chain, CommitFrames, FRAME_HEADER_SIZE, Frame, Position, WAL_HEADER_SIZE, WalError, WalHeader,
    commits, reseal,
};
