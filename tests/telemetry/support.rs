//! This suite's own fixture: the demo server. The scrape, its parser, promtool and the OTLP
//! receiver come from hintaudit-test-support.

use hintaudit_cli::demo::{DemoArgs, DemoRun, run_once};

/// Runs the demo once on a fresh SQLite file; the server keeps running.
pub async fn demo() -> DemoRun {
    let args = DemoArgs {
        serve: false,
        addr: "127.0.0.1:0".parse().expect("an address"),
        database_url: None,
        config: None,
        mode: None,
    };
    run_once(&args).await.expect("the demo runs")
}
