//! Attribution under concurrency: 40 concurrent calls of different tools through one
//! audited server and one pool, on SQLite, PostgreSQL and MySQL/MariaDB; every statement
//! and row change lands in its own call.

use std::collections::BTreeMap;

use hintaudit::core::{Operation, RowOperation};
use hintaudit_cli::demo::connect;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use crate::support::{self, TestDb};

/// What one call of each tool must show: its tables, and its committed row changes as
/// (table, operation) → count.
fn expected(
    tool: &str,
) -> (
    &'static [&'static str],
    &'static [(&'static str, RowOperation, usize)],
) {
    match tool {
        "list_appointments" | "export_appointments" => (&["appointments"], &[]),
        "get_appointment" => (
            &["appointments"],
            &[("appointments", RowOperation::Update, 1)],
        ),
        "search_patients" => (
            &["patients", "audit_log"],
            &[("audit_log", RowOperation::Insert, 1)],
        ),
        "add_patient" => (&["patients"], &[("patients", RowOperation::Insert, 1)]),
        "create_appointment" => (
            &["appointments"],
            &[("appointments", RowOperation::Insert, 1)],
        ),
        other => panic!("no expectation for {other}"),
    }
}

fn call_for(i: usize) -> (&'static str, Value) {
    match i % 6 {
        0 => ("list_appointments", json!({"limit": 5})),
        1 => ("get_appointment", json!({"id": 1 + (i % 4)})),
        2 => ("search_patients", json!({"query": "a"})),
        3 => (
            "add_patient",
            json!({"name": format!("Patient {i}"), "email": format!("p{i}@example.org")}),
        ),
        4 => (
            "create_appointment",
            json!({"patient_id": 1 + (i % 3), "starts_at": format!("2027-01-{:02}T09:00", 1 + i % 28), "reason": "check"}),
        ),
        _ => ("export_appointments", json!({"format": "json"})),
    }
}

async fn attribution(db: TestDb) {
    const CALLS: usize = 40;
    let (server, collector, _pool) = support::audited(&db).await;
    let client = std::sync::Arc::new(connect(&server.url).await.expect("client"));
    let mut tasks = Vec::new();
    for i in 0..CALLS {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let (tool, args) = call_for(i);
            let params =
                CallToolRequestParams::new(tool).with_arguments(args.as_object().unwrap().clone());
            let r = client.call_tool(params).await.expect("call");
            assert_ne!(r.is_error, Some(true), "{tool}: {:?}", r.content);
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    let collected = collector.snapshot();
    assert_eq!(collected.calls.len(), CALLS);
    let mut per_tool: BTreeMap<&str, usize> = BTreeMap::new();
    for call in &collected.calls {
        *per_tool.entry(call.tool.as_str()).or_default() += 1;
        let (tables, rows) = expected(&call.tool);
        let e = &call.observed;
        // Statements: each data statement names only this tool's tables.
        let data: Vec<_> = e
            .statements
            .iter()
            .filter(|s| s.operation != Operation::Transaction)
            .collect();
        assert!(!data.is_empty(), "{}: no statement attributed", call.tool);
        for s in &data {
            for t in s.tables.iter().chain(s.read_tables.iter()) {
                assert!(
                    tables.contains(&t.as_str()),
                    "{}: statement on {t} is another call's: {s:?}",
                    call.tool
                );
            }
        }
        // Row changes: exactly this tool's, all committed.
        let mut got: BTreeMap<(String, RowOperation), usize> = BTreeMap::new();
        for rc in &e.row_changes {
            assert!(rc.committed, "{}: {rc:?}", call.tool);
            *got.entry((rc.table.clone(), rc.operation)).or_default() += 1;
        }
        let want: BTreeMap<(String, RowOperation), usize> = rows
            .iter()
            // PostgreSQL reports through the oracle instead, MySQL through rows affected
            .filter(|_| db.backend == "sqlite")
            .map(|(t, op, n)| ((t.to_string(), *op), *n))
            .collect();
        assert_eq!(got, want, "{}: row changes {:?}", call.tool, e.row_changes);
        if db.backend == "postgres" {
            // The oracle's per-table counts: exactly this call's writes.
            let mut counts: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
            for t in &e.transactions {
                for w in &t.tables {
                    let c = counts.entry(w.table.clone()).or_default();
                    c.0 += w.inserted;
                    c.1 += w.updated;
                    c.2 += w.deleted;
                }
            }
            let want: BTreeMap<String, (u64, u64, u64)> = rows
                .iter()
                .map(|(t, op, n)| {
                    let n = *n as u64;
                    let c = match op {
                        RowOperation::Insert => (n, 0, 0),
                        RowOperation::Update => (0, n, 0),
                        RowOperation::Delete => (0, 0, n),
                    };
                    (t.to_string(), c)
                })
                .collect();
            assert_eq!(counts, want, "{}: oracle counts", call.tool);
        }
        if db.backend == "mysql" {
            // Rows affected from the OK packets: exactly this call's writes.
            let mut counts: BTreeMap<(String, RowOperation), usize> = BTreeMap::new();
            for s in &e.statements {
                let op = match s.operation {
                    Operation::Insert => RowOperation::Insert,
                    Operation::Update => RowOperation::Update,
                    Operation::Delete => RowOperation::Delete,
                    _ => continue,
                };
                let n = s.rows_affected.expect("rows affected of a MySQL write") as usize;
                *counts.entry((s.tables[0].clone(), op)).or_default() += n;
            }
            let want: BTreeMap<(String, RowOperation), usize> = rows
                .iter()
                .map(|(t, op, n)| ((t.to_string(), *op), *n))
                .collect();
            assert_eq!(counts, want, "{}: rows affected", call.tool);
        }
    }
    assert_eq!(per_tool.values().sum::<usize>(), CALLS);
    assert_eq!(per_tool.len(), 6, "six different tools ran: {per_tool:?}");
    server.shutdown().await;
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_calls_are_attributed_on_sqlite() {
    attribution(support::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_calls_are_attributed_on_postgres() {
    let Some(db) = support::postgres("concurrency").await else {
        return;
    };
    attribution(db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_calls_are_attributed_on_mysql() {
    let Some(db) = support::mysql("concurrency").await else {
        return;
    };
    attribution(db).await;
}
