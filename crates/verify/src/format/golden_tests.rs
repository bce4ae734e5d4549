//! Every format, byte for byte, against `tests/golden/`: a full report (every section and
//! note a renderer writes) and a bare one (a `--url` server with nothing to say).
//! `HINTAUDIT_UPDATE_GOLDEN=1` rewrites the files; nothing else does.

use std::path::Path;

use hintaudit_core::{
    Advice, Confidence, DeclaredHints, Finding, Hint, OutboundReach, Rule, Severity,
};

use super::Format;
use crate::files::{ChangeKind, FileChange};
use crate::report::{CallRecord, CaseReport, Report, ToolReport, ToolStatus};
use crate::snapshot::TableDiff;
use crate::suggestion::Suggestion;
use crate::{SnapshotStats, UnattributedRequest};

fn call(changes: Vec<TableDiff>, outbound: Vec<OutboundReach>) -> CallRecord {
    CallRecord {
        error: None,
        changes,
        outbound,
        files: Vec::new(),
    }
}

fn case(label: &str, calls: Vec<CallRecord>) -> CaseReport {
    CaseReport {
        label: label.into(),
        from_file: false,
        made_up: vec![],
        generated: vec![
            ("id".into(), "a value from the database".into()),
            ("id".into(), "a value from the database".into()),
        ],
        calls,
    }
}

fn tool(name: &str, hints: DeclaredHints, status: ToolStatus) -> ToolReport {
    ToolReport {
        name: name.into(),
        hints,
        action: None,
        status,
        findings: vec![],
        advice: vec![],
        advice_basis: vec![],
        notes: vec![],
        cases: vec![],
        suggestion: None,
    }
}

/// A read-only tool that wrote and posted, with two findings and a suggestion.
fn liar(read_only: DeclaredHints) -> ToolReport {
    let post = OutboundReach::new("POST", "notify.example", Some(80));
    let diff = TableDiff {
        table: "items".into(),
        changed: 1,
        ..TableDiff::default()
    };
    let mut liar = tool("view <&> item", read_only, ToolStatus::Failed);
    liar.findings = vec![
        Finding::new(
            "view <&> item",
            Rule::ReadOnlyWrite,
            Hint::ReadOnly,
            Confidence::Confirmed,
            "1 row updated in items",
        ),
        Finding::new(
            "view <&> item",
            Rule::HintMissing,
            Hint::Destructive,
            Confidence::Confirmed,
            "destructiveHint unset; clients assume true",
        ),
    ];
    liar.cases = vec![case(
        "generated",
        vec![
            call(vec![diff], vec![post.clone(), post]),
            CallRecord {
                files: vec![
                    FileChange {
                        path: "access.log".into(),
                        kind: ChangeKind::Appended,
                    },
                    FileChange {
                        path: "a.txt".into(),
                        kind: ChangeKind::RenamedTo("archive/a.txt".into()),
                    },
                ],
                ..call(
                    vec![],
                    vec![OutboundReach::new("CONNECT", "api.example", Some(443))],
                )
            },
        ],
    )];
    liar.suggestion = Some(Suggestion {
        index: 0,
        annotated: true,
        declared: read_only,
        corrected: DeclaredHints::new(Some(false), Some(false), None, Some(false)),
        evidence: vec!["read_only_write in case generated".into()],
    });
    liar
}

/// A liar with a finding and a fix, a tool with advice and a suggestion but no finding,
/// a tool no call exercised; a copy, an early end, stderr, outbound requests.
fn full() -> Report {
    let read_only = DeclaredHints::new(Some(true), None, None, Some(false));
    let plain = DeclaredHints::new(Some(false), Some(false), Some(false), Some(false));
    let mut stats = tool("stats", plain, ToolStatus::Passed);
    stats.advice = vec![Advice::CouldBeReadOnly];
    stats.advice_basis = vec!["generated".into(), "from file".into()];
    stats.cases = vec![case("generated", vec![call(vec![], vec![])])];
    stats.suggestion = Some(Suggestion {
        index: 1,
        annotated: false,
        declared: plain,
        corrected: DeclaredHints::new(Some(true), Some(false), Some(false), Some(false)),
        evidence: vec!["could_be_read_only after 1 call".into()],
    });
    let mut report = tool(
        "report",
        read_only,
        ToolStatus::NotExercised("cannot generate \"spec\"".into()),
    );
    report.notes = vec!["generated 16 of 32 combinations of mode values (limit 16)".into()];
    Report {
        server: "python server.py".into(),
        database: "sqlite://t.db".into(),
        tools: vec![liar(read_only), stats, report],
        stats: SnapshotStats::default(),
        elapsed_seconds: 1.5,
        incomplete: Some("the server exited (status 1)".into()),
        database_check: "confirmed: a call of view <&> item changed table items".into(),
        database_copy: Some("sqlite://t.hintaudit-copy.db".into()),
        database_resets: 2,
        server_stderr: vec!["line 1".into(), "line <2> & \"3\"".into()],
        outbound_watched: true,
        unattributed_outbound: vec![
            UnattributedRequest {
                request: OutboundReach::new("CONNECT", "telemetry.example", Some(443)),
                after: None,
            },
            UnattributedRequest {
                request: OutboundReach::new("GET", "cdn.example", None),
                after: Some("stats".into()),
            },
        ],
        watched: vec!["/srv/notes".into()],
    }
}

/// One clean tool of a `--url` server: no findings, notes, suggestions or outbound.
fn bare() -> Report {
    let plain = DeclaredHints::new(Some(true), None, None, Some(false));
    let mut only = tool("list", plain, ToolStatus::Passed);
    only.cases = vec![case("from file", vec![call(vec![], vec![])])];
    only.cases[0].generated.clear();
    Report {
        server: "http://127.0.0.1:8000/mcp".into(),
        database: "postgres://127.0.0.1/test".into(),
        tools: vec![only],
        stats: SnapshotStats::default(),
        elapsed_seconds: 0.25,
        incomplete: None,
        database_check: "not confirmed: no call changed a watched table".into(),
        database_copy: None,
        database_resets: 0,
        server_stderr: vec![],
        outbound_watched: false,
        unattributed_outbound: vec![],
        watched: vec![],
    }
}

fn check(name: &str, text: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var("HINTAUDIT_UPDATE_GOLDEN").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (HINTAUDIT_UPDATE_GOLDEN=1 writes it)",
            path.display()
        )
    });
    assert!(want == text, "{name} differs from the golden file:\n{text}");
}

#[test]
fn every_format_renders_as_its_golden_file() {
    for (report, stem) in [(full(), "full"), (bare(), "bare")] {
        for (format, ext) in [
            (Format::Table, "txt"),
            (Format::Json, "json"),
            (Format::Junit, "junit.xml"),
            (Format::Sarif, "sarif.json"),
        ] {
            check(
                &format!("{stem}.{ext}"),
                &format.render(&report, Severity::Warning),
            );
        }
    }
}
