//! Failures: a wrong database URL or a server that does not start end with exit code 2, one
//! line on stderr and no report; a call that times out or loses the server is recorded on
//! its tool and the run goes on; a run that cannot go on still writes its report (exit 2).

use std::process::ExitCode;

use clap::Parser;
use hintaudit_verify::{ServerSpec, ToolStatus, Verifier, VerifyArgs, VerifyError};

use crate::support::*;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    verify: VerifyArgs,
}

async fn run(args: &[&str]) -> ExitCode {
    let mut argv = vec!["hintaudit"];
    argv.extend_from_slice(args);
    hintaudit_verify::run(Cli::parse_from(argv).verify).await
}

#[tokio::test]
async fn a_server_exiting_mid_call_is_recorded_on_its_tool_and_the_run_goes_on() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (db, url) = temp_db(dir.path(), "fixture.db");
    let cmd = python_cmd(&py, &db, &[("FIXTURE_EXIT_TOOL", "get_item")]);
    let report = Verifier::new(ServerSpec::Stdio(cmd.clone()), url.as_str())
        .with_ignored_table("access_log")
        .run()
        .await
        .expect("the run goes on after a restart");
    assert!(report.incomplete.is_none(), "{:?}", report.incomplete);
    let get = report.tool("get_item").unwrap();
    match &get.status {
        ToolStatus::NotExercised(why) => assert!(why.contains("closed the connection"), "{why}"),
        other => panic!("get_item: {other:?}"),
    }
    assert!(
        get.notes[0].contains("the server was restarted"),
        "{get:#?}"
    );
    // Tools after it still ran on the restarted server and found their lies.
    assert_eq!(report.tool("view_item").unwrap().status, ToolStatus::Failed);
    assert_eq!(
        report.tool("archive_item").unwrap().status,
        ToolStatus::Failed
    );

    let out = dir.path().join("report.xml");
    let code = run(&[
        "--stdio",
        &cmd,
        "--database",
        &url,
        "--ignore-table",
        "access_log",
        "--format",
        "junit",
        "--output",
        out.to_str().unwrap(),
    ])
    .await;
    assert_eq!(code, ExitCode::from(1), "findings");
    assert!(std::fs::read_to_string(&out).unwrap().contains("<skipped"));
}

#[tokio::test]
async fn a_call_past_the_timeout_is_recorded_and_the_report_keeps_every_finding() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (db, url) = temp_db(dir.path(), "fixture.db");
    // get_item runs before item_count, whose listing changes must reach the restarted server.
    let cmd = python_cmd(&py, &db, &[("FIXTURE_HANG_TOOL", "get_item")]);
    let started = std::time::Instant::now();
    let report = Verifier::new(ServerSpec::Stdio(cmd.clone()), url.as_str())
        .with_ignored_table("access_log")
        .with_timeout(std::time::Duration::from_secs(3))
        .run()
        .await
        .expect("the run goes on");
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    match &report.tool("get_item").unwrap().status {
        ToolStatus::NotExercised(why) => assert!(why.contains("no answer within 3 s"), "{why}"),
        other => panic!("get_item: {other:?}"),
    }
    // The critical findings of every other tool are all there.
    assert_eq!(findings(&report), crate::python::planted());
    let out = dir.path().join("report.json");
    let code = run(&[
        "--stdio",
        &cmd,
        "--database",
        &url,
        "--ignore-table",
        "access_log",
        "--timeout",
        "2",
        "--format",
        "json",
        "--output",
        out.to_str().unwrap(),
    ])
    .await;
    assert_eq!(code, ExitCode::from(1));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(json["summary"]["failed"].as_u64().unwrap() >= 5, "{json}");
}

#[tokio::test]
async fn wrong_database_url_is_exit_2() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = temp_db(dir.path(), "fixture.db");
    let cmd = python_cmd(&py, &db, &[]);
    for url in [
        "sqlite:///nonexistent/dir/nothing.db".to_owned(),
        "postgres://postgres@127.0.0.1:1/nothing".to_owned(),
        "nosuchdb://x".to_owned(),
    ] {
        let err = Verifier::new(ServerSpec::Stdio(cmd.clone()), url.as_str())
            .run()
            .await
            .expect_err("bad database");
        eprintln!("message: hintaudit verify: {err}");
        assert!(matches!(err, VerifyError::Database(_)), "{url}: {err}");
        let code = run(&["--stdio", &cmd, "--database", &url]).await;
        assert_eq!(code, ExitCode::from(2), "{url}");
    }
}

#[tokio::test]
async fn a_server_that_does_not_start_is_exit_2() {
    let code = run(&[
        "--stdio",
        "/nonexistent/hintaudit-no-such-server --flag",
        "--database",
        "sqlite://x.db",
    ])
    .await;
    assert_eq!(code, ExitCode::from(2));
}

#[tokio::test]
async fn an_http_server_that_exits_mid_run_still_gets_a_report_and_exit_2() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (db, url) = temp_db(dir.path(), "fixture.db");
    let port = free_port();
    let spawn = || {
        Server(
            std::process::Command::new(&py)
                .arg(python_server())
                .arg("--db")
                .arg(&db)
                .arg("--http")
                .arg(port.to_string())
                .env("FIXTURE_EXIT_TOOL", "get_item")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("python starts"),
        )
    };
    let server = spawn();
    wait_for_port(port, std::time::Duration::from_secs(30));
    let endpoint = format!("http://127.0.0.1:{port}/mcp");
    let report = Verifier::new(ServerSpec::Url(endpoint.clone()), url.as_str())
        .with_ignored_table("access_log")
        .with_timeout(std::time::Duration::from_secs(10))
        .run()
        .await
        .expect("a report");
    drop(server);
    let why = report.incomplete.as_deref().expect("ended early");
    eprintln!("incomplete: {why}");
    assert!(why.contains("tools/call get_item"), "{why}");
    assert!(
        report.tool("get_item").is_some(),
        "the tool that lost the server is reported"
    );

    let _server = spawn();
    wait_for_port(port, std::time::Duration::from_secs(30));
    let out = dir.path().join("report.sarif");
    let code = run(&[
        "--url",
        &endpoint,
        "--database",
        &url,
        "--ignore-table",
        "access_log",
        "--format",
        "sarif",
        "--output",
        out.to_str().unwrap(),
    ])
    .await;
    assert_eq!(code, ExitCode::from(2));
    let sarif = std::fs::read_to_string(&out).expect("the report is written");
    assert!(sarif.contains("incomplete"), "{sarif}");
}
