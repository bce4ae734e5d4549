//! What the judge makes of enforce mode's refusals ([design: rules](../../../docs/design.md#2-rules)):
//! an `enforced` finding per hint (enforce mode worked), and the evidence the hint's own
//! rule rests on (the hint was still false).

use crate::config::Mode;
use crate::enforce::{Enforcement, Refusal, RefusedBy};
use crate::facts::Evidence;
use crate::finding::{Confidence, Finding, Rule};
use crate::hints::{DeclaredHints, Hint};

/// `enforced`: one finding per hint enforce mode refused something for, naming what was
/// refused and by whom (the first three, then how many more).
/// Only hints whose enforcement applies to the declared hints count ([`Rule::applies_to`]).
pub(crate) fn enforced_findings<'a>(
    tool: &'a str,
    hints: DeclaredHints,
    refusals: &'a [Refusal],
) -> impl Iterator<Item = Finding> + 'a {
    let e = Enforcement::for_hints(Mode::Enforce, hints);
    let enforced = move |hint: &Hint| match hint {
        Hint::ReadOnly => e.read_only,
        Hint::Destructive => e.non_destructive,
        Hint::OpenWorld => e.closed_world,
        Hint::Idempotent => false,
    };
    Hint::ALL
        .into_iter()
        .filter(enforced)
        .filter_map(move |hint| {
            let refused = refused_for(refusals, hint);
            let first = refused.first()?;
            let mut text: Vec<String> = refused
                .iter()
                .take(3)
                .map(|r| format!("{} refused by {}", r.what, r.by.as_str()))
                .collect();
            if refused.len() > 3 {
                text.push(format!("{} more", refused.len() - 3));
            }
            Some(Finding::new(
                tool,
                Rule::Enforced,
                first.hint,
                Confidence::Confirmed,
                format!("{} enforced: {}", hint.spec_name(), text.join("; ")),
            ))
        })
}

/// What enforce mode refused for `hint`, in order.
fn refused_for(refusals: &[Refusal], hint: Hint) -> Vec<&Refusal> {
    refusals.iter().filter(|r| r.hint == hint).collect()
}

/// The evidence a hint's own rule rests on when enforce mode refused what that hint rules
/// out: the tool's code tried it, and the hint is false whether or not the attempt got
/// through. `confirmed` when the database refused (it found a write), `likely` when hintaudit
/// refused on statement analysis or before a request was sent; `None` when nothing was
/// refused for `hint`.
pub(crate) fn refused_evidence(refusals: &[Refusal], hint: Hint) -> Option<Evidence> {
    let refused = refused_for(refusals, hint);
    let first = refused.first()?;
    let confidence =
        if refused.iter().any(|r| r.by == RefusedBy::Database) || hint == Hint::OpenWorld {
            Confidence::Confirmed
        } else {
            Confidence::Likely
        };
    let more = match refused.len() {
        1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    Some(Evidence {
        confidence,
        text: format!(
            "{} tried, refused by {} in enforce mode{more}",
            first.what,
            first.by.as_str()
        ),
    })
}
