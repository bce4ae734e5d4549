//! The Dockerfile: rust:1.94-bookworm builds with one cargo line, which .ci/run runs word for
//! word, into a non-root debian:bookworm-slim image of `bookings` and `hintaudit` (the last
//! stage, the default target) and a non-root distroless image of `hintaudit` alone (target
//! `hintaudit`, the proxy sidecar's image).

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

/// The Dockerfile's stages: each `FROM` with the instructions up to the next one.
fn stages(instructions: &[String]) -> Vec<&[String]> {
    let starts: Vec<usize> = (0..instructions.len())
        .filter(|&i| instructions[i].starts_with("FROM "))
        .chain([instructions.len()])
        .collect();
    starts
        .windows(2)
        .map(|w| &instructions[w[0]..w[1]])
        .collect()
}

/// The last instruction of `stage` that starts with `prefix`.
fn last<'a>(stage: &'a [String], prefix: &str) -> &'a str {
    let found = stage.iter().rev().find(|i| i.starts_with(prefix));
    found.unwrap_or_else(|| panic!("no {prefix} in {stage:?}"))
}

/// A USER that is numeric and not root (Kubernetes' runAsNonRoot checks it without reading
/// /etc/passwd).
fn assert_numeric_non_root(user: &str) {
    let id = user.trim_start_matches("USER ");
    let uid = id.split(':').next().unwrap_or_default();
    assert!(
        uid.parse::<u32>().is_ok_and(|u| u != 0),
        "{user}: not a numeric non-root user"
    );
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
    let stages = stages(&instructions);
    assert_eq!(
        stages.first().map(|s| s[0].as_str()),
        Some("FROM rust:1.94-bookworm AS build")
    );
    // The default target, the last stage: the bookings image.
    let bookings = stages.last().expect("stages");
    assert_eq!(bookings[0], "FROM debian:bookworm-slim");
    assert_numeric_non_root(last(bookings, "USER "));
    assert_eq!(last(bookings, "EXPOSE "), "EXPOSE 8080");
    assert_eq!(last(bookings, "ENTRYPOINT "), r#"ENTRYPOINT ["bookings"]"#);

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
    let copy = last(bookings, "COPY --from=build");
    for bin in bins {
        assert!(
            copy.contains(&format!("/{bin} ")),
            "{copy} does not copy {bin}"
        );
    }
}

/// Target `hintaudit`: the build stage's hintaudit binary alone on distroless, as a numeric
/// non-root user, its entrypoint; the proxy sidecar's compose service builds it and its
/// Kubernetes container names the same image.
#[test]
fn the_hintaudit_target_holds_hintaudit_alone_for_the_proxy_sidecar() {
    let instructions = instructions();
    let stages = stages(&instructions);
    let stage = stages
        .iter()
        .find(|s| s[0].ends_with(" AS hintaudit"))
        .expect("a stage named hintaudit");
    assert!(
        stage[0].starts_with("FROM gcr.io/distroless/"),
        "{}: no shell, no package manager",
        stage[0]
    );
    let copies: Vec<&String> = stage.iter().filter(|i| i.starts_with("COPY ")).collect();
    assert_eq!(
        copies,
        ["COPY --from=build /out/hintaudit /usr/local/bin/hintaudit"],
        "the binary alone"
    );
    assert!(!stage.iter().any(|i| i.starts_with("RUN ")), "{stage:?}");
    assert_numeric_non_root(last(stage, "USER "));
    assert_eq!(
        last(stage, "ENTRYPOINT "),
        r#"ENTRYPOINT ["/usr/local/bin/hintaudit"]"#
    );

    let compose = super::yaml("deploy/proxy-sidecar/compose.yaml");
    let proxy = &compose["services"]["hintaudit-proxy"];
    assert_eq!(proxy["build"]["target"], "hintaudit");
    assert_eq!(proxy["build"]["context"], "..", "the repository root");
    assert!(proxy.get("entrypoint").is_none(), "the image's entrypoint");
    let image = proxy["image"].as_str().expect("image");
    let sidecar = read("deploy/proxy-sidecar/kubernetes/sidecar.yaml");
    assert!(
        sidecar.contains(&format!("image: {image}\n")),
        "the Kubernetes sidecar runs {image}"
    );
}
