//! hintaudit-telemetry (in progress).
