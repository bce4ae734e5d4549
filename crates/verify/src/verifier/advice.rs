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
//! out deletes, overwrites and drops, which the snapshots always see, but a tool whose only
//! file writes created new paths never met a file it could overwrite, so it gets none.
//! Advice withheld for a blind spot is a note saying why.
//!
//! Above all, the state must have been found: a server whose database the database check
//! did not confirm, with no directory watched, gets no advice that loosens readOnlyHint or
//! destructiveHint ([`withhold_unseen`]): its writes may go where verify does not look (the
//! official filesystem server, run against an unrelated database, wrote files verify never
//! saw).

use hintaudit_core::{Advice, Hint, OpenWorldReading, OutboundReach, Policy};

use crate::client::ToolInfo;
use crate::files::ChangeKind;
use crate::report::{CallRecord, CaseReport, ToolReport};

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
    let calls = || cases.iter().flat_map(|c| c.calls.iter());
    let wrote = calls().any(CallRecord::changed);
    let destroyed = calls().any(CallRecord::destroyed);
    let trusted: Vec<&CaseReport> = cases
        .iter()
        .filter(|c| c.made_up.is_empty() && c.calls.iter().any(|call| call.error.is_none()))
        .collect();
    let trusted_wrote: Vec<&CaseReport> = trusted
        .iter()
        .copied()
        .filter(|c| c.calls.iter().any(CallRecord::changed))
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
        if only_created_files(cases) {
            withheld.push(
                "no could_be_non_destructive advice: its file writes only created new paths; \
                 what it does to an existing file was not seen"
                    .to_owned(),
            );
        } else {
            out.push(Advice::CouldBeNonDestructive);
            basis.extend(&trusted_wrote);
        }
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

/// Whether the calls changed files and every file they changed was new: a tool that only
/// created paths never met one it could overwrite.
fn only_created_files(cases: &[CaseReport]) -> bool {
    let mut files = cases
        .iter()
        .flat_map(|c| c.calls.iter())
        .flat_map(|c| c.files.iter())
        .peekable();
    files.peek().is_some() && files.all(|f| f.kind == ChangeKind::Created)
}

/// Advice that loosens readOnlyHint or destructiveHint, withheld from every tool when
/// verify could not find the server's state: the database check is not confirmed and no
/// directory is watched (`unseen` says why). A note on each tool says so.
pub(super) fn withhold_unseen(reports: &mut [ToolReport], unseen: &str) {
    for r in reports {
        let before = r.advice.len();
        r.advice
            .retain(|a| !matches!(a, Advice::CouldBeReadOnly | Advice::CouldBeNonDestructive));
        if r.advice.len() < before {
            r.notes.push(format!(
                "no advice to loosen readOnlyHint or destructiveHint: {unseen}"
            ));
        }
        if r.advice.is_empty() {
            r.advice_basis.clear();
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::FileChange;
    use crate::report::CallRecord;
    use serde_json::json;

    fn case(files: Vec<ChangeKind>) -> CaseReport {
        CaseReport {
            label: "c".into(),
            from_file: true,
            made_up: vec![],
            generated: vec![],
            calls: vec![CallRecord {
                error: None,
                changes: vec![],
                outbound: vec![],
                files: files
                    .into_iter()
                    .map(|kind| FileChange {
                        path: "f".into(),
                        kind,
                    })
                    .collect(),
            }],
        }
    }

    /// A table row: the case, the tool, its calls' file changes, the advice, the notes.
    type Row<'a> = (&'a str, &'a ToolInfo, Vec<ChangeKind>, Vec<Advice>, usize);

    #[test]
    fn file_writes_decide_the_advice() {
        let tool = |hints: serde_json::Value| {
            ToolInfo::from_json(&json!({"name": "t", "inputSchema": {}, "annotations": hints}))
                .unwrap()
        };
        let writer =
            tool(json!({"readOnlyHint": false, "destructiveHint": true, "openWorldHint": false}));
        let cases: [Row; 4] = [
            (
                "wrote nothing",
                &writer,
                vec![],
                vec![Advice::CouldBeReadOnly],
                0,
            ),
            (
                "only created",
                &writer,
                vec![ChangeKind::Created],
                vec![],
                1,
            ),
            (
                "appended to an existing file",
                &writer,
                vec![ChangeKind::Appended],
                vec![Advice::CouldBeNonDestructive],
                0,
            ),
            (
                "overwrote",
                &writer,
                vec![ChangeKind::Overwritten],
                vec![],
                0,
            ),
        ];
        for (name, tool, files, want, notes) in cases {
            let (got, _, withheld) = advice(tool, &[case(files)], &Policy::default(), true, &[]);
            assert_eq!(got, want, "{name}");
            assert_eq!(withheld.len(), notes, "{name}: {withheld:?}");
        }
    }

    #[test]
    fn unseen_state_withholds_loosening_advice() {
        let mut reports = vec![ToolReport {
            name: "write_file".into(),
            hints: Default::default(),
            action: None,
            status: crate::report::ToolStatus::Passed,
            findings: vec![],
            advice: vec![Advice::CouldBeReadOnly, Advice::CouldBeClosedWorld],
            advice_basis: vec!["c".into()],
            notes: vec![],
            cases: vec![],
            suggestion: None,
        }];
        withhold_unseen(
            &mut reports,
            "the database check is unconfirmed and nothing is watched",
        );
        assert_eq!(reports[0].advice, vec![Advice::CouldBeClosedWorld]);
        assert!(
            reports[0].notes[0].contains("unconfirmed"),
            "{:?}",
            reports[0].notes
        );
    }
}
