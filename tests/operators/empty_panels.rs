//! The dashboards' panels that may show no data in a short run of the stack, each with why;
//! the stack test (stack.rs) allows exactly these.

use crate::dashboards::panel_queries;

/// Panels whose query may return an empty vector in a short run of the stack (three replicas
/// serving the same bookings build, traffic for a few minutes, the planted tools violating):
/// `(dashboard uid, panel title, reason)`. The per-tool dashboard has none as long as `tool`
/// is a tool that declares readOnlyHint=true and writes (the default, `get_appointment`);
/// for an honest read-only tool its "Declared read-only but wrote" and write panels are empty.
pub const MAY_BE_EMPTY: &[(&str, &str, &str)] = &[
    (
        "hintaudit-overview",
        "Tools whose hints changed",
        "lists only tools whose listed hints changed in the range (`> 0`); no tool changes its \
         hints during a test run",
    ),
    (
        "hintaudit-overview",
        "Advice: hints that could be tightened",
        "lists only advice that holds (`== 1`); advice needs 20 calls of a tool on one replica \
         (DEFAULT_ADVICE_AFTER_CALLS) before it can hold",
    ),
    (
        "hintaudit-overview",
        "Tools served corrected hints",
        "lists only tools with a correction served in the range (`> 0`); `correct_hints` is off \
         by default and the stack's replicas run with the defaults",
    ),
    (
        "hintaudit-fleet",
        "Replicas that disagree",
        "lists only tools with more than one hint set across replicas; every replica runs the \
         same build, so no rollout is half finished",
    ),
];

#[test]
fn may_be_empty_names_real_panels() {
    let queries = panel_queries(&[]);
    for (uid, title, reason) in MAY_BE_EMPTY {
        assert!(!reason.is_empty());
        assert!(
            queries
                .iter()
                .any(|q| q.dashboard == *uid && q.title == *title),
            "MAY_BE_EMPTY names no panel: {uid} {title:?}"
        );
    }
}
