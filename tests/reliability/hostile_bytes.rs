//! Case 5, invalid UTF-8 in tool names: raw bytes that are not UTF-8 (a lone `0xFF`, an
//! overlong `0xC0 0xAF`, a truncated sequence, a UTF-16 surrogate encoded in UTF-8) and a
//! JSON escape of a lone surrogate (`\ud800`) inside `params.name` of a tools/call, written
//! as bytes onto the stream transport (rmcp's newline-delimited JSON, as over stdio) of the
//! bookings server, bare and behind the layer. After each, a tools/list probes that the
//! session still answers. Both transcripts must be the same, and neither server panics.
//! (rmcp's transport drops a line it cannot decode, unanswered, on both: the hostile calls
//! never reach a handler, audited or not.)

use std::time::Duration;

use bookings::{Bookings, Db};
use hintaudit::rmcp::HintAuditLayer;
use hintaudit_telemetry::PrometheusRecorder;
use rmcp::{ServerHandler, ServiceExt};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tower::Layer;

use crate::support::figure;

/// The names sent: not UTF-8, or not Unicode.
const BAD_NAMES: [&[u8]; 6] = [
    b"\xff",
    b"list_\xffappointments",
    b"\xc0\xaf",
    b"list_appointments\xe2\x82",
    b"\xed\xa0\x80",
    b"\\ud800",
];

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bytes","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// Serves `server` on a duplex stream, sends the hostile lines, and returns every line it
/// answered, in order, and whether the server's task ended without a panic.
async fn transcript<S: ServerHandler>(server: S) -> (Vec<String>, bool) {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let task = tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let (read, mut write) = tokio::io::split(client_io);
    let mut lines = BufReader::new(read).lines();
    let mut got = Vec::new();
    send(&mut write, INITIALIZE.as_bytes()).await;
    read_until(&mut lines, "\"id\":0", &mut got).await;
    send(&mut write, INITIALIZED.as_bytes()).await;
    for (i, name) in BAD_NAMES.iter().enumerate() {
        let id = 1 + 2 * i;
        let mut line =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":""#)
                .into_bytes();
        line.extend_from_slice(name);
        line.extend_from_slice(br#"","arguments":{}}}"#);
        send(&mut write, &line).await;
        let probe = format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/list"}}"#,
            id + 1
        );
        send(&mut write, probe.as_bytes()).await;
        read_until(&mut lines, &format!("\"id\":{}", id + 1), &mut got).await;
    }
    drop(write);
    drop(lines);
    let ended = tokio::time::timeout(Duration::from_secs(10), task).await;
    let no_panic = !matches!(&ended, Ok(Err(e)) if e.is_panic());
    (got, no_panic)
}

async fn send(write: &mut tokio::io::WriteHalf<DuplexStream>, line: &[u8]) {
    let _ = write.write_all(line).await;
    let _ = write.write_all(b"\n").await;
    let _ = write.flush().await;
}

/// Reads answer lines into `got` until one holds `id` (the probe's answer), the stream ends,
/// or 5 s pass (then `timeout` is recorded).
async fn read_until(
    lines: &mut tokio::io::Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    id: &str,
    got: &mut Vec<String>,
) {
    loop {
        match tokio::time::timeout(Duration::from_secs(5), lines.next_line()).await {
            Ok(Ok(Some(line))) => {
                let done = line.contains(id);
                got.push(line);
                if done {
                    return;
                }
            }
            Ok(Ok(None)) => return got.push("eof".to_owned()),
            Ok(Err(e)) => return got.push(format!("read error: {e}")),
            Err(_) => return got.push("timeout".to_owned()),
        }
    }
}

async fn database(dir: &tempfile::TempDir, name: &str) -> Db {
    let url = format!("sqlite://{}?mode=rwc", dir.path().join(name).display());
    Db::connect(&url).await.expect("db")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_in_tool_names_is_answered_as_by_the_bare_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (bare, bare_ok) = transcript(Bookings::new(database(&dir, "bare.db").await)).await;
    let audit = HintAuditLayer::new()
        .with_recorder(PrometheusRecorder::new())
        .layer(Bookings::new(database(&dir, "audited.db").await));
    audit.learn_tools(&Bookings::tools());
    let (audited, audited_ok) = transcript(audit).await;
    let changed = bare.iter().zip(&audited).filter(|(a, b)| a != b).count()
        + bare.len().abs_diff(audited.len());
    let probes = bare
        .iter()
        .filter(|l| l.contains(r#""result":{"tools""#))
        .count();
    // The hostile calls have odd ids; rmcp's stream transport drops a line it cannot
    // decode, so neither server is expected to answer them.
    let bad_answered = bare
        .iter()
        .filter(|l| (0..BAD_NAMES.len()).any(|i| l.contains(&format!("\"id\":{},", 1 + 2 * i))))
        .count();
    figure(
        "hostile.invalid_utf8",
        &[
            ("names", BAD_NAMES.len().to_string()),
            ("answer_lines", bare.len().to_string()),
            ("probes_answered", probes.to_string()),
            ("hostile_calls_answered", bad_answered.to_string()),
            ("lines_changed", changed.to_string()),
            ("panics", usize::from(!bare_ok || !audited_ok).to_string()),
        ],
    );
    for line in &bare {
        println!("bare: {:.160}", line);
    }
    assert!(bare_ok && audited_ok, "a server panicked");
    assert_eq!(bare, audited, "the audited server answered otherwise");
    assert_eq!(probes, BAD_NAMES.len(), "a probe went unanswered");
}
