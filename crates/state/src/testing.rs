//! What the readers' tests share: running a command-line tool that may be absent.

use std::process::Command;

/// `cmd`'s standard output, trimmed, after checking it succeeded; `None` (the test skips,
/// saying why) when the program is not installed, unless `require` (an
/// `HINTAUDIT_REQUIRE_*` variable, or HINTAUDIT_REQUIRE_ALL) asks for it.
pub fn output(mut cmd: Command, require: &str) -> Option<String> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    match cmd.output() {
        Ok(o) => {
            assert!(
                o.status.success(),
                "{cmd:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            Some(String::from_utf8_lossy(&o.stdout).trim().to_owned())
        }
        Err(e) if !hintaudit_test_support::required(require) => {
            eprintln!("skipped: {program} is not installed ({e})");
            None
        }
        Err(e) => panic!("{program} is required ({require}): {e}"),
    }
}
