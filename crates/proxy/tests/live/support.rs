//! What the proxy's tests share: the PostgreSQL and Python switches, a fresh database per
//! test, the `hintaudit` binary as a child process, MCP clients, `/metrics`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use hintaudit_telemetry::MetricName;
use hintaudit_test_support::mariadb::MariaDbServer;
use hintaudit_test_support::scrape::{Scraped, http_get};
use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use sqlx::{Connection, PgPool};

pub type Client = RunningService<RoleClient, ()>;

pub fn pg_url() -> String {
    std::env::var("HINTAUDIT_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// An admin pool on the PostgreSQL server, or a printed skip (a failure under
/// `HINTAUDIT_REQUIRE_PG`).
pub async fn pg_or_skip() -> Option<PgPool> {
    match PgPool::connect(&pg_url()).await {
        Ok(p) => Some(p),
        Err(e) if hintaudit_test_support::required("HINTAUDIT_REQUIRE_PG") => {
            panic!("PostgreSQL required (HINTAUDIT_REQUIRE_PG) but unreachable: {e}")
        }
        Err(e) => {
            eprintln!("skipped: PostgreSQL unreachable at {}: {e}", pg_url());
            None
        }
    }
}

/// `python3` when it has the MCP SDK and psycopg, or a printed skip (a failure under
/// `HINTAUDIT_REQUIRE_ALL`).
pub fn python_or_skip() -> Option<&'static str> {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import mcp.server.mcpserver, psycopg"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some("python3");
    }
    assert!(
        !hintaudit_test_support::required("HINTAUDIT_REQUIRE_PYTHON"),
        "python3 with mcp and psycopg required: pip install -r tests/verify/python_server/requirements.txt"
    );
    eprintln!(
        "skipped: python3 with mcp and psycopg unavailable \
         (pip install -r tests/verify/python_server/requirements.txt)"
    );
    None
}

/// PostgreSQL and Python, or `None` after a printed skip.
pub async fn parts() -> Option<(PgPool, &'static str)> {
    let pg = pg_or_skip().await?;
    let py = python_or_skip()?;
    Some((pg, py))
}

/// A new, empty database named `name` on the server; its URL.
pub async fn fresh_db(admin: &PgPool, name: &str) -> String {
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    )))
    .execute(admin)
    .await
    .expect("drop");
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(admin)
        .await
        .expect("create");
    let base = pg_url();
    let root = base.rsplit_once('/').map_or(base.as_str(), |(r, _)| r);
    format!("{root}/{name}")
}

/// Drops a test's database, once the proxy's temporary slot on it has gone with the proxy
/// (a database with an active slot cannot be dropped); tries for up to 2 s, then leaves it
/// to the next run's [`fresh_db`].
pub async fn drop_db(admin: &PgPool, name: &str) {
    for _ in 0..20 {
        let dropped = sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
        )))
        .execute(admin)
        .await;
        if dropped.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub fn sql_server() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/verify/python_server/sql_server.py")
        .canonicalize()
        .expect("tests/verify/python_server/sql_server.py")
}

/// The fixture's command line on `db`, with `env` before it.
pub fn fixture(py: &str, db: &str, env: &str) -> String {
    format!("{env} {py} {} --db {db}", sql_server().display())
        .trim()
        .to_owned()
}

pub fn hintaudit() -> PathBuf {
    hintaudit_test_support::workspace_bin("hintaudit-cli", "hintaudit")
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A child process killed when dropped.
pub struct Child(pub tokio::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.start_kill();
    }
}

/// Waits until `addr` accepts connections (at most 30 s).
pub async fn wait_port(addr: SocketAddr) {
    for _ in 0..300 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("nothing listens on {addr}");
}

/// Starts the fixture serving streamable HTTP; its `/mcp` URL.
pub async fn fixture_http(py: &str, db: &str, env: &[(&str, &str)]) -> (Child, String) {
    let port = free_port();
    let mut cmd = tokio::process::Command::new(py);
    cmd.arg(sql_server())
        .args(["--db", db, "--http", &port.to_string()])
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let child = Child(cmd.spawn().expect("python starts"));
    wait_port(SocketAddr::from(([127, 0, 0, 1], port))).await;
    (child, format!("http://127.0.0.1:{port}/mcp"))
}

/// `hintaudit proxy ARGS --http 127.0.0.1:PORT`: the child and the address.
pub async fn proxy_http(args: &[&str]) -> (Child, SocketAddr) {
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let mut cmd = tokio::process::Command::new(hintaudit());
    cmd.arg("proxy")
        .args(args)
        .args(["--http", &addr.to_string()])
        .stdout(Stdio::null())
        .kill_on_drop(true);
    let child = Child(cmd.spawn().expect("hintaudit starts"));
    wait_port(addr).await;
    (child, addr)
}

/// `hintaudit proxy ARGS --http 127.0.0.1:PORT` with `env`, its stderr (the log) in `log`.
pub async fn proxy_logged(args: &[&str], env: &[(&str, &str)], log: &Path) -> (Child, SocketAddr) {
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let file = std::fs::File::create(log).expect("log file");
    let mut cmd = tokio::process::Command::new(hintaudit());
    cmd.arg("proxy")
        .args(args)
        .args(["--http", &addr.to_string()])
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(file)
        .kill_on_drop(true);
    let child = Child(cmd.spawn().expect("hintaudit starts"));
    wait_port(addr).await;
    (child, addr)
}

/// Creates database `name` on a private MariaDB server: its URL.
pub async fn mariadb_database(server: &MariaDbServer, name: &str) -> String {
    let mut admin = sqlx::MySqlConnection::connect(&server.url(""))
        .await
        .expect("connect");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut admin)
        .await
        .expect("database");
    server.url(name)
}

/// Runs `f` (a blocking start, stop or restart of a private server) off the async workers.
pub fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

pub async fn http_client(url: &str) -> Client {
    ().serve(StreamableHttpClientTransport::from_uri(url))
        .await
        .expect("MCP handshake over HTTP")
}

/// An MCP client of a stdio server started as `program args`.
pub async fn stdio_client(program: &std::path::Path, args: &[&str]) -> Client {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args);
    let (proc, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn");
    ().serve(proc).await.expect("MCP handshake over stdio")
}

/// tools/call `tool` with `arguments`; the answer as JSON (a result or an error).
pub async fn call(client: &Client, tool: &str, arguments: JsonObject) -> serde_json::Value {
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    match client.call_tool(params).await {
        Ok(r) => serde_json::to_value(r).expect("json"),
        Err(e) => serde_json::json!({ "error": e.to_string() }),
    }
}

/// `/metrics` once no call is pending (`hintaudit_capture_pending_calls` at 0; at most
/// 30 s): calls are judged after their answers went back, once the capture has read past
/// them, so what a test reads then is final.
pub async fn metrics(addr: SocketAddr) -> Scraped {
    for _ in 0..300 {
        let s = scrape(addr).await;
        if pending(&s) == 0.0 {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    scrape(addr).await
}

/// `/metrics` as it is now.
pub async fn scrape(addr: SocketAddr) -> Scraped {
    let (status, _, body) = http_get(addr, "/metrics").await;
    assert!(status.contains("200"), "{status}");
    Scraped::parse(&body)
}

/// `hintaudit_capture_pending_calls`, summed (0 without a capture).
pub fn pending(s: &Scraped) -> f64 {
    s.samples(MetricName::CapturePendingCalls.as_str())
        .map(|x| s.number(x))
        .sum()
}

/// `hintaudit_audit_errors_total{stage="oracle"}`: the capture's failures.
pub fn audit_errors(s: &Scraped) -> f64 {
    s.value(MetricName::AuditErrors.as_str(), &[("stage", "oracle")])
        .unwrap_or(0.0)
}

/// `hintaudit_hint_violations_total{tool, rule}` summed over its other labels.
pub fn violations(s: &Scraped, tool: &str, rule: &str) -> f64 {
    s.samples(MetricName::HintViolations.as_str())
        .filter(|x| x.labels.get("tool") == Some(tool) && x.labels.get("rule") == Some(rule))
        .map(|x| s.number(x))
        .sum()
}

/// A JSON object's fields as a tool call's arguments.
pub fn args(v: serde_json::Value) -> JsonObject {
    v.as_object().cloned().unwrap_or_default()
}

/// `hintaudit_tool_row_changes_total{tool, table, operation}`.
pub fn rows(s: &Scraped, tool: &str, table: &str, operation: &str) -> f64 {
    s.value(
        MetricName::ToolRowChanges.as_str(),
        &[("tool", tool), ("table", table), ("operation", operation)],
    )
    .unwrap_or(0.0)
}

/// `hintaudit_capture_commits_total{attribution}`.
pub fn commits(s: &Scraped, attribution: &str) -> f64 {
    s.value(
        MetricName::CaptureCommits.as_str(),
        &[("attribution", attribution)],
    )
    .unwrap_or(0.0)
}

/// Polls `/metrics` until `done` holds (at most 20 s): for what happens outside any call.
pub async fn until(addr: SocketAddr, done: impl Fn(&Scraped) -> bool) -> Scraped {
    for _ in 0..200 {
        let s = metrics(addr).await;
        if done(&s) {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    metrics(addr).await
}
