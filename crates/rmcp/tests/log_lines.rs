//! One log line per finding, at the level of its severity (issue 26: every finding was
//! logged twice, at WARN by the call's span event and at ERROR by `LogRecorder`). The
//! subscriber is the README's: `tracing_subscriber::fmt()` at its default level, the layer
//! with its default recorder and span maker.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

mod shop;

use std::io::Write;
use std::sync::{Arc, Mutex};

use hintaudit_rmcp::HintAuditLayer;

/// The log, as the fmt subscriber wrote it.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_critical_finding_is_one_error_line() {
    let log = Log::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);

    shop::call_get_item(HintAuditLayer::new()).await;

    let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("rule=\"read_only_write\""))
        .collect();
    assert_eq!(lines.len(), 1, "one line per finding:\n{text}");
    assert!(
        lines[0].contains("ERROR"),
        "critical is ERROR: {}",
        lines[0]
    );
    assert!(lines[0].contains("1 row updated in items"), "{}", lines[0]);
}
