//! Runs that cannot finish end with exit code 2, one line on stderr, and no report: a server
//! that exits mid-run, a tool that never answers, a wrong database URL.

use std::process::ExitCode;

use clap::Parser;
use hintaudit_verify::{ServerSpec, Verifier, VerifyArgs, VerifyError};

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
async fn server_exiting_mid_run_is_exit_2_without_report() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (db, url) = temp_db(dir.path(), "fixture.db");
    let cmd = python_cmd(&py, &db, &[("FIXTURE_EXIT_TOOL", "get_item")]);
    let err = Verifier::new(ServerSpec::Stdio(cmd.clone()), url.as_str())
        .run()
        .await
        .expect_err("the server exits");
    eprintln!("message: hintaudit verify: {err}");
    assert!(matches!(err, VerifyError::Server(_)), "{err}");
    assert!(err.to_string().contains("tools/call get_item"), "{err}");
    assert!(!err.to_string().contains('\n'));

    let out = dir.path().join("report.xml");
    let code = run(&[
        "--stdio",
        &cmd,
        "--database",
        &url,
        "--format",
        "junit",
        "--output",
        out.to_str().unwrap(),
    ])
    .await;
    assert_eq!(code, ExitCode::from(2));
    assert!(!out.exists(), "no report after a failed run");
}

#[tokio::test]
async fn tool_that_never_answers_is_exit_2_after_timeout() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (db, url) = temp_db(dir.path(), "fixture.db");
    let cmd = python_cmd(&py, &db, &[("FIXTURE_HANG_TOOL", "list_items")]);
    let started = std::time::Instant::now();
    let err = Verifier::new(ServerSpec::Stdio(cmd.clone()), url.as_str())
        .with_timeout(std::time::Duration::from_secs(3))
        .run()
        .await
        .expect_err("the tool hangs");
    eprintln!("message: hintaudit verify: {err}");
    assert!(err.to_string().contains("no answer within 3 s"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    let out = dir.path().join("report.json");
    let code = run(&[
        "--stdio",
        &cmd,
        "--database",
        &url,
        "--timeout",
        "2",
        "--format",
        "json",
        "--output",
        out.to_str().unwrap(),
    ])
    .await;
    assert_eq!(code, ExitCode::from(2));
    assert!(!out.exists());
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
async fn http_server_exiting_mid_run_is_a_server_error() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (db, url) = temp_db(dir.path(), "fixture.db");
    let port = free_port();
    let _server = Server(
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
    );
    wait_for_port(port, std::time::Duration::from_secs(30));
    let err = Verifier::new(
        ServerSpec::Url(format!("http://127.0.0.1:{port}/mcp")),
        url.as_str(),
    )
    .with_timeout(std::time::Duration::from_secs(10))
    .run()
    .await
    .expect_err("the server exits");
    eprintln!("message: hintaudit verify: {err}");
    assert!(matches!(err, VerifyError::Server(_)), "{err}");
    assert!(err.to_string().contains("tools/call get_item"), "{err}");
}
