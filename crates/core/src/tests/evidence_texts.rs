//! The evidence texts of the `enforced` and `undeclared_open_world` findings, and of the
//! hint rules recorded beside `enforced`.

use crate::*;

/// A statement enforce mode refused is an `enforced` finding, and the hint's own rule too:
/// the tool's code writes, so `readOnlyHint: true` is false (critical), whether or not the
/// write got through; an outbound request refused the same.
#[test]
fn refusals_are_enforced_findings() {
    let mut update = StatementEffect::new(Operation::Update, vec!["appointments".into()]);
    update.outcome = StatementOutcome::Failed;
    let effect = Effect {
        statements: vec![StatementEffect::new(Operation::Select, vec![]), update],
        refusals: vec![
            Refusal {
                hint: Hint::ReadOnly,
                by: RefusedBy::Database,
                statement: Some(1),
                what: "UPDATE appointments".into(),
            },
            Refusal {
                hint: Hint::OpenWorld,
                by: RefusedBy::Hintaudit,
                statement: None,
                what: "POST to notify.example.com:443".into(),
            },
        ],
        ..Default::default()
    };
    let hints = DeclaredHints::new(Some(true), None, None, Some(false));
    let judge = Judge::new(Policy::default());
    let v = judge.judge(&ToolCall {
        tool: "get_appointment",
        hints,
        arguments: None,
        effect: &effect,
    });
    let got: Vec<(Rule, Hint, Confidence, &str)> = v
        .findings
        .iter()
        .map(|f| (f.rule, f.hint, f.confidence, f.evidence.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (
                Rule::ReadOnlyWrite,
                Hint::ReadOnly,
                Confidence::Confirmed,
                "UPDATE appointments tried, refused by the database in enforce mode"
            ),
            (
                Rule::UndeclaredOpenWorld,
                Hint::OpenWorld,
                Confidence::Confirmed,
                "POST to notify.example.com:443 tried, refused by hintaudit in enforce mode"
            ),
            (
                Rule::Enforced,
                Hint::ReadOnly,
                Confidence::Confirmed,
                "readOnlyHint enforced: UPDATE appointments refused by the database"
            ),
            (
                Rule::Enforced,
                Hint::OpenWorld,
                Confidence::Confirmed,
                "openWorldHint enforced: POST to notify.example.com:443 refused by hintaudit"
            ),
        ]
    );
    assert_eq!(v.label(), "critical");
}

/// The finding's evidence names what the other reading makes of the call.
#[test]
fn open_world_evidence_names_both_readings() {
    let hints = DeclaredHints::new(Some(true), None, None, Some(false));
    for (method, want) in [
        (
            "GET",
            "outbound GET to maps.example.com:443 (spec reading: interaction outside the closed world; directory reading: no outside state changed)",
        ),
        (
            "POST",
            "outbound POST to maps.example.com:443 (spec reading: interaction outside the closed world; directory reading: outside state changed)",
        ),
    ] {
        let effect = Effect {
            outbound: vec![OutboundReach::new(method, "maps.example.com", Some(443))],
            ..Default::default()
        };
        let judge = Judge::new(Policy::default());
        let call = ToolCall {
            tool: "t",
            hints,
            arguments: None,
            effect: &effect,
        };
        let v = judge.judge(&call);
        let f = v
            .findings
            .iter()
            .find(|f| f.rule == Rule::UndeclaredOpenWorld)
            .unwrap();
        assert_eq!(f.evidence, want, "{method}");
    }
}
