//! Case 7, privacy: canary values planted in tool arguments (valid, mistyped, and sent to an
//! unknown tool) and in SQL literals and comments; every export is searched for them: the
//! spans a real OTLP/gRPC receiver got, `/metrics` scraped over HTTP, and every log line of
//! the process: hintaudit's own events at every level, everything else at INFO and above, as
//! `init_tracing` configures them.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bookings::{Bookings, Db};
use hintaudit::core::{CallScope, Judge, LogRecorder};
use hintaudit::rmcp::HintAuditLayer;
use hintaudit_cli::demo::{connect, demo_policy, serve_http};
use hintaudit_telemetry::{
    OtelMakeSpan, OtelPipeline, OtlpProtocol, PrometheusRecorder, TracingConfig, metrics_router,
};
use hintaudit_test_support::otlp::{spans, start_receiver, text};
use hintaudit_test_support::scrape::http_get;
use rmcp::model::CallToolRequestParams;
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::support::figure;

/// The canaries: each must appear nowhere outside the process.
const ARG: [&str; 5] = [
    "CanaryArgName41",
    "canary-arg-mail42",
    "CanaryArgQuery43",
    "CanaryArgReason44",
    "CanaryArgBogus45",
];
const SQL: [&str; 4] = [
    "CanarySqlLit51",
    "CanarySqlComment52",
    "CanarySqlUnterminated53",
    "987654321054",
];

/// A `MakeWriter` into a shared buffer: the process's log lines.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;
    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}

fn call(tool: &str, args: serde_json::Value) -> CallToolRequestParams {
    let params = CallToolRequestParams::new(tool.to_owned());
    match args {
        serde_json::Value::Object(map) => params.with_arguments(map),
        _ => params,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_canary_reaches_spans_metrics_or_logs() {
    let (receiver, addr) = start_receiver().await;
    let config = TracingConfig::disabled()
        .with_endpoint(format!("http://{addr}"))
        .with_protocol(OtlpProtocol::Grpc)
        .with_scheduled_delay(Duration::from_millis(50))
        .with_default_service_name("hintaudit-reliability");
    let pipeline = OtelPipeline::new(&config).unwrap().expect("export is on");
    let logs = Logs::default();
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(logs.clone())
        .with_ansi(false)
        .with_filter(EnvFilter::new(
            "info,hintaudit=trace,hintaudit_core=trace,hintaudit_rmcp=trace,hintaudit_sqlx=trace,\
             hintaudit_telemetry=trace,hintaudit_cli=trace",
        ));
    // As `init_tracing` exports: INFO and above. (Below it, sqlx's and rmcp's own DEBUG
    // events carry statements and requests verbatim: outside hintaudit, see
    // docs/reliability.md.)
    let otel = pipeline
        .layer()
        .with_filter(tracing_subscriber::filter::LevelFilter::INFO);
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(otel).with(fmt))
        .expect("the only global subscriber of this binary");

    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("privacy.db").display()
    );
    let db = Db::connect(&url).await.expect("db");
    let metrics = PrometheusRecorder::new();
    let layer = HintAuditLayer::new()
        .with_judge(Arc::new(Judge::new(demo_policy())))
        .with_recorder((metrics.clone(), LogRecorder::default()))
        .with_make_span(OtelMakeSpan::new());
    let route = metrics_router(metrics.registry().clone());
    let server = serve_http(
        Bookings::new(db.clone()),
        layer,
        "127.0.0.1:0".parse().unwrap(),
        Some(route),
    )
    .await
    .expect("serve");
    server.audit.learn_tools(&Bookings::tools());
    let client = connect(&server.url).await.expect("client");
    let calls = [
        call(
            "add_patient",
            json!({"name": ARG[0], "email": format!("{}@example.org", ARG[1])}),
        ),
        call("search_patients", json!({"query": ARG[2]})),
        call(
            "create_appointment",
            json!({"patient_id": 1, "starts_at": "2027-03-01T09:00", "reason": ARG[3]}),
        ),
        call("get_appointment", json!({"id": ARG[4]})), // mistyped: the tool refuses it
        // An unknown tool: its arguments are not recorded. (Its name is, verbatim, in the
        // span's name and `gen_ai.tool.name`: a name, not an argument; see docs/reliability.md.)
        call("no_such_tool", json!({"secret": ARG[4]})),
        call("search_patients", json!({"query": ARG[2]})), // a repeat: the idempotency history
    ];
    let mut answered = 0;
    for c in calls {
        let _ = client.call_tool(c).await; // errors are answers too
        answered += 1;
    }
    client.cancel().await.ok();

    // SQL literals and comments, through the audited pool inside a call scope and span.
    let Db::Sqlite(pool) = &db else {
        unreachable!("a SQLite url")
    };
    sqlx::raw_sql("CREATE TABLE notes (body TEXT, n INTEGER)")
        .execute(pool.inner())
        .await
        .unwrap();
    let statements = [
        format!(
            "INSERT INTO notes (body, n) VALUES ('{}', {})",
            SQL[0], SQL[3]
        ),
        format!(
            "SELECT body FROM notes WHERE body = '{}' /* {} */",
            SQL[0], SQL[1]
        ),
        format!("UPDATE notes SET body = '{}' -- {}", SQL[0], SQL[1]),
        format!("INSERT INTO notes (body) VALUES ('{}", SQL[2]), // unterminated: fails
    ];
    let span = tracing::info_span!("tools/call write_note");
    let scope = CallScope::new("write_note");
    let effects = scope.effects_handle();
    let _ = tracing::Instrument::instrument(
        scope.run(async {
            for s in &statements {
                let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(s.clone()))
                    .execute(pool)
                    .await;
            }
        }),
        span,
    )
    .await;
    assert_eq!(
        effects.snapshot().statements.len(),
        statements.len(),
        "every statement audited"
    );

    let (_, _, scraped) = http_get(server.addr, "/metrics").await;
    server.shutdown().await;
    let pipeline = hintaudit_test_support::otlp::flushed(pipeline).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let exported = spans(&receiver);
    let mut span_text = String::new();
    for s in &exported {
        span_text.push_str(&s.name);
        for a in &s.attributes {
            span_text.push_str(&format!(
                " {}={}",
                a.key,
                text(&a.value).replace('\n', "\\n")
            ));
        }
        for e in &s.events {
            span_text.push_str(&format!(" event {}", e.name));
            for a in &e.attributes {
                span_text.push_str(&format!(
                    " {}={}",
                    a.key,
                    text(&a.value).replace('\n', "\\n")
                ));
            }
        }
        if let Some(st) = &s.status {
            span_text.push_str(&format!(" status={}", st.message));
        }
        span_text.push('\n');
    }
    let log_text = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    let mut leaked = Vec::new();
    for canary in ARG.iter().chain(SQL.iter()) {
        for (export, body) in [
            ("spans", &span_text),
            ("/metrics", &scraped),
            ("logs", &log_text),
        ] {
            for line in body.lines().filter(|l| l.contains(canary)) {
                leaked.push(format!("{canary} in {export}: {line}"));
            }
        }
    }
    figure(
        "privacy.exports",
        &[
            ("canaries", (ARG.len() + SQL.len()).to_string()),
            ("tool_calls", answered.to_string()),
            ("sql_statements", statements.len().to_string()),
            ("spans_searched", exported.len().to_string()),
            ("metrics_bytes", scraped.len().to_string()),
            ("log_lines", log_text.lines().count().to_string()),
            ("canaries_leaked", leaked.len().to_string()),
        ],
    );
    assert!(
        pipeline.export_stats().exported > 0 && !exported.is_empty(),
        "spans were exported"
    );
    assert!(
        exported.iter().any(|s| s.name.contains("write_note")),
        "the statement spans' call is there"
    );
    assert!(log_text.lines().count() > 0 && scraped.contains("hintaudit_tool_calls_total"));
    assert!(leaked.is_empty(), "canaries leaked:\n{}", leaked.join("\n"));
}
