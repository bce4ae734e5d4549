//! What the example plants: the findings an honest auditor must report, no more, no fewer.

/// One planted finding: `(tool, rule id)`.
pub type Planted = (&'static str, &'static str);

/// Findings from tool calls ([rules](../../../docs/design.md#2-rules)), when every tool is called once and every
/// idempotent tool twice with the same arguments, `audit_log` ignored as bookkeeping, and
/// cancelled appointments present before purge_cancelled runs.
pub const PLANTED_CALL_FINDINGS: &[Planted] = &[
    ("get_appointment", "read_only_write"),
    ("create_appointment", "idempotency_broken"),
    ("confirm_appointment", "undeclared_destructive"),
    ("purge_cancelled", "undeclared_destructive"),
];

/// Findings from calls that need a notification service outside the closed world
/// (`Bookings::with_notifier`, the service's address configured as outside): the demo's.
/// Without one, notify_patient sends nothing (and answers `"notified": false`).
pub const PLANTED_OPEN_WORLD_FINDINGS: &[Planted] = &[("notify_patient", "undeclared_open_world")];

/// Findings from tools/list.
pub const PLANTED_LISTING_FINDINGS: &[Planted] = &[("export_appointments", "hint_missing")];

/// The bookkeeping table the example's policy ignores.
pub const BOOKKEEPING_TABLES: &[&str] = &["audit_log"];
