//! verify's judgement on the behaviours of a real database server (issue 31: crystaldba's
//! postgres-mcp), reproduced by tests/verify/python_server/judgement_server.py (official MCP
//! SDK, over stdio) on a real PostgreSQL: a read-only tool that takes a sequence's nextval, a
//! sequence moved by a tool that declares writes (no loosening advice), a sequence whose
//! moves verify cannot see (no loosening advice, and the report says why), a successful
//! report starting with an error word, a SQL parameter with a default, a destructive-declared
//! reader (a suggestion the lint accepts), and evidence that counts every case.
//!
//! Each test works in its own schema and drops it. They skip with a printed reason when
//! Python's `mcp` and `psycopg` or PostgreSQL are absent, unless `HINTAUDIT_REQUIRE_ALL=1`
//! (or `HINTAUDIT_REQUIRE_PG=1`). `HINTAUDIT_PG_URL` overrides
//! `postgres://postgres@127.0.0.1:5432/test`.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

use std::path::PathBuf;
use std::process::{Command, Stdio};

use hintaudit_core::{Advice, Rule, lint_hints};
use hintaudit_verify::{Cases, ObjectKind, Report, ServerSpec, ToolReport, ToolStatus, Verifier};
use sqlx::Connection;
use sqlx::postgres::PgConnection;

use hintaudit_test_support::required;

fn pg_url() -> String {
    std::env::var("HINTAUDIT_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

fn server_py() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/verify/python_server/judgement_server.py")
}

/// Python with the MCP SDK and psycopg, and an admin connection to PostgreSQL; `None` (the
/// reason printed) when either is absent and not required.
async fn parts() -> Option<(String, PgConnection)> {
    let py = ["python3", "python"].into_iter().find(|py| {
        Command::new(py)
            .args(["-c", "import mcp.server.mcpserver, psycopg"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    let Some(py) = py else {
        assert!(
            !required("HINTAUDIT_REQUIRE_PG"),
            "python with mcp and psycopg required: pip install -r tests/verify/python_server/requirements.txt"
        );
        eprintln!("skipped: python with mcp and psycopg unavailable");
        return None;
    };
    match PgConnection::connect(&pg_url()).await {
        Ok(c) => Some((py.to_owned(), c)),
        Err(e) => {
            assert!(
                !required("HINTAUDIT_REQUIRE_PG"),
                "PostgreSQL required at {}: {e}",
                pg_url()
            );
            eprintln!("skipped: PostgreSQL unreachable at {}: {e}", pg_url());
            None
        }
    }
}

/// A schema of its own, seeded by the fixture (`--init-only`) with a sequence of `cache`.
fn seed(py: &str, schema: &str, cache: u32) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let schema = format!("{schema}_{}_{nanos}", std::process::id());
    let ok = Command::new(py)
        .arg(server_py())
        .args(["--db", &pg_url(), "--schema", &schema, "--init-only"])
        .args(["--cache", &cache.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "judgement_server.py --init-only");
    schema
}

/// The fixture in a fresh schema (its sequence of `cache`), verified with `cases`; the
/// admin connection and the schema to drop after. `None` when the test must skip.
async fn verified(prefix: &str, cache: u32, cases: &str) -> Option<(Report, PgConnection, String)> {
    let (py, admin) = parts().await?;
    let schema = seed(&py, prefix, cache);
    let report = verify(&py, &schema, cases).await;
    Some((report, admin, schema))
}

async fn verify(py: &str, schema: &str, cases: &str) -> Report {
    let cmd = shlex::try_join([
        py,
        server_py().to_str().expect("utf-8 path"),
        "--db",
        &pg_url(),
        "--schema",
        schema,
    ])
    .expect("no NUL bytes");
    Verifier::new(ServerSpec::Stdio(cmd), pg_url())
        .with_schema(schema)
        .with_suggest(true)
        .with_cases(Cases::parse(cases, false).expect("cases"))
        .run()
        .await
        .expect("verify runs")
}

async fn drop_schema(admin: &mut PgConnection, schema: &str) {
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP SCHEMA \"{schema}\" CASCADE"
    )))
    .execute(admin)
    .await
    .expect("drop schema");
}

fn tool<'r>(report: &'r Report, name: &str) -> &'r ToolReport {
    report
        .tool(name)
        .unwrap_or_else(|| panic!("{name}: {report:#?}"))
}

#[tokio::test]
async fn postgres_mcp_behaviours_without_a_cases_file() {
    let Some((report, mut admin, schema)) = verified("hv_judge", 1, "").await else {
        return;
    };

    // A read-only tool that takes nextval: a write to the sequence, confirmed.
    let next = tool(&report, "next_ticket");
    assert_eq!(next.status, ToolStatus::Failed, "{next:#?}");
    let f = &next.findings[0];
    assert_eq!(f.rule, Rule::ReadOnlyWrite);
    assert!(
        f.evidence.contains("tickets_seq advanced or set (snapshot"),
        "{}",
        f.evidence
    );
    let change = &next.cases[0].calls[0].changes[0];
    assert!(
        change.kind == ObjectKind::Sequence && change.moved,
        "{change:?}"
    );

    // A successful report whose first word is "Invalid" is a call that ran.
    let health = tool(&report, "health_report");
    assert_eq!(health.status, ToolStatus::Passed, "{health:#?}");
    assert_eq!(health.cases[0].calls[0].error, None);

    // The SQL parameter with a default ("all") gets the probe statement, and says so.
    let run = tool(&report, "run_sql");
    let probe = run
        .cases
        .iter()
        .find(|c| c.label.contains("+optional"))
        .unwrap_or_else(|| panic!("{run:#?}"));
    assert_eq!(probe.calls[0].error, None, "{run:#?}");
    assert_eq!(probe.made_up, ["sql"]);
    assert_eq!(probe.generated.len(), 1, "{:?}", probe.generated);
    assert_eq!(probe.generated[0].0, "sql");
    assert!(
        probe.generated[0].1.starts_with("a probe statement"),
        "{:?}",
        probe.generated
    );
    assert_eq!(run.status, ToolStatus::Passed, "{run:#?}");
    assert!(run.advice.is_empty(), "probes support no advice: {run:#?}");

    // A destructive-declared reader: advice to be read-only, and a suggestion the lint
    // accepts, which the JSON patch sets in full.
    let count = tool(&report, "count_items");
    assert_eq!(count.advice, [Advice::CouldBeReadOnly], "{count:#?}");
    let s = count.suggestion.as_ref().expect("a suggestion");
    assert_eq!(
        (s.corrected.read_only, s.corrected.destructive),
        (Some(true), Some(false)),
        "{}",
        s.rmcp_attribute()
    );
    assert!(
        lint_hints("count_items", s.corrected)
            .iter()
            .all(|f| f.rule != Rule::HintContradiction),
        "{}",
        s.rmcp_attribute()
    );
    let patch = s.json_patch();
    for hint in [
        "readOnlyHint",
        "destructiveHint",
        "idempotentHint",
        "openWorldHint",
    ] {
        assert!(
            patch
                .iter()
                .any(|op| op["path"].as_str().is_some_and(|p| p.ends_with(hint))),
            "{hint}: {patch:?}"
        );
    }
    drop_schema(&mut admin, &schema).await;
}

#[tokio::test]
async fn sequence_moves_and_counts_across_cases() {
    let cases = r#"
        [[case]]
        tool = "run_sql"
        name = "setval"
        arguments = { sql = "SELECT setval('tickets_seq', 100)" }

        [[case]]
        tool = "explain_query"
        name = "delete 1"
        arguments = { sql = "DELETE FROM items WHERE id = 1" }

        [[case]]
        tool = "explain_query"
        name = "delete 2"
        arguments = { sql = "DELETE FROM items WHERE id = 2" }
    "#;
    let Some((report, mut admin, schema)) = verified("hv_judge_cases", 1, cases).await else {
        return;
    };

    // setval moved the sequence: a write, so no advice that the tool is read-only.
    let run = tool(&report, "run_sql");
    let changes = &run.cases[0].calls[0].changes;
    assert!(
        changes
            .iter()
            .any(|d| d.kind == ObjectKind::Sequence && d.moved && d.table.ends_with("tickets_seq")),
        "{run:#?}"
    );
    assert!(
        !run.advice.contains(&Advice::CouldBeReadOnly),
        "{:?}",
        run.advice
    );

    // EXPLAIN ANALYZE of a DELETE, committed, in two cases: one finding counting both rows.
    let explain = tool(&report, "explain_query");
    let f: Vec<_> = explain
        .findings
        .iter()
        .filter(|f| f.rule == Rule::ReadOnlyWrite)
        .collect();
    assert_eq!(f.len(), 1, "{explain:#?}");
    assert!(
        f[0].evidence.starts_with("2 rows deleted from"),
        "{}",
        f[0].evidence
    );
    drop_schema(&mut admin, &schema).await;
}

#[tokio::test]
async fn a_sequence_verify_cannot_fully_see_withholds_read_only_advice() {
    let Some((report, mut admin, schema)) = verified("hv_judge_cache", 20, "").await else {
        return;
    };
    let count = tool(&report, "count_items");
    assert_eq!(count.status, ToolStatus::Passed, "{count:#?}");
    assert!(count.advice.is_empty(), "{:?}", count.advice);
    assert!(
        count
            .notes
            .iter()
            .any(|n| n.starts_with("no could_be_read_only advice") && n.contains("CACHE 20")),
        "{:?}",
        count.notes
    );
    assert!(count.suggestion.is_none(), "{:?}", count.suggestion);
    drop_schema(&mut admin, &schema).await;
}
