//! The Dockerfile: rust:1.94-bookworm builds with one cargo line, which .ci/run runs word for
//! word, into a non-root debian:bookworm-slim image of `bookings` and `hintaudit`.

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::{Value, json};

use super::read;
use crate::support::repo;

/// The Dockerfile's instructions, one per element, continuation lines joined and comments
/// and parser directives left out.
pub(super) fn instructions() -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in read("Dockerfile").lines() {
        let line = line.trim();
        if line.starts_with('#') || (line.is_empty() && current.is_empty()) {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(part) => current.push_str(part),
            None => {
                current.push_str(line);
                out.push(
                    std::mem::take(&mut current)
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" "),
                );
            }
        }
    }
    out
}

/// The one cargo command the Dockerfile runs.
fn docker_cargo_command(instructions: &[String]) -> String {
    let commands: Vec<String> = instructions
        .iter()
        .filter(|i| i.starts_with("RUN "))
        .flat_map(|i| {
            i.split("&&")
                .flat_map(|c| c.split(';'))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter_map(|c| c.find("cargo ").map(|at| c[at..].trim().to_owned()))
        .collect();
    assert_eq!(
        commands.len(),
        1,
        "one cargo command in the Dockerfile: {commands:?}"
    );
    commands.into_iter().next().unwrap()
}

#[test]
fn dockerfile_builds_with_the_cargo_line_ci_runs() {
    let instructions = instructions();
    let froms: Vec<&String> = instructions
        .iter()
        .filter(|i| i.starts_with("FROM "))
        .collect();
    assert_eq!(
        froms.first().map(|s| s.as_str()),
        Some("FROM rust:1.94-bookworm AS build")
    );
    assert_eq!(
        froms.last().map(|s| s.as_str()),
        Some("FROM debian:bookworm-slim")
    );
    let last = |prefix: &str| {
        let found = instructions.iter().rev().find(|i| i.starts_with(prefix));
        found.unwrap_or_else(|| panic!("no {prefix}")).clone()
    };
    let user = last("USER ");
    assert!(
        !["USER root", "USER 0", "USER 0:0"].contains(&user.as_str()),
        "{user}"
    );
    assert_eq!(last("EXPOSE "), "EXPOSE 8080");
    assert_eq!(last("ENTRYPOINT "), r#"ENTRYPOINT ["bookings"]"#);

    let cargo = docker_cargo_command(&instructions);
    assert!(
        cargo.starts_with("cargo build --release --locked"),
        "{cargo}"
    );
    let ci = read(".ci/run");
    let in_ci = ci
        .lines()
        .any(|l| !l.trim_start().starts_with('#') && l.contains(&cargo));
    assert!(in_ci, ".ci/run does not run the Dockerfile's `{cargo}`");

    // The packages it builds make the binaries the image copies and runs.
    let packages: Vec<&str> = cargo
        .split_whitespace()
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[0] == "-p" || w[0] == "--package")
        .map(|w| w[1])
        .collect();
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ])
        .current_dir(repo())
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).unwrap();
    let bins: BTreeSet<&str> = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| packages.contains(&p["name"].as_str().unwrap()))
        .flat_map(|p| p["targets"].as_array().unwrap())
        .filter(|t| t["kind"] == json!(["bin"]))
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        bins,
        BTreeSet::from(["bookings", "hintaudit"]),
        "binaries of {packages:?}"
    );
    let copy = instructions
        .iter()
        .find(|i| i.starts_with("COPY --from=build"))
        .unwrap();
    for bin in bins {
        assert!(
            copy.contains(&format!("/{bin} ")),
            "{copy} does not copy {bin}"
        );
    }
}
