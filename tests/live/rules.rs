//! The rules' own check, through a real rmcp client over streamable HTTP and the layer, on
//! the bookings server: the test's own database snapshots are the ground truth, and the
//! layer's verdicts must agree with them, tool by tool.

use std::collections::{BTreeMap, BTreeSet};

use bookings::{PLANTED_CALL_FINDINGS, PLANTED_LISTING_FINDINGS};
use hintaudit::core::{DeclaredHints, Rule};
use hintaudit_cli::demo::{bookings_plan, connect};
use rmcp::model::CallToolRequestParams;

use crate::support::{self, Diff, Snapshotter, TestDb, diff};

#[derive(Debug, Default)]
struct Truth {
    /// Per tool, the diff of each call, in order.
    diffs: BTreeMap<String, Vec<Diff>>,
}

async fn check_rules(db: TestDb) {
    let (server, collector, _pool) = support::audited(&db).await;
    let snap = Snapshotter::new(&db).await;
    let client = connect(&server.url).await.expect("client");
    let tools = client.list_all_tools().await.expect("tools/list");
    let hints: BTreeMap<String, DeclaredHints> = tools
        .iter()
        .map(|t| {
            let json = serde_json::to_value(&t.annotations).unwrap();
            (
                t.name.to_string(),
                DeclaredHints::from_annotations_json(Some(&json)),
            )
        })
        .collect();

    // Drive the plan, idempotent tools twice, snapshotting around every call.
    let mut truth = Truth::default();
    for step in bookings_plan() {
        let times = if hints[step.tool].idempotent == Some(true) {
            2
        } else {
            1
        };
        for _ in 0..times {
            let before = snap.take().await;
            let params = CallToolRequestParams::new(step.tool)
                .with_arguments(step.arguments.as_object().unwrap().clone());
            let result = client.call_tool(params).await.expect("call");
            assert_ne!(
                result.is_error,
                Some(true),
                "{} failed: {:?}",
                step.tool,
                result.content
            );
            let after = snap.take().await;
            truth
                .diffs
                .entry(step.tool.to_owned())
                .or_default()
                .push(diff(&before, &after));
        }
    }
    assert_eq!(truth.diffs.len(), tools.len(), "the plan calls every tool");
    client.cancel().await.ok();

    let collected = collector.snapshot();
    let reported: BTreeSet<(String, Rule)> = collected
        .calls
        .iter()
        .flat_map(|c| c.findings.iter().map(|f| (f.tool.clone(), f.rule)))
        .collect();
    let has = |tool: &str, rule: Rule| reported.contains(&(tool.to_owned(), rule));

    // 1. Every readOnlyHint tool leaves the snapshot unchanged, unless the layer says it wrote.
    let mut read_only_writers = BTreeSet::new();
    for (tool, diffs) in &truth.diffs {
        if hints[tool].read_only != Some(true) {
            continue;
        }
        let wrote = diffs.iter().any(|d| !d.is_empty());
        assert_eq!(
            wrote,
            has(tool, Rule::ReadOnlyWrite),
            "{tool}: snapshot diffs {diffs:?} vs layer"
        );
        if wrote {
            read_only_writers.insert(tool.as_str());
        }
    }
    assert_eq!(read_only_writers, BTreeSet::from(["get_appointment"]));

    // 2. Every idempotentHint tool, called twice with the same arguments, changes it once.
    let mut non_idempotent = BTreeSet::new();
    for (tool, diffs) in &truth.diffs {
        if hints[tool].idempotent != Some(true) || hints[tool].read_only == Some(true) {
            continue;
        }
        assert_eq!(diffs.len(), 2, "{tool} was called twice");
        let repeat_changed = !diffs[1].is_empty();
        assert_eq!(
            repeat_changed,
            has(tool, Rule::IdempotencyBroken),
            "{tool}: repeat diff {:?} vs layer",
            diffs[1]
        );
        if repeat_changed {
            non_idempotent.insert(tool.as_str());
        }
    }
    assert_eq!(non_idempotent, BTreeSet::from(["create_appointment"]));

    // 3. Every tool that deletes or overwrites rows carries destructiveHint true, unless the
    //    layer reported it.
    let mut undeclared = BTreeSet::new();
    for (tool, diffs) in &truth.diffs {
        let destructive = diffs.iter().any(|d| d.destructive());
        let h = hints[tool];
        if destructive && h.read_only != Some(true) && h.destructive == Some(false) {
            assert!(
                has(tool, Rule::UndeclaredDestructive),
                "{tool} deleted or overwrote: {diffs:?}"
            );
            undeclared.insert(tool.as_str());
        } else {
            assert!(
                !has(tool, Rule::UndeclaredDestructive),
                "{tool} reported destructive, diffs {diffs:?}"
            );
        }
    }
    assert_eq!(
        undeclared,
        BTreeSet::from(["confirm_appointment", "purge_cancelled"])
    );

    // 4. The layer reports exactly the planted findings, no more and no fewer.
    let planted: BTreeSet<(String, Rule)> = PLANTED_CALL_FINDINGS
        .iter()
        .map(|(t, r)| (t.to_string(), Rule::parse(r).unwrap()))
        .collect();
    assert_eq!(reported, planted, "call findings");
    let listing: BTreeSet<(String, Rule)> = collected
        .listings
        .iter()
        .flat_map(|(_, _, fs)| fs.iter().map(|f| (f.tool.clone(), f.rule)))
        .collect();
    let planted_listing: BTreeSet<(String, Rule)> = PLANTED_LISTING_FINDINGS
        .iter()
        .map(|(t, r)| (t.to_string(), Rule::parse(r).unwrap()))
        .collect();
    assert_eq!(listing, planted_listing, "listing findings");
    // The critical ones rest on confirmed evidence (hooks, the oracle, rows affected), not
    // statement analysis; on MySQL, a write made by a trigger is found by expanding the
    // statement through the triggers it fires: likely, and the evidence says so.
    for c in &collected.calls {
        for f in &c.findings {
            if f.rule == Rule::ReadOnlyWrite || f.rule == Rule::UndeclaredDestructive {
                let via_trigger = db.backend == "mysql" && f.tool == "confirm_appointment";
                let want = if via_trigger {
                    hintaudit::core::Confidence::Likely
                } else {
                    hintaudit::core::Confidence::Confirmed
                };
                assert_eq!(f.confidence, want, "{f:?}");
                if via_trigger {
                    assert!(
                        f.evidence
                            .contains("via trigger confirmation_sets_status on confirmations"),
                        "{f:?}"
                    );
                }
            }
        }
    }

    server.shutdown().await;
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_hold_on_sqlite() {
    check_rules(support::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_hold_on_postgres() {
    let Some(db) = support::postgres("rules").await else {
        return;
    };
    check_rules(db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_hold_on_mysql() {
    let Some(db) = support::mysql("rules").await else {
        return;
    };
    check_rules(db).await;
}
