//! What a fleet's shared history is told of a call and answers.
//!
//! Replicas behind a load balancer each see a part of a client's calls: a repeat of an
//! identical call may land on another replica than the first. A shared history (in
//! hintaudit-rmcp, a Redis or Valkey server) keeps, per (tool, arguments key), the end of the
//! last identical call anywhere in the fleet, and per table the last write, so any replica can
//! tell a clean repeat. This module holds the plain data the judge and the store exchange; the
//! store does the I/O, off the call's path (design.md, "The fleet's history").

use std::sync::Arc;
use std::time::Duration;

use crate::finding::Confidence;
use crate::hints::DeclaredHints;

use super::{ArgsKey, Repeat};

/// The most bytes of [`SharedCall::summary`]: the store keeps it per entry, so it is bounded.
pub const MAX_SUMMARY_BYTES: usize = 120;

/// What a replica tells the shared history when a call that may repeat ends: a call that
/// wrote state (a table, a watched path), or of a tool declared idempotent (and not read-only). Arguments only as
/// their keyed hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedCall {
    /// The tool name.
    pub tool: Arc<str>,
    /// The arguments' keyed hash (equal on every replica: [`super::ArgsHasher::from_secret`]).
    pub key: ArgsKey,
    /// State the call read or wrote, as the store names it
    /// ([`StateKey::shared_name`](crate::StateKey::shared_name): a table by its normalized
    /// name, a watched path as `file:PATH`).
    pub touched: Vec<String>,
    /// State the call wrote, named the same way.
    pub written: Vec<String>,
    /// What the call changed that a repeat would make again, as the finding's evidence reads
    /// (`insert appointments (1 row)`), at most [`MAX_SUMMARY_BYTES`]; empty when nothing.
    pub summary: String,
}

/// What the shared history answers: what it knew of the previous identical call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedAnswer {
    /// First, clean or disturbed, over the whole fleet.
    pub repeat: Repeat,
    /// The previous identical call, when there was one.
    pub previous: Option<Previous>,
}

/// The previous identical call, as the shared history kept it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Previous {
    /// The replica that served it (`HINTAUDIT_REPLICA`, else the host name).
    pub replica: String,
    /// How long before this call's end it ended, by the store's clock.
    pub age: Duration,
    /// Its [`SharedCall::summary`].
    pub summary: String,
}

/// A call whose repeat the judge settles once the shared history answers: made by
/// [`Judge::judge_shared`](crate::Judge::judge_shared), settled by
/// [`Judge::settle`](crate::Judge::settle), with the answer or, when the store failed, with
/// the in-process history's reading ([`PendingRepeat::local`]).
#[derive(Debug, Clone)]
pub struct PendingRepeat {
    pub(crate) call: SharedCall,
    pub(crate) hints: DeclaredHints,
    pub(crate) local: Repeat,
    /// The evidence of what the call changed that a repeat makes again, when anything.
    pub(crate) net_change: Option<(String, Confidence)>,
}

impl PendingRepeat {
    /// What to tell the shared history.
    pub fn shared_call(&self) -> &SharedCall {
        &self.call
    }

    /// The repeat as this process's own history saw it: the judgement when the store fails.
    pub fn local(&self) -> Repeat {
        self.local
    }
}

/// `text` cut to at most `max` bytes on a character boundary, with `…` when cut.
pub(crate) fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_are_bounded_on_a_character_boundary() {
        assert_eq!(bounded("short", 120), "short");
        let long = "é".repeat(100);
        let cut = bounded(&long, MAX_SUMMARY_BYTES);
        assert!(cut.len() <= MAX_SUMMARY_BYTES, "{}", cut.len());
        assert!(cut.ends_with('…'));
    }
}
