//! One row per effect: the disclosure's JSON.

use serde_json::json;

use super::*;
use crate::completeness::EvidenceSource;
use crate::database::DatabaseKind;
use crate::effect::{
    ExplicitEffect, ObservationSource, Operation, OutboundReach, RowChange, RowImage,
    StatementEffect, TableWrites, TransactionObservation,
};
use crate::files::RecordsChange;
use crate::finding::{Confidence, Rule};
use crate::hints::Hint;

fn row(table: &str, operation: RowOperation, committed: bool) -> RowChange {
    RowChange {
        table: table.into(),
        operation,
        statement: Some(0),
        committed,
        image: RowImage::Unknown,
        nested: None,
        row_id: None,
    }
}

fn logged(table: &str, inserted: u64, updated: u64, deleted: u64) -> TransactionObservation {
    TransactionObservation {
        wrote: true,
        tables: vec![TableWrites {
            table: table.into(),
            inserted,
            updated,
            deleted,
        }],
        sequences: Vec::new(),
        committed: true,
        source: ObservationSource::Log,
        images: Vec::new(),
    }
}

fn statement(operation: Operation, table: &str, outcome: StatementOutcome) -> StatementEffect {
    let mut s = StatementEffect::new(operation, vec![table.into()]);
    s.outcome = outcome;
    s
}

#[test]
fn every_source_reads_as_tables_files_and_hosts() {
    let rows: Vec<(Effect, serde_json::Value)> = vec![
        (Effect::default(), json!([])),
        // Hooked rows (SQLite): committed only; the statement names its operation once.
        (
            Effect {
                statements: vec![
                    statement(Operation::Update, "items", StatementOutcome::Ok),
                    statement(Operation::Update, "items", StatementOutcome::Ok),
                    statement(Operation::Delete, "log", StatementOutcome::RolledBack),
                    statement(Operation::Select, "users", StatementOutcome::Ok),
                ],
                row_changes: vec![
                    row("items", RowOperation::Update, true),
                    row("items", RowOperation::Update, true),
                    row("log", RowOperation::Delete, false),
                ],
                ..Effect::default()
            },
            json!([{"name": "items", "inserted": 0, "updated": 2, "deleted": 0,
                    "operations": ["UPDATE"]}]),
        ),
        // The database log (the proxy): counts, no statements.
        (
            Effect {
                transactions: vec![logged("items", 1, 0, 3), logged("audit", 2, 0, 0)],
                ..Effect::default()
            },
            json!([
                {"name": "audit", "inserted": 2, "updated": 0, "deleted": 0, "operations": []},
                {"name": "items", "inserted": 1, "updated": 0, "deleted": 3, "operations": []},
            ]),
        ),
        // A table hooks saw is not counted twice by an observation of the same commit.
        (
            Effect {
                row_changes: vec![row("items", RowOperation::Insert, true)],
                transactions: vec![logged("items", 1, 0, 0)],
                ..Effect::default()
            },
            json!([{"name": "items", "inserted": 1, "updated": 0, "deleted": 0,
                    "operations": []}]),
        ),
        // A failed statement and a temporary table are no writes.
        (
            Effect {
                statements: vec![
                    statement(Operation::Truncate, "items", StatementOutcome::Failed),
                    {
                        let mut s = statement(Operation::Insert, "tmp", StatementOutcome::Ok);
                        s.session_tables = vec!["tmp".to_owned()].into();
                        s
                    },
                ],
                ..Effect::default()
            },
            json!([]),
        ),
    ];
    for (effect, tables) in rows {
        let json = Disclosure::of(&effect, &[]).to_json();
        assert_eq!(json["tables"], tables, "{effect:?}");
    }
}

#[test]
fn files_reported_targets_and_hosts_once_each() {
    let effect = Effect {
        explicit: vec![
            ExplicitEffect {
                target: "file:/srv/a.csv".into(),
                change: ExplicitChange::Overwrite,
            },
            ExplicitEffect {
                target: "queue:mail".into(),
                change: ExplicitChange::Add,
            },
        ],
        outbound: vec![
            OutboundReach::new("POST", "Hooks.example.com", Some(443)),
            OutboundReach::new("GET", "hooks.example.com", Some(443)),
            OutboundReach::new("GET", "10.0.0.1", None),
        ],
        ..Effect::default()
    };
    let mut effect = effect;
    effect
        .completeness
        .pending(EvidenceSource::Database(DatabaseKind::Postgres));
    let json = Disclosure::of(&effect, &[]).to_json();
    assert_eq!(
        json,
        json!({
            "status": "pending",
            "pending": ["postgresql"],
            "incomplete": [],
            "tables": [],
            "files": [{"target": "/srv/a.csv", "change": "overwritten"}],
            "reported": [{"target": "queue:mail", "change": "added"}],
            "outbound": [
                {"host": "10.0.0.1", "port": null},
                {"host": "hooks.example.com", "port": 443},
            ],
            "findings": [],
        })
    );
}

#[test]
fn findings_carry_rule_severity_hint_and_confidence_never_evidence() {
    let finding = Finding::new(
        "get_item",
        Rule::ReadOnlyWrite,
        Hint::ReadOnly,
        Confidence::Likely,
        "database log: items +0 ~1 -0",
    );
    let json = Disclosure::of(&Effect::default(), &[finding]).to_json();
    assert_eq!(
        json["findings"],
        json!([{"rule": "read_only_write", "severity": "critical", "hint": "readOnlyHint",
                "confidence": "likely"}])
    );
    assert!(!json.to_string().contains("items"), "{json}");
}

fn changed(path: &str, kind: ChangeKind) -> FileChange {
    FileChange {
        path: path.to_owned(),
        kind,
    }
}

/// One row per watched change: the `files` it discloses (`target`, `change`).
#[test]
fn watched_file_changes_read_as_added_overwritten_or_deleted() {
    let kept = |k| ChangeKind::ContentKept(Box::new(k));
    let rows: Vec<(ChangeKind, &[(&str, &str)])> = vec![
        (ChangeKind::Created, &[("a.txt", "added")]),
        (ChangeKind::Appended, &[("a.txt", "added")]),
        (ChangeKind::LinesKept, &[("a.txt", "added")]),
        (ChangeKind::Overwritten, &[("a.txt", "overwritten")]),
        (ChangeKind::ModeChanged, &[("a.txt", "overwritten")]),
        (ChangeKind::Replaced, &[("a.txt", "overwritten")]),
        (ChangeKind::Deleted, &[("a.txt", "deleted")]),
        (
            ChangeKind::RenamedTo("archive/a.txt".into()),
            &[("a.txt", "deleted"), ("archive/a.txt", "added")],
        ),
        (kept(ChangeKind::Overwritten), &[("a.txt", "overwritten")]),
        (kept(ChangeKind::Deleted), &[("a.txt", "deleted")]),
        // A document whose records are all as they were: no change.
        (ChangeKind::Records(RecordsChange::default()), &[]),
        (ChangeKind::Repository(Box::default()), &[]),
    ];
    for (kind, want) in rows {
        let effect = Effect {
            files: vec![changed("a.txt", kind.clone())],
            ..Effect::default()
        };
        let want: Vec<serde_json::Value> = want
            .iter()
            .map(|(t, c)| json!({"target": t, "change": c}))
            .collect();
        let json = Disclosure::of(&effect, &[]).to_json();
        assert_eq!(json["files"], json!(want), "{kind:?}");
        assert_eq!(json["status"], "observed");
    }
}

#[test]
fn watched_and_reported_files_are_listed_together_once_each() {
    let effect = Effect {
        files: vec![
            changed("notes/b.txt", ChangeKind::Overwritten),
            changed("notes/a.txt", ChangeKind::Created),
            changed("notes/a.txt", ChangeKind::Created),
        ],
        explicit: vec![ExplicitEffect {
            target: "file:/srv/a.csv".into(),
            change: ExplicitChange::Overwrite,
        }],
        ..Effect::default()
    };
    assert_eq!(
        Disclosure::of(&effect, &[]).to_json()["files"],
        json!([
            {"target": "/srv/a.csv", "change": "overwritten"},
            {"target": "notes/a.txt", "change": "added"},
            {"target": "notes/b.txt", "change": "overwritten"},
        ])
    );
}

/// A gap in any source makes the call incomplete, whatever else is pending; each source
/// named once.
#[test]
fn a_gap_in_any_source_is_incomplete_never_observed() {
    let pg = EvidenceSource::Database(DatabaseKind::Postgres);
    let mut effect = Effect {
        files: vec![changed("a.txt", ChangeKind::Created)],
        ..Effect::default()
    };
    effect.completeness.pending(pg);
    effect.completeness.incomplete(EvidenceSource::Files);
    effect.completeness.incomplete(EvidenceSource::Files);
    let json = Disclosure::of(&effect, &[]).to_json();
    assert_eq!(json["status"], "incomplete");
    assert_eq!(json["pending"], json!(["postgresql"]));
    assert_eq!(json["incomplete"], json!(["files"]));
    // What was seen is still disclosed.
    assert_eq!(
        json["files"],
        json!([{"target": "a.txt", "change": "added"}])
    );
}
