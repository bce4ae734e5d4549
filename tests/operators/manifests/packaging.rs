//! The packages and the CI action, as files (what they do when built and run is proven by
//! .ci/packages from CI's release build): the wheel and the npm packages carry the
//! workspace's version and the cli crate's binary; action.yml's inputs are `hintaudit
//! verify`'s flags, each passed on by its step script; action.yml and the release workflow
//! validate against their schemas (from PyPI's `check-jsonschema`, which ships them).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use clap::Args;
use serde_json::Value;

use super::{read, yaml};
use crate::support::available;

/// The workspace's version: the root package's, which takes it from `[workspace.package]`.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Inputs of the action's own, not flags of `hintaudit verify`.
const ACTION_INPUTS: [&str; 6] = [
    "sarif-file",
    "upload",
    "category",
    "version",
    "checksums",
    "download-url",
];

/// Flags the action sets itself: the report is SARIF, written to `sarif-file`.
const FIXED_FLAGS: [&str; 2] = ["format", "output"];

#[test]
fn the_wheel_and_the_npm_packages_carry_the_workspace_version_and_the_cli_binary() {
    let pyproject = read("pyproject.toml");
    for line in [
        "build-backend = \"maturin\"",
        "bindings = \"bin\"",
        "manifest-path = \"crates/cli/Cargo.toml\"",
        "dynamic = [\"version\"]",
        "name = \"hintaudit\"",
    ] {
        assert!(
            pyproject.lines().any(|l| l.trim() == line),
            "pyproject.toml: no `{line}`"
        );
    }
    let cli = read("crates/cli/Cargo.toml");
    assert!(cli.contains("[[bin]]\nname = \"hintaudit\""), "{cli}");

    let launcher: Value =
        serde_json::from_str(&read("npm/hintaudit/package.json")).expect("package.json");
    assert_eq!(launcher["name"], "hintaudit");
    assert_eq!(launcher["version"], VERSION, "npm launcher");
    assert_eq!(launcher["bin"]["hintaudit"], "bin/hintaudit.js");
    assert!(launcher.get("scripts").is_none(), "no install scripts");
    let optional = launcher["optionalDependencies"]
        .as_object()
        .expect("optionalDependencies");
    assert!(!optional.is_empty());
    for (name, pinned) in optional {
        assert!(name.starts_with("@hintaudit/cli-"), "{name}");
        assert_eq!(pinned, VERSION, "{name}: pinned to the launcher's version");
    }
}

/// `hintaudit verify`'s long flags, from its clap definition.
fn verify_flags() -> BTreeSet<String> {
    let command = hintaudit_verify::VerifyArgs::augment_args(clap::Command::new("verify"));
    command
        .get_arguments()
        .filter_map(|a| a.get_long())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_action_inputs_are_the_flags_of_hintaudit_verify() {
    let action = yaml("action.yml");
    let inputs: BTreeSet<String> = action["inputs"]
        .as_object()
        .expect("inputs")
        .keys()
        .filter(|k| !ACTION_INPUTS.contains(&k.as_str()))
        .cloned()
        .collect();
    let flags: BTreeSet<String> = verify_flags()
        .into_iter()
        .filter(|f| !FIXED_FLAGS.contains(&f.as_str()))
        .collect();
    assert_eq!(inputs, flags, "action.yml inputs against verify's flags");

    // Each reaches the verify step as INPUT_NAME and verify.sh passes it as --name.
    let steps = action["runs"]["steps"].as_array().expect("steps");
    let verify = steps
        .iter()
        .find(|s| s["id"] == "verify")
        .expect("a step with id verify");
    let script = read(".github/action/verify.sh");
    for input in &inputs {
        let var = format!("INPUT_{}", input.to_uppercase().replace('-', "_"));
        assert_eq!(
            verify["env"][&var],
            format!("${{{{ inputs.{input} }}}}"),
            "{var}"
        );
        let passed = script
            .lines()
            .any(|l| l.contains(&format!("--{input} ")) && l.contains(&format!("\"${var}\"")));
        assert!(passed, "verify.sh does not pass {var} as --{input}");
    }
    for flag in FIXED_FLAGS {
        assert!(
            script.contains(&format!("--{flag} ")),
            "verify.sh sets --{flag}"
        );
    }
}

/// A schema check-jsonschema ships (vendor/NAME), when it is installed.
fn vendored_schema(name: &str) -> Option<Value> {
    let find = format!(
        "import importlib.resources as r; \
         print(r.files('check_jsonschema.builtin_schemas.vendor').joinpath('{name}'))"
    );
    let out = Command::new("python3").args(["-c", &find]).output();
    let path = out
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .filter(|p| p.is_file());
    let reason = format!("python3 -m pip install check-jsonschema (it ships {name})");
    if !available(name, path.is_some(), &reason) {
        return None;
    }
    let text = std::fs::read_to_string(path.unwrap()).expect("the schema");
    Some(serde_json::from_str(&text).expect("JSON"))
}

fn assert_valid(file: &str, schema: &str) {
    let Some(schema) = vendored_schema(schema) else {
        return;
    };
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let doc = yaml(file);
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{file}: {errors:#?}");
}

#[test]
fn the_action_and_the_release_workflow_validate_against_their_schemas() {
    assert_valid("action.yml", "github-actions.json");
    assert_valid(".github/workflows/release.yml", "github-workflows.json");
    let action = yaml("action.yml");
    assert_eq!(action["runs"]["using"], "composite");
}
