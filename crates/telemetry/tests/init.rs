//! `init_tracing` installs the process-wide subscriber once; a second call says so.
//!
//! One test per binary: the tracing subscriber is process-global.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

use hintaudit_telemetry::{OtlpProtocol, TracingConfig, TracingError, init_tracing};

#[test]
fn init_tracing_installs_once_and_reports_what_it_cannot_do() {
    // gRPC needs a Tokio runtime to build its channel: outside one, a clear error and
    // nothing installed.
    let grpc = TracingConfig::disabled()
        .with_endpoint("http://127.0.0.1:4317")
        .with_protocol(OtlpProtocol::Grpc);
    assert!(matches!(init_tracing(grpc), Err(TracingError::NoRuntime)));

    let guard = init_tracing(TracingConfig::disabled().with_log_filter("warn")).unwrap();
    assert!(!guard.is_exporting());
    assert_eq!(guard.export_stats().exported, 0);
    tracing::info!("filtered out by the log filter; no exporter to reach");

    let again = init_tracing(TracingConfig::disabled());
    assert!(
        matches!(again, Err(TracingError::Subscriber(_))),
        "{again:?}"
    );
}
