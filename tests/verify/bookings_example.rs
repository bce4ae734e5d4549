//! The bookings example (rmcp, sqlx) over stdio and streamable HTTP, on SQLite and on
//! PostgreSQL, and with `--reset` on MariaDB: `hintaudit verify` reports its planted findings
//! and no others.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use std::time::Duration;

use hintaudit_verify::{Cases, Report, ServerSpec, ToolStatus, Verifier};
use sqlx::Connection;

use crate::support::*;

/// The bookings binary.
pub fn bookings_bin() -> PathBuf {
    workspace_bin("bookings", "bookings")
}

/// purge_cancelled only shows its planted finding when a cancelled appointment exists; the
/// case's setup SQL makes one (the same SQL on SQLite and PostgreSQL).
pub fn cases() -> Cases {
    Cases::parse(
        r#"
        [[case]]
        tool = "purge_cancelled"
        name = "one cancelled appointment"
        setup = "UPDATE appointments SET status = 'cancelled' WHERE id = (SELECT max(id) FROM appointments)"
        "#,
        false,
    )
    .expect("valid cases")
}

fn planted() -> BTreeSet<(String, String)> {
    bookings::PLANTED_CALL_FINDINGS
        .iter()
        .chain(bookings::PLANTED_LISTING_FINDINGS)
        .map(|(t, r)| (t.to_string(), r.to_string()))
        .collect()
}

fn check(report: &Report) {
    let found: BTreeSet<(String, String)> = report
        .findings()
        .map(|f| (f.tool.clone(), f.rule.as_str().to_owned()))
        .collect();
    assert_eq!(found, planted(), "{report:#?}");
    for t in &report.tools {
        assert!(
            !matches!(t.status, ToolStatus::NotExercised(_)),
            "{} not exercised: {:?}",
            t.name,
            t.status
        );
    }
    // The trigger's overwrite is what the snapshot sees for confirm_appointment.
    let confirm = report.tool("confirm_appointment").unwrap();
    let changed: u64 = confirm.cases[0].calls[0]
        .changes
        .iter()
        .filter(|d| d.table == "appointments")
        .map(|d| d.changed)
        .sum();
    assert_eq!(changed, 1, "{confirm:#?}");
}

fn verifier(server: ServerSpec, database: &str) -> Verifier {
    Verifier::new(server, database)
        .with_cases(cases())
        .with_ignored_table(bookings::BOOKKEEPING_TABLES[0])
        .with_timeout(Duration::from_secs(30))
}

async fn verify(server: ServerSpec, database: &str) -> Report {
    verifier(server, database).run().await.expect("verify runs")
}

/// On PostgreSQL, watched in its own schema only (the shared test database holds others).
async fn verify_in(server: ServerSpec, database: &str, schema: &str) -> Report {
    verifier(server, database)
        .with_schema(schema)
        .run()
        .await
        .expect("verify runs")
}

fn stdio(url: &str) -> ServerSpec {
    let bin = bookings_bin();
    ServerSpec::Stdio(
        shlex::try_join([bin.to_str().unwrap(), "--stdio", "--database-url", url]).unwrap(),
    )
}

fn http(url: &str) -> (Server, ServerSpec) {
    let port = free_port();
    let child = Command::new(bookings_bin())
        .args([
            "--http",
            &format!("127.0.0.1:{port}"),
            "--database-url",
            url,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("bookings starts");
    let server = Server(child);
    wait_for_port(port, Duration::from_secs(30));
    (
        server,
        ServerSpec::Url(format!("http://127.0.0.1:{port}/mcp")),
    )
}

#[tokio::test]
async fn bookings_over_stdio_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("clinic.db").display());
    check(&verify(stdio(&url), &url).await);
}

/// notify_patient declares openWorldHint false and POSTs reminders to the notification
/// service named by `BOOKINGS_NOTIFY_URL` (the demo points it at a loopback server configured
/// as outside). Under verify, reqwest honours the proxy variables: the POST reaches verify's
/// recording proxy, which records it and refuses it, so `notify.example` need not exist.
#[tokio::test]
async fn bookings_notify_patient_is_found_through_the_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("clinic.db").display());
    let bin = bookings_bin();
    let cmd = shlex::try_join([
        "BOOKINGS_NOTIFY_URL=http://notify.example/reminders",
        bin.to_str().unwrap(),
        "--stdio",
        "--database-url",
        &url,
    ])
    .unwrap();
    let report = verifier(ServerSpec::Stdio(cmd), &url)
        .with_tool("notify_patient")
        .run()
        .await
        .expect("verify runs");
    let found: BTreeSet<(String, String)> = report
        .findings()
        .map(|f| (f.tool.clone(), f.rule.as_str().to_owned()))
        .collect();
    let want: BTreeSet<(String, String)> = bookings::PLANTED_OPEN_WORLD_FINDINGS
        .iter()
        .map(|(t, r)| (t.to_string(), r.to_string()))
        .collect();
    assert_eq!(found, want, "{report:#?}");
    let f = report.findings().next().unwrap();
    assert!(
        f.evidence.starts_with("outbound POST to notify.example:80"),
        "{}",
        f.evidence
    );
    let call = &report.tool("notify_patient").unwrap().cases[0].calls[0];
    assert!(
        call.error.as_deref().is_some_and(|e| e.contains("502")),
        "the proxy refused it: {call:?}"
    );
    assert!(report.unattributed_outbound.is_empty(), "{report:#?}");
}

#[tokio::test]
async fn bookings_over_http_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("clinic.db").display());
    let (_server, spec) = http(&url);
    check(&verify(spec, &url).await);
}

/// A fresh PostgreSQL schema, reached through `search_path`, dropped at the end; `None` (with
/// the reason printed) when PostgreSQL is unreachable and not required.
async fn pg_schema() -> Option<(String, String)> {
    let base = std::env::var("HINTAUDIT_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let admin = sqlx::postgres::PgConnection::connect(&base).await;
    let require = hintaudit_test_support::required("HINTAUDIT_REQUIRE_PG");
    let mut admin = match admin {
        Ok(c) => c,
        Err(e) => {
            available("PostgreSQL", false, require, &e.to_string());
            return None;
        }
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let schema = format!("hv_bookings_{}_{nanos}", std::process::id());
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&mut admin)
        .await
        .unwrap();
    let sep = if base.contains('?') { '&' } else { '?' };
    Some((
        schema.clone(),
        format!("{base}{sep}options=-c%20search_path%3D{schema}"),
    ))
}

async fn drop_schema(schema: &str) {
    let base = std::env::var("HINTAUDIT_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    if let Ok(mut c) = sqlx::postgres::PgConnection::connect(&base).await {
        let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
            .execute(&mut c)
            .await;
    }
}

#[tokio::test]
async fn bookings_over_stdio_on_postgres() {
    let Some((schema, url)) = pg_schema().await else {
        return;
    };
    let report = verify_in(stdio(&url), &url, &schema).await;
    drop_schema(&schema).await;
    check(&report);
}

#[tokio::test]
async fn bookings_over_http_on_postgres() {
    let Some((schema, url)) = pg_schema().await else {
        return;
    };
    let (server, spec) = http(&url);
    let report = verify_in(spec, &url, &schema).await;
    drop(server);
    drop_schema(&schema).await;
    check(&report);
}

/// `--reset` twice on the bookings example: identical reports (timings aside), the database
/// `--database` names untouched, the copy named in the report. `--suggest` corrects every
/// planted lie.
#[tokio::test]
async fn bookings_reset_twice_gives_identical_reports_and_suggest_fixes_every_lie() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("clinic.db").display());
    let ok = Command::new(bookings_bin())
        .args(["--migrate", "--database-url", &url])
        .status()
        .expect("bookings runs")
        .success();
    assert!(ok, "bookings --migrate");
    let before = std::fs::read(dir.path().join("clinic.db")).unwrap();
    let run = || async {
        verifier(stdio(&url), &url)
            .with_reset(true)
            .with_suggest(true)
            .run()
            .await
            .expect("verify runs")
    };
    let first = run().await;
    check(&first);
    assert!(
        first.database_resets > 0,
        "tools that write are followed by a fresh copy"
    );
    let second = run().await;
    assert_eq!(
        crate::real_servers::comparable(&first),
        crate::real_servers::comparable(&second)
    );
    assert_eq!(
        first.database_copy.as_deref(),
        Some(
            format!(
                "sqlite:{}",
                dir.path().join("clinic.hintaudit-copy.db").display()
            )
            .as_str()
        )
    );
    assert_eq!(
        std::fs::read(dir.path().join("clinic.db")).unwrap(),
        before,
        "original untouched"
    );
    // Every planted call finding has a suggestion that undoes it.
    for (tool, rule) in bookings::PLANTED_CALL_FINDINGS {
        let t = first.tool(tool).unwrap();
        let s = t
            .suggestion
            .as_ref()
            .unwrap_or_else(|| panic!("{tool}: no suggestion"));
        let fixed = match *rule {
            "read_only_write" => s.corrected.read_only == Some(false),
            "undeclared_destructive" => s.corrected.destructive == Some(true),
            "idempotency_broken" => s.corrected.idempotent == Some(false),
            other => panic!("{other}"),
        };
        assert!(fixed, "{tool} {rule}: {s:?}");
        assert!(
            s.evidence.iter().any(|e| e.contains(rule)),
            "{tool}: {:?}",
            s.evidence
        );
        assert!(
            s.rmcp_attribute().starts_with("#[tool(annotations("),
            "{}",
            s.rmcp_attribute()
        );
    }
    let patch = hintaudit_verify::json_patch(&first);
    assert!(
        patch.as_array().unwrap().len() >= bookings::PLANTED_CALL_FINDINGS.len(),
        "{patch}"
    );
}

/// `--reset` on MariaDB named `MariaDB://…` (the kind parses any case and hands the drivers
/// `mysql://…`; the bookings server is told the same URL): the copy is a dump and restore of
/// the named database, put in the server command as given, the planted findings are found
/// on it, and the original is untouched.
#[tokio::test]
async fn bookings_reset_on_mariadb_named_in_any_case() {
    let server = std::env::var("HINTAUDIT_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".into());
    let mut admin = match sqlx::mysql::MySqlConnection::connect(&server).await {
        Ok(c) => c,
        Err(e) => {
            let require = hintaudit_test_support::required("HINTAUDIT_REQUIRE_MYSQL");
            available("MariaDB", false, require, &e.to_string());
            return;
        }
    };
    let name = format!("hv_kinds_test_{}", std::process::id());
    let script = format!("DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}");
    sqlx::raw_sql(sqlx::AssertSqlSafe(script))
        .execute(&mut admin)
        .await
        .unwrap();
    let authority = server.split_once("://").map_or("", |(_, a)| a);
    let url = format!("MariaDB://{authority}/{name}");
    let ok = Command::new(bookings_bin())
        .args(["--migrate", "--database-url", &url])
        .status()
        .expect("bookings runs")
        .success();
    assert!(ok, "bookings --migrate on {url}");
    let before = appointments(&mut admin, &name).await;
    let report = verifier(stdio(&url), &url)
        .with_reset(true)
        .run()
        .await
        .expect("verify runs");
    let after = appointments(&mut admin, &name).await;
    let cleanup = format!("DROP DATABASE {name}; DROP DATABASE IF EXISTS {name}_hintaudit_copy");
    sqlx::raw_sql(sqlx::AssertSqlSafe(cleanup))
        .execute(&mut admin)
        .await
        .unwrap();
    check(&report);
    assert!(report.database_resets > 0, "{report:#?}");
    let copy = format!("MariaDB://{authority}/{name}_hintaudit_copy");
    assert_eq!(report.database_copy.as_deref(), Some(copy.as_str()));
    assert_eq!(after, before, "original untouched");
}

/// The rows of `appointments` in MariaDB database `name`.
async fn appointments(admin: &mut sqlx::mysql::MySqlConnection, name: &str) -> i64 {
    let sql = format!("SELECT CAST(count(*) AS SIGNED) FROM {name}.appointments");
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_one(admin)
        .await
        .unwrap()
}
