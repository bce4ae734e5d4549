//! The suggestion rules, evidence by evidence, and the two forms they are written in.

use super::*;

#[test]
fn rmcp_text_carries_the_corrections_and_the_kept_hints() {
    let declared = DeclaredHints {
        read_only: Some(true),
        open_world: Some(false),
        ..Default::default()
    };
    let finding = Finding::new(
        "peek",
        Rule::ReadOnlyWrite,
        Hint::ReadOnly,
        crate::Confidence::Confirmed,
        "DELETE on items",
    );
    let s = SuggestedHints::from_evidence(
        declared,
        &SuggestionEvidence {
            findings: std::slice::from_ref(&finding),
            destroyed: true,
            wrote: true,
            ..Default::default()
        },
    )
    .expect("a change");
    assert_eq!(
        s.changes(),
        [(Hint::ReadOnly, false), (Hint::Destructive, true)]
    );
    assert_eq!(
        s.rmcp_attribute(),
        "#[tool(annotations(read_only_hint = false, destructive_hint = true, open_world_hint = false))]"
    );
    assert_eq!(
        s.evidence,
        [
            "readOnlyHint false: read_only_write: DELETE on items",
            "destructiveHint true: read_only_write: DELETE on items"
        ]
    );
    assert_eq!(
        SuggestedHints::from_evidence(declared, &SuggestionEvidence::default()),
        None
    );
}

/// A read-only tool caught writing: the transaction counts a call carries (one committed
/// transaction, `(inserted, updated, deleted)` on one table, from each source) decide
/// whether the suggestion also says `destructiveHint: true`. The proxy's database log is
/// read like the oracle (issue 36).
#[test]
fn transaction_counts_that_remove_or_overwrite_rows_suggest_destructive() {
    use crate::effect::{ObservationSource, TableWrites, TransactionObservation};
    use crate::judge::Verdict;
    use ObservationSource::*;
    // The suggestion's JSON: readOnlyHint false alone, or with destructiveHint true.
    const WRITES: &str = r#"{"readOnlyHint": false}"#;
    const DESTROYS: &str = r#"{"readOnlyHint": false, "destructiveHint": true}"#;
    // The last number: updates whose row images show nothing changed (a re-set).
    let rows = [
        (Log, (0, 0, 2), true, DESTROYS, 0),
        (Log, (0, 1, 0), true, DESTROYS, 0),
        (Log, (0, 1, 0), true, WRITES, 1),
        (Log, (0, 2, 0), true, DESTROYS, 1),
        (Log, (1, 0, 0), true, WRITES, 0),
        (Log, (0, 0, 2), false, WRITES, 0),
        (Oracle, (0, 0, 1), true, DESTROYS, 0),
        (Oracle, (3, 0, 0), true, WRITES, 0),
        (RowsAffected, (0, 2, 0), true, DESTROYS, 0),
        (RowsAffected, (0, 0, 0), true, WRITES, 0),
    ];
    for (source, (inserted, updated, deleted), committed, want, unchanged) in rows {
        let images = (unchanged > 0)
            .then(|| crate::effect::ImagedUpdates {
                table: "items".into(),
                image: RowImage::Unchanged,
                rows: unchanged,
            })
            .into_iter()
            .collect();
        let effect = Effect {
            transactions: vec![TransactionObservation {
                wrote: true,
                tables: vec![TableWrites {
                    table: "items".into(),
                    inserted,
                    updated,
                    deleted,
                }],
                committed,
                source,
                images,
                ..Default::default()
            }],
            ..Default::default()
        };
        let verdict = Verdict {
            findings: vec![Finding::new(
                "get_item",
                Rule::ReadOnlyWrite,
                Hint::ReadOnly,
                source.confidence(),
                "database log: items",
            )],
            ..Default::default()
        };
        let report = CallReport {
            tool: "get_item",
            known_tool: true,
            hints: DeclaredHints::new(Some(true), None, None, None),
            status: crate::CallStatus::Ok,
            duration: std::time::Duration::ZERO,
            effect: &effect,
            verdict: &verdict,
        };
        let s = report
            .suggestion()
            .expect("read_only_write changes readOnlyHint");
        let case = format!(
            "{source:?} +{inserted} ~{updated} -{deleted} committed {committed}, \
             {unchanged} unchanged"
        );
        assert_eq!(s.mcp_json(), want, "{case}");
    }
}

/// A read-only tool caught by its API requests: a PUT, PATCH or DELETE acted on also
/// suggests `destructiveHint: true`; a POST, a refused DELETE or a request without a path
/// does not.
#[test]
fn destructive_requests_suggest_destructive() {
    use crate::outbound::{OutboundAnswer, OutboundReach};
    let r = |method: &str, status| {
        OutboundReach::new(method, "api.example.com", Some(443))
            .with_path("/v1/items/7")
            .with_answer(OutboundAnswer::Status(status))
    };
    for (request, destroys) in [
        (r("DELETE", 204), true),
        (r("PATCH", 200), true),
        (r("PUT", 200), true),
        (r("POST", 201), false),
        (r("DELETE", 404), false),
        (
            OutboundReach::new("DELETE", "api.example.com", Some(443)),
            false,
        ),
    ] {
        let effect = Effect {
            outbound: vec![request.clone()],
            ..Default::default()
        };
        assert_eq!(destroyed(&effect), destroys, "{}", request.describe());
    }
}

/// (declared read_only, destructive; advice) -> corrected (read_only, destructive): never
/// the pair `lint_hints` calls `hint_contradiction`.
#[test]
fn corrections_never_contradict_each_other() {
    let rows = [
        (
            (None, Some(true)),
            Advice::CouldBeReadOnly,
            (Some(true), Some(false)),
        ),
        (
            (Some(false), Some(true)),
            Advice::CouldBeReadOnly,
            (Some(true), Some(false)),
        ),
        ((None, None), Advice::CouldBeReadOnly, (Some(true), None)),
        (
            (Some(false), Some(true)),
            Advice::CouldBeNonDestructive,
            (Some(false), Some(false)),
        ),
    ];
    for ((r, d), advice, want) in rows {
        let declared = DeclaredHints {
            read_only: r,
            destructive: d,
            ..Default::default()
        };
        let s = SuggestedHints::from_evidence(
            declared,
            &SuggestionEvidence {
                advice: &[advice],
                advice_basis: "cases: generated",
                ..Default::default()
            },
        )
        .expect("a change");
        assert_eq!(
            (s.corrected.read_only, s.corrected.destructive),
            want,
            "{declared:?}"
        );
        assert!(
            crate::lint_hints("t", s.corrected)
                .iter()
                .all(|f| f.rule != Rule::HintContradiction),
            "{declared:?} -> {}",
            s.rmcp_attribute()
        );
    }
}
