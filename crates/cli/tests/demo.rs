//! `hintaudit demo`, run as a user runs it: the binary, its output and its exit code.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

use std::process::Command;

#[test]
fn demo_prints_the_planted_findings_and_exits_0() {
    assert_planted(&[]);
}

/// `hintaudit demo` on MariaDB (`HINTAUDIT_MYSQL_URL`, server root) reports the same planted
/// findings and the same summary as on SQLite, in a fresh database it drops afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_on_mysql_reports_the_same_planted_findings() {
    use sqlx::Executor;
    let base = std::env::var("HINTAUDIT_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".to_owned());
    let admin = match sqlx::MySqlPool::connect(&base).await {
        Ok(p) => p,
        Err(e) if hintaudit_test_support::required("HINTAUDIT_REQUIRE_MYSQL") => {
            panic!("MySQL required but unreachable at {base}: {e}")
        }
        Err(e) => {
            eprintln!("skipping: MySQL unreachable at {base}: {e}");
            return;
        }
    };
    let name = format!("demo_{}", std::process::id());
    admin
        .execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .await
        .expect("create database");
    let url = format!("{}/{name}", base.trim_end_matches('/'));
    let run = tokio::task::spawn_blocking(move || assert_planted(&["--database-url", &url])).await;
    let _ = admin
        .execute(sqlx::AssertSqlSafe(format!("DROP DATABASE {name}")))
        .await;
    run.expect("demo on MySQL");
}

/// Runs `hintaudit demo` with `args`, and checks its planted findings and summary line.
fn assert_planted(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_hintaudit"))
        .arg("demo")
        .args(args)
        .env_remove("DATABASE_URL")
        .output()
        .expect("run hintaudit demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    for (tool, rule) in bookings::PLANTED_CALL_FINDINGS
        .iter()
        .chain(bookings::PLANTED_OPEN_WORLD_FINDINGS)
        .chain(bookings::PLANTED_LISTING_FINDINGS)
    {
        let row = stdout
            .lines()
            .find(|l| l.contains(tool) && l.contains(rule))
            .unwrap_or_else(|| panic!("no row for {tool} {rule} in:\n{stdout}"));
        assert!(row.contains(tool), "{row}");
    }
    let summary = stdout.lines().last().expect("a summary line");
    assert_eq!(
        summary,
        "hintaudit: 11 tools, 17 calls judged: 3 critical, 2 warning, 1 info; 5 tools clean",
        "stdout:\n{stdout}"
    );
}

/// `hintaudit demo --mode enforce`: the planted tools whose violation enforce mode can stop
/// are refused (`enforced`) instead of violating: get_appointment's write by the database,
/// purge_cancelled's DELETE before it, notify_patient's request before it is sent. What
/// cannot be enforced is still found: create_appointment's broken idempotency, and
/// confirm_appointment's overwrite, which a trigger of an additive INSERT makes. Exit 0.
#[test]
fn demo_in_enforce_mode_shows_the_refusals_and_exits_0() {
    let out = Command::new(env!("CARGO_BIN_EXE_hintaudit"))
        .args(["demo", "--mode", "enforce"])
        .env_remove("DATABASE_URL")
        .env_remove("HINTAUDIT_CONFIG")
        .output()
        .expect("run hintaudit demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let row = |tool: &str, rule: &str| {
        stdout
            .lines()
            .any(|l| l.contains(&format!("│ {tool} ")) && l.contains(rule))
    };
    for (tool, evidence) in [
        ("get_appointment", "readOnlyHint enforced"),
        ("purge_cancelled", "destructiveHint enforced"),
        ("notify_patient", "openWorldHint enforced"),
    ] {
        assert!(
            row(tool, "enforced"),
            "no enforced row for {tool}:\n{stdout}"
        );
        assert!(stdout.contains(evidence), "{evidence}:\n{stdout}");
    }
    // The hint was still false: its own rule is recorded beside `enforced`, from the
    // refusal, never from a write (nothing was written).
    for (tool, rule) in [
        ("get_appointment", "read_only_write"),
        ("purge_cancelled", "undeclared_destructive"),
        ("notify_patient", "undeclared_open_world"),
    ] {
        assert!(row(tool, rule), "no {rule} row for {tool}:\n{stdout}");
    }
    for evidence in [
        "UPDATE appointments tried, refused by",
        "DELETE appointments tried, refused by",
    ] {
        assert!(stdout.contains(evidence), "{evidence}:\n{stdout}");
    }
    assert!(row("create_appointment", "idempotency_broken"), "{stdout}");
    assert!(
        row("confirm_appointment", "undeclared_destructive"),
        "{stdout}"
    );
    assert!(
        stdout.contains(r#"hintaudit_hint_violations_total{hint="readOnlyHint",rule="enforced",severity="warning",tool="get_appointment"} 1"#),
        "{stdout}"
    );
    assert_eq!(
        stdout.lines().last(),
        Some("hintaudit: 11 tools, 17 calls judged: 3 critical, 5 warning, 1 info; 5 tools clean"),
        "stdout:\n{stdout}"
    );
}

#[test]
fn demo_rejects_a_bad_database_url_with_exit_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_hintaudit"))
        .args(["demo", "--database-url", "oracle://nowhere"])
        .output()
        .expect("run hintaudit demo");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unsupported database URL"), "{stderr}");
    assert!(out.stdout.is_empty(), "no report on failure");
}

#[test]
fn demo_names_the_address_it_cannot_listen_on() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_hintaudit"))
        .args(["demo", "--serve", "--addr", &addr])
        .env_remove("DATABASE_URL")
        .output()
        .expect("run hintaudit demo");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("cannot listen on {addr}")),
        "{stderr}"
    );
}

#[test]
fn demo_warns_of_an_otlp_protocol_it_does_not_support() {
    let out = Command::new(env!("CARGO_BIN_EXE_hintaudit"))
        .arg("demo")
        .env_remove("DATABASE_URL")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .output()
        .expect("run hintaudit demo");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("OTLP protocol \"http/json\" not supported; using http/protobuf"),
        "{stderr}"
    );
}

/// A bad hintaudit.toml stops the demo before it starts: exit 2, the file, line, column and
/// key on stderr, no report.
#[test]
fn demo_refuses_a_bad_config_with_its_position() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("hintaudit.toml");
    std::fs::write(&path, "[closed_world]\nhosts = [\"10.0.0.0/40\"]\n").expect("write");
    for via_env in [false, true] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hintaudit"));
        cmd.arg("demo").env_remove("DATABASE_URL");
        if via_env {
            cmd.env("HINTAUDIT_CONFIG", &path);
        } else {
            cmd.arg("--config")
                .arg(&path)
                .env_remove("HINTAUDIT_CONFIG");
        }
        let out = cmd.output().expect("run hintaudit demo");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        let at = format!("{}:2:10: closed_world.hosts:", path.display());
        assert!(stderr.contains(&at), "{stderr}");
        assert!(out.stdout.is_empty(), "no report on a bad config");
    }
}

/// A good config takes effect: with `appointments` ignored as bookkeeping, get_appointment's
/// planted write is no finding; an override for a tool the server does not list is a
/// warning, and the demo runs.
#[test]
fn demo_reads_its_config() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("hintaudit.toml");
    std::fs::write(
        &path,
        "ignored_tables = [\"appointments\"]\n[tools.no_such_tool]\nmode = \"observe\"\n",
    )
    .expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_hintaudit"))
        .args(["demo", "--config"])
        .arg(&path)
        .env_remove("DATABASE_URL")
        .output()
        .expect("run hintaudit demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("\"no_such_tool\", which the server does not list"),
        "{stderr}"
    );
    assert!(
        !stdout
            .lines()
            .any(|l| l.contains("get_appointment") && l.contains("read_only_write")),
        "{stdout}"
    );
    assert!(stdout.contains("undeclared_open_world"), "{stdout}");
}
