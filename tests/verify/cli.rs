//! The `hintaudit verify` binary: exit codes, report files, one-line errors on stderr.

use std::process::{Command, Output};

use crate::bookings_example::bookings_bin;
use crate::support::*;

/// Runs `hintaudit verify` with these arguments.
pub fn hintaudit(args: &[&str]) -> Output {
    Command::new(workspace_bin("hintaudit-cli", "hintaudit"))
        .arg("verify")
        .args(args)
        .output()
        .expect("hintaudit runs")
}

fn stderr_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn bookings_findings_exit_1_and_a_junit_file() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("clinic.db").display());
    let server = shlex::try_join([
        bookings_bin().to_str().unwrap(),
        "--stdio",
        "--database-url",
        &url,
    ])
    .unwrap();
    // A pristine database that every run copies (--reset): a second run starts where the
    // first did, so add_patient's generated e-mail is not taken yet.
    let migrated = Command::new(bookings_bin())
        .args(["--migrate", "--database-url", &url])
        .status()
        .expect("bookings runs")
        .success();
    assert!(migrated);
    let cases = dir.path().join("cases.json");
    std::fs::write(
        &cases,
        r#"{"cases": [{"tool": "purge_cancelled",
            "setup": "UPDATE appointments SET status = 'cancelled' WHERE id = 4"}]}"#,
    )
    .unwrap();
    let report = dir.path().join("report.xml");
    let out = hintaudit(&[
        "--stdio",
        &server,
        "--database",
        &url,
        "--cases",
        cases.to_str().unwrap(),
        "--ignore-table",
        "audit_log",
        "--reset",
        "--format",
        "junit",
        "--output",
        report.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let xml = std::fs::read_to_string(&report).unwrap();
    assert_eq!(xml.matches("<failure").count(), 4, "{xml}");
    assert!(out.stdout.is_empty(), "the report went to --output");

    // Only honest tools, failing on warnings: exit 0; the table goes to stdout.
    let out = hintaudit(&[
        "--stdio",
        &server,
        "--database",
        &url,
        "--tool",
        "list_appointments",
        "--tool",
        "add_patient",
        "--reset",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("list_appointments") && table.contains("passed"),
        "{table}"
    );
    assert!(!table.contains("export_appointments"));
    // hint_missing is info: --fail-on info makes the same run fail.
    let out = hintaudit(&[
        "--stdio",
        &server,
        "--database",
        &url,
        "--tool",
        "export_appointments",
        "--fail-on",
        "info",
        "--format",
        "sarif",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let sarif: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(sarif["runs"][0]["results"].as_array().unwrap().len(), 4);
}

#[test]
fn failures_exit_2_with_one_line_and_no_report() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("clinic.db").display());
    let server = shlex::try_join([
        bookings_bin().to_str().unwrap(),
        "--stdio",
        "--database-url",
        &url,
    ])
    .unwrap();
    let report = dir.path().join("report.json");
    let report_arg = report.to_str().unwrap();
    let cases = [
        // A wrong database URL.
        vec![
            "--stdio",
            &server,
            "--database",
            "postgres://postgres@127.0.0.1:1/none",
        ],
        // A server that cannot start.
        vec!["--stdio", "/nonexistent/server", "--database", &url],
        // An unknown tool.
        vec!["--stdio", &server, "--database", &url, "--tool", "nope"],
        // Nothing listens there.
        vec![
            "--url",
            "http://127.0.0.1:1/mcp",
            "--database",
            &url,
            "--timeout",
            "5",
        ],
    ];
    for args in cases {
        let mut args = args.clone();
        args.extend(["--format", "json", "--output", report_arg]);
        let out = hintaudit(&args);
        let lines = stderr_lines(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {lines:?}");
        // The message is one line. (Other lines can only be log lines of the `hintaudit`
        // binary's tracing setup, e.g. rmcp's transport worker at ERROR level.)
        let ours: Vec<&String> = lines
            .iter()
            .filter(|l| l.starts_with("hintaudit verify: "))
            .collect();
        assert_eq!(ours.len(), 1, "{args:?}: {lines:?}");
        eprintln!("{}", ours[0]);
        assert!(!report.exists(), "{args:?}: no report after a failure");
        assert!(out.stdout.is_empty());
    }
    // Usage errors are clap's: exit 2.
    let out = hintaudit(&["--database", &url]);
    assert_eq!(out.status.code(), Some(2));
    // A timeout that is not a positive number of seconds a Duration holds: a usage error.
    for timeout in ["0", "-1", "nan", "inf", "1e30"] {
        let flag = format!("--timeout={timeout}");
        let out = hintaudit(&["--stdio", &server, "--database", &url, &flag]);
        let lines = stderr_lines(&out);
        assert_eq!(out.status.code(), Some(2), "--timeout {timeout}: {lines:?}");
        assert!(
            lines
                .iter()
                .any(|l| l.contains("--timeout must be a positive number")),
            "--timeout {timeout}: {lines:?}"
        );
    }
}
