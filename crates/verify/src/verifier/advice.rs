//! Advice that loosens a hint, from trusted calls only, and only where verify could see
//! every kind of effect the hint rules out.
//!
//! A call supports advice only when it ran (no error, no error text) and its arguments were
//! not made up: they came from the cases file, the schema (examples, defaults, enums) or
//! the database. A generated placeholder (`hintaudit` as SQL text, say) that changed
//! nothing shows nothing about what the tool does with real arguments.
//!
//! What each advice needs observed: `could_be_read_only` rules out every write, so it needs
//! the outbound requests (a `--stdio` server behind the recording proxy) and every
//! sequence's moves (no blind spot of the snapshots: `crate::sequences`);
//! `could_be_closed_world` needs the outbound requests; `could_be_non_destructive` rules
//! out deletes, overwrites and drops, which the snapshots always see. Advice withheld for a
//! blind spot is a note saying why.

use hintaudit_core::{Advice, Hint, OpenWorldReading, OutboundReach, Policy};

use crate::client::ToolInfo;
use crate::report::CaseReport;

/// Advice for a passed tool and the labels of the cases it rests on: `could_be_read_only`
/// when no call wrote and a trusted call ran; `could_be_non_destructive` when a trusted
/// call wrote and no call removed or overwrote rows or dropped or altered a table;
/// `could_be_closed_world` when the server ran behind the recording proxy (`watched`), a
/// trusted call ran, and no call reached outside `policy`'s closed world under its alerting
/// reading of openWorldHint.
/// `blind`: what the snapshots could not fully see (one reason each). The third list holds
/// a note for each advice withheld for what verify could not see.
pub(super) fn advice(
    tool: &ToolInfo,
    cases: &[CaseReport],
    policy: &Policy,
    watched: bool,
    blind: &[&str],
) -> (Vec<Advice>, Vec<String>, Vec<String>) {
    let e = tool.hints.effective();
    let changes = || {
        cases
            .iter()
            .flat_map(|c| c.calls.iter())
            .flat_map(|c| c.changes.iter())
    };
    let wrote = changes().next().is_some();
    let destroyed = changes().any(|d| d.removed > 0 || d.changed > 0 || d.dropped || d.altered);
    let trusted: Vec<&CaseReport> = cases
        .iter()
        .filter(|c| c.made_up.is_empty() && c.calls.iter().any(|call| call.error.is_none()))
        .collect();
    let trusted_wrote: Vec<&CaseReport> = trusted
        .iter()
        .copied()
        .filter(|c| c.calls.iter().any(|call| !call.changes.is_empty()))
        .collect();
    let mut out = Vec::new();
    let mut basis: Vec<&CaseReport> = Vec::new();
    let mut withheld = Vec::new();
    const UNSEEN_OUTBOUND: &str = "the server's outbound HTTP requests are not seen (a --url \
        server is not started behind the recording proxy)";
    if !e.read_only && !wrote && !trusted.is_empty() {
        let mut unseen: Vec<&str> = blind.to_vec();
        if !watched {
            unseen.push(UNSEEN_OUTBOUND);
        }
        if unseen.is_empty() {
            out.push(Advice::CouldBeReadOnly);
            basis.extend(&trusted);
        } else {
            withheld.push(format!(
                "no could_be_read_only advice: no call wrote, but not every write could be \
                 seen: {}",
                unseen.join("; ")
            ));
        }
    }
    if !e.read_only && e.destructive && wrote && !destroyed && !trusted_wrote.is_empty() {
        out.push(Advice::CouldBeNonDestructive);
        basis.extend(&trusted_wrote);
    }
    let reached = cases
        .iter()
        .flat_map(|c| c.calls.iter())
        .flat_map(|c| c.outbound.iter())
        .any(|o| reaches_out(policy, o));
    if e.open_world && !reached && !trusted.is_empty() {
        if watched {
            out.push(Advice::CouldBeClosedWorld);
            basis.extend(&trusted);
        } else {
            withheld.push(format!(
                "no could_be_closed_world advice: {UNSEEN_OUTBOUND}"
            ));
        }
    }
    let mut labels: Vec<String> = Vec::new();
    for c in basis {
        if !labels.contains(&c.label) {
            labels.push(c.label.clone());
        }
    }
    (out, labels, withheld)
}

/// Whether a request counts against openWorldHint false under `policy`'s alerting reading:
/// outside the closed world, and mutating under the directory reading.
fn reaches_out(policy: &Policy, o: &OutboundReach) -> bool {
    !policy.closed_world().contains(&o.host, o.port)
        && (policy.open_world_reading() == OpenWorldReading::Interaction || o.is_mutating())
}

/// The hint an advice is about, spelled for reports.
pub(crate) fn advice_text(a: Advice) -> String {
    let value = match a.hint() {
        Hint::ReadOnly => "true",
        _ => "false",
    };
    format!("{}: {} could be {value}", a.as_str(), a.hint())
}
