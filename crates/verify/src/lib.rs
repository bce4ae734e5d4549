//! hintaudit-verify (in progress).
