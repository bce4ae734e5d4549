//! The form of the exposition: `promtool check metrics` accepts it, and the planted workload
//! renders byte for byte as the golden file.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

mod support;

use hintaudit_telemetry::{MetricName, encode_text};
use hintaudit_test_support::promtool;
use support::planted;

const AUDIT_ERRORS: &str = MetricName::AuditErrors.as_str();
const UNATTRIBUTED: &str = MetricName::UnattributedStatements.as_str();

/// `promtool check metrics` lints the exposition (naming, help, types). Prometheus's Debian
/// package ships promtool; CI installs it and sets HINTAUDIT_REQUIRE_PROMTOOL=1.
#[test]
fn promtool_accepts_the_exposition() {
    let text = encode_text(planted().registry());
    promtool::assert_accepts("promtool_accepts_the_exposition", &text);
}

/// The exposition of the planted workload, byte for byte, against
/// `tests/golden/planted.prom`. `HINTAUDIT_UPDATE_GOLDEN=1` rewrites the file; nothing else
/// does. The process-wide counters are left out: they count what the whole process did.
#[test]
fn exposition_matches_the_golden_file() {
    let global = [AUDIT_ERRORS, UNATTRIBUTED];
    let text: String = encode_text(planted().registry())
        .lines()
        .filter(|l| !global.iter().any(|g| l.contains(g)))
        .map(|l| format!("{l}\n"))
        .collect();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/planted.prom");
    if std::env::var("HINTAUDIT_UPDATE_GOLDEN").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
        println!("wrote {}", path.display());
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (HINTAUDIT_UPDATE_GOLDEN=1 writes it)",
            path.display()
        )
    });
    assert!(
        text == want,
        "the exposition differs from {} (HINTAUDIT_UPDATE_GOLDEN=1 rewrites it after review):\n{text}",
        path.display()
    );
}
