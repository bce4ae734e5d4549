//! The judge's two readings of a call (in outline, then in full with the texts its rules
//! can use when one fires) agree with the full facts in everything but the texts.

use std::borrow::Cow;
use std::collections::BTreeSet;

use super::*;
use crate::StateKey;
use crate::facts::{Keys, Wanted};

/// Asserts, for case `name`, that the facts read with the texts wanted for `h` and the
/// outline agree with the full facts of `effect` under `policy`: the same evidence and
/// confidences (texts only where wanted), tables, hosts and counts.
pub(super) fn readings_agree(name: &str, effect: &Effect, policy: &Policy, h: DeclaredHints) {
    // The judge reads the facts first in outline, then, when a rule fires, with the
    // texts its rules can use; both must agree with the full facts in everything but the
    // text.
    let full = Facts::from_effect(effect, policy);
    let wanted = Wanted::for_hints(h);
    let lean = Facts::build(effect, policy, wanted);
    for (kind, full, lean, wanted) in [
        ("writes", &full.writes, &lean.writes, wanted.writes),
        ("attempts", &full.attempts, &lean.attempts, wanted.attempts),
        (
            "destructive",
            &full.destructive,
            &lean.destructive,
            wanted.destructive,
        ),
        (
            "net_changes",
            &full.net_changes,
            &lean.net_changes,
            wanted.net_changes,
        ),
    ] {
        let confidences = |e: &[Evidence]| e.iter().map(|e| e.confidence).collect::<Vec<_>>();
        assert_eq!(confidences(full), confidences(lean), "case {name}: {kind}");
        for (f, l) in full.iter().zip(lean) {
            let expected = if wanted { f.text.as_str() } else { "" };
            assert_eq!(l.text, expected, "case {name}: {kind}");
        }
    }
    assert_eq!(
        (&full.written_tables, &full.touched_tables, &full.hosts),
        (&lean.written_tables, &lean.touched_tables, &lean.hosts),
        "case {name}"
    );
    assert_eq!(
        full.any_write_statement, lean.any_write_statement,
        "case {name}"
    );
    let outline = Facts::outline(effect, policy);
    assert_eq!(
        [
            outline.writes,
            outline.attempts,
            outline.destructive,
            outline.net_changes,
            outline.outside,
            outline.outside_changes,
        ],
        [
            full.writes.len(),
            full.attempts.len(),
            full.destructive.len(),
            full.net_changes.len(),
            full.outside.len(),
            full.outside_changes.len(),
        ],
        "case {name}: the outline's counts"
    );
    // The outline's tables (its file keys come from the file changes, which facts list as
    // evidence).
    let set = |t: &Keys<'_>| {
        t.iter()
            .filter_map(|k| match k {
                StateKey::Table(t) => Some(t.to_string()),
                _ => None,
            })
            .collect::<BTreeSet<_>>()
    };
    let names =
        |t: &BTreeSet<Cow<'_, str>>| t.iter().map(|t| t.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(
        (set(&outline.written), set(&outline.touched)),
        (names(&full.written_tables), names(&full.touched_tables)),
        "case {name}: the outline's tables"
    );
    assert_eq!(
        outline.any_write_statement, full.any_write_statement,
        "case {name}"
    );
}
