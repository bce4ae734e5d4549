//! The reliability suite (issue 13): attribution at scale, cancellation and panics, hostile
//! input, privacy canaries and a property test of the classifier, each printing its figures
//! as `FIGURE <case> key=value ...` lines that `docs/reliability.md` copies.
//!
//! Fast sizes run in `cargo test`; `HINTAUDIT_RELIABILITY_LONG=1` (set by `.ci/run`) runs the
//! full sizes, each bounded in time.

mod attribution;
mod cancel;
mod exposure;
mod fallback;
mod hostile;
mod late_rows;
mod privacy;
mod properties;
mod support;
