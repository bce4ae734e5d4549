//! Enforce mode: what hintaudit refuses for one call, and the record of a refusal
//! ([design: enforce mode](../../../docs/design.md#2-rules)).
//!
//! The rmcp layer decides, per call, from the tool's mode ([`crate::Mode`], per server or per
//! tool in `hintaudit.toml`) and its declared hints, and puts the decision into the call's
//! [`crate::CallScope`] ([`crate::CallScope::enforcement`]). The audited pool and the HTTP
//! instrumentation read it there, refuse, and record each refusal ([`Refusal`]) into the
//! call's effects; the judge turns refusals into `enforced` findings.
//!
//! ```
//! use hintaudit_core::{DeclaredHints, Enforcement, Hint, Mode};
//! let hints = DeclaredHints::new(Some(true), None, None, Some(false));
//! let e = Enforcement::for_hints(Mode::Enforce, hints);
//! assert!(e.read_only && e.closed_world && !e.non_destructive);
//! assert_eq!(Enforcement::for_hints(Mode::Observe, hints), Enforcement::NONE);
//! assert_eq!(
//!     Enforcement::message(Hint::ReadOnly, "the database refused the write"),
//!     "hintaudit enforce mode: the tool declares readOnlyHint: true; the database refused the write",
//! );
//! ```

use crate::config::Mode;
use crate::hints::{DeclaredHints, Hint};

/// What enforce mode refuses for one call: each field is one declared hint made a guarantee.
/// All false in observe mode ([`Enforcement::NONE`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Enforcement {
    /// `readOnlyHint: true`: the database refuses writes (SQLite `PRAGMA query_only`,
    /// PostgreSQL and MySQL read-only transactions) on every connection the call touches.
    pub read_only: bool,
    /// `destructiveHint: false` (and readOnlyHint not true): statements classified as
    /// `DELETE`, `UPDATE`, an overwriting upsert, `TRUNCATE` or `DROP` are refused before
    /// they reach the database.
    pub non_destructive: bool,
    /// `openWorldHint: false`: outbound requests outside the closed world are refused by
    /// hintaudit-http.
    pub closed_world: bool,
}

impl Enforcement {
    /// Nothing enforced: observe mode, or hints that rule nothing out.
    pub const NONE: Enforcement = Enforcement {
        read_only: false,
        non_destructive: false,
        closed_world: false,
    };

    /// The enforcement for a call of a tool in `mode` that declares `hints`: only explicit
    /// hints are enforced (an unset hint rules nothing out).
    pub fn for_hints(mode: Mode, hints: DeclaredHints) -> Enforcement {
        if mode != Mode::Enforce {
            return Enforcement::NONE;
        }
        let read_only = hints.read_only == Some(true);
        Enforcement {
            read_only,
            non_destructive: !read_only && hints.destructive == Some(false),
            closed_world: hints.open_world == Some(false),
        }
    }

    /// Whether anything is enforced.
    pub fn is_active(self) -> bool {
        self != Enforcement::NONE
    }

    /// The error text a refused tool sees, naming the hint it declared:
    /// `hintaudit enforce mode: the tool declares readOnlyHint: true; {detail}`.
    pub fn message(hint: Hint, detail: &str) -> String {
        let value = match hint {
            Hint::ReadOnly | Hint::Idempotent => "true",
            Hint::Destructive | Hint::OpenWorld => "false",
        };
        format!(
            "hintaudit enforce mode: the tool declares {}: {value}; {detail}",
            hint.spec_name()
        )
    }
}

/// Who refused: the database itself, or hintaudit before anything was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RefusedBy {
    /// The database refused (a read-only session or transaction).
    Database,
    /// hintaudit refused before the statement or request left the process (statement
    /// classification, the HTTP middleware).
    Hintaudit,
}

impl RefusedBy {
    /// `the database` or `hintaudit`, for evidence texts.
    pub fn as_str(self) -> &'static str {
        match self {
            RefusedBy::Database => "the database",
            RefusedBy::Hintaudit => "hintaudit",
        }
    }
}

/// One refusal of enforce mode, recorded into the call's effects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The hint enforced.
    pub hint: Hint,
    /// Who refused.
    pub by: RefusedBy,
    /// The index in [`crate::Effect::statements`] of the refused statement; `None` for an
    /// outbound request.
    pub statement: Option<usize>,
    /// What was refused, low-cardinality: a statement summary (`DELETE appointments`) or a
    /// request (`POST notify.example.com:443`). Never argument values or SQL literals.
    pub what: String,
}
