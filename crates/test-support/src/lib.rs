//! What hintaudit's test suites share (`publish = false`): a real OTLP/gRPC receiver on
//! loopback ([`otlp`]), a `/metrics` scrape over a real socket and a text-format parser
//! ([`scrape`]), `promtool check metrics` ([`promtool`]), and a real rmcp client over an
//! in-memory stream ([`mcp`]), a `redis-server` of a test's own ([`redis`]), a PostgreSQL
//! ([`postgres`]) and a MariaDB ([`mariadb`]) server of a test's own, restartable, a fake
//! HTTPS API that keeps what it got ([`fake_api`]), log lines captured ([`logs`]), and the
//! workspace's binaries built for a test ([`workspace_bin`]).
//!
//! Use it from integration tests (`tests/`) and benches only: the unit tests inside a crate's
//! `src/` would see that crate's types twice.
//!
//! ```no_run
//! # async fn run() {
//! use hintaudit_test_support::otlp::{spans, start_receiver};
//! let (receiver, addr) = start_receiver().await;
//! // ... export to http://{addr} over OTLP/gRPC, flush ...
//! assert!(spans(&receiver).iter().all(|s| !s.name.is_empty()));
//! # let _ = addr; }
//! ```
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod fake_api;
pub mod git;
pub mod logs;
pub mod mariadb;
pub mod mcp;
/// The official npm MCP servers whose state is files.
pub mod npm;
pub mod otlp;
pub mod postgres;
pub mod promtool;
pub mod redis;
pub mod scrape;
mod server;

/// Whether a test that needs an external tool must not skip: `HINTAUDIT_REQUIRE_ALL` or
/// `tool_var` (say `HINTAUDIT_REQUIRE_PROMTOOL`) is `1` or `true`, as CI sets them.
pub fn required(tool_var: &str) -> bool {
    ["HINTAUDIT_REQUIRE_ALL", tool_var]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|x| x == "1" || x.eq_ignore_ascii_case("true")))
}

/// Drives `f` until it is done or has been polled `polls` times, whichever comes first;
/// whether it is done. Each poll after the first waits for `f`'s own wake-up, so the future
/// makes the progress it would under its runtime, and a test can drop it at every point it
/// can be dropped (`for polls in 1..` until done) without knowing, or asserting, how many
/// polls it needs.
pub async fn poll_at_most<F: std::future::Future + ?Sized>(
    f: std::pin::Pin<&mut F>,
    polls: usize,
) -> bool {
    let mut f = f;
    let mut n = 0;
    std::future::poll_fn(|cx| {
        n += 1;
        match f.as_mut().poll(cx) {
            std::task::Poll::Ready(_) => std::task::Poll::Ready(true),
            std::task::Poll::Pending if n >= polls => std::task::Poll::Ready(false),
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    })
    .await
}

/// A binary of the workspace, built next to this test binary: `cargo build -p <package>`
/// runs once per test process (a no-op when it is up to date), so a stale binary is never
/// tested. Panics when the build fails.
pub fn workspace_bin(package: &str, name: &str) -> std::path::PathBuf {
    static BUILT: parking_lot::Mutex<Vec<String>> = parking_lot::Mutex::new(Vec::new());
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe
        .ancestors()
        .nth(2)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf();
    let bin = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let mut built = BUILT.lock();
    if !built.iter().any(|p| p == package) {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = std::process::Command::new(cargo);
        cmd.args(["build", "-q", "-p", package]);
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("cargo runs");
        assert!(status.success(), "cargo build -p {package} failed");
        built.push(package.to_owned());
    }
    assert!(bin.exists(), "{} not built", bin.display());
    bin
}
