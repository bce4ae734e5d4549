//! `hintaudit verify --config`: a bad hintaudit.toml is a usage error naming the file, line,
//! column and key, before any server is started.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

use clap::{FromArgMatches, Parser};
use hintaudit_verify::{VerifyArgs, VerifyError};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: VerifyArgs,
}

fn args(config: &std::path::Path) -> VerifyArgs {
    let matches = <Cli as clap::CommandFactory>::command().get_matches_from([
        "verify".as_ref(),
        "--url".as_ref(),
        "http://127.0.0.1:9/mcp".as_ref(),
        "--database".as_ref(),
        "sqlite::memory:".as_ref(),
        "--config".as_ref(),
        config.as_os_str(),
    ]);
    Cli::from_arg_matches(&matches).expect("flags").args
}

#[test]
fn a_bad_config_is_a_usage_error_with_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hintaudit.toml");
    std::fs::write(&path, "ignored_tables = [\"log\"]\nignored_colums = []\n").unwrap();
    match args(&path).verifier() {
        Err(VerifyError::Usage(m)) => {
            assert!(
                m.starts_with(&format!(
                    "{}:2:1: ignored_colums: unknown field",
                    path.display()
                )),
                "{m}"
            );
        }
        other => panic!("{other:?}"),
    }
    std::fs::write(&path, "ignored_tables = [\"log\"]\n").unwrap();
    assert!(args(&path).verifier().is_ok());
}
