//! State touched: the one definition of which parts of the audited environment a call read or
//! wrote, as the idempotency history keys them
//! ([design: state touched](../../../docs/design.md#state-touched)).
//!
//! A repeat of an identical call is judged only when nothing else wrote, in between, the state
//! it touches ([`History`](crate::History)); whatever writes state (another call, or a write
//! that the evidence sources could not give to one call: ambiguous, unattributed or foreign,
//! [`Judge::written_elsewhere`](crate::Judge::written_elsewhere)) names it with a [`StateKey`].
//!
//! ```
//! use hintaudit_core::*;
//! use hintaudit_core::files::{ChangeKind, FileChange};
//! let mut effect = Effect::default();
//! effect.files.push(FileChange { path: "memory.jsonl".into(), kind: ChangeKind::Overwritten });
//! let state = state_touched(&effect, &Policy::default());
//! assert_eq!(state.written, [StateKey::file("memory.jsonl")]);
//! assert_eq!(state.touched, state.written);
//! ```

use std::borrow::Cow;
use std::fmt;

use crate::files::{ChangeKind, FileChange};
use crate::policy::normalized_table;

/// One piece of state a call can read or write: the unit a repeat is disturbed by.
///
/// A kind of state to come (a row by its key, a git ref, an HTTP API's resource) is a new
/// variant: every place that must handle it stops compiling until it does.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum StateKey<'a> {
    /// A database table, normalized as the policy names it ([`normalize_table`](crate::normalize_table)).
    Table(Cow<'a, str>),
    /// A path of a watched tree, as file findings show it (relative to its root, prefixed
    /// with the root's label when several are watched).
    File(Cow<'a, str>),
}

impl<'a> StateKey<'a> {
    /// A table's key.
    pub fn table(name: impl Into<Cow<'a, str>>) -> Self {
        StateKey::Table(name.into())
    }

    /// A watched path's key.
    pub fn file(path: impl Into<Cow<'a, str>>) -> Self {
        StateKey::File(path.into())
    }

    /// The same key with a table's name normalized as the policy names tables
    /// ([`normalize_table`](crate::normalize_table)): `public."Orders"` is `orders`.
    pub fn normalized(&self) -> StateKey<'_> {
        match self {
            StateKey::Table(t) => StateKey::Table(normalized_table(t)),
            StateKey::File(p) => StateKey::File(Cow::Borrowed(p)),
        }
    }

    /// The same key, owning its name.
    pub fn into_owned(self) -> StateKey<'static> {
        match self {
            StateKey::Table(t) => StateKey::Table(Cow::Owned(t.into_owned())),
            StateKey::File(p) => StateKey::File(Cow::Owned(p.into_owned())),
        }
    }

    /// The key as a fleet's shared history names it: a table by its name (as it always
    /// was), a path as `file:` and the path.
    pub fn shared_name(&self) -> Cow<'_, str> {
        match self {
            StateKey::Table(t) => Cow::Borrowed(t),
            StateKey::File(p) => Cow::Owned(format!("file:{p}")),
        }
    }

    /// The keys a file change writes: its path, and for a rename the new path too.
    pub fn of_file_change(change: &'a FileChange) -> impl Iterator<Item = StateKey<'a>> {
        let to = match &change.kind {
            ChangeKind::RenamedTo(to) => Some(StateKey::file(to.as_str())),
            _ => None,
        };
        std::iter::once(StateKey::file(change.path.as_str())).chain(to)
    }
}

impl fmt::Display for StateKey<'_> {
    /// `table NAME` or `file PATH`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateKey::Table(t) => write!(f, "table {t}"),
            StateKey::File(p) => write!(f, "file {p}"),
        }
    }
}
