//! `hintaudit demo`, run as a user runs it: the binary, its output and its exit code.

use std::process::Command;

#[test]
fn demo_prints_the_planted_findings_and_exits_0() {
    let out = Command::new(env!("CARGO_BIN_EXE_hintaudit"))
        .arg("demo")
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

#[test]
fn demo_rejects_a_bad_database_url_with_exit_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_hintaudit"))
        .args(["demo", "--database-url", "mysql://nowhere"])
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
