//! The connection lost under one of the audit's own round trips (the catalog lookup, the
//! statistics flush, `BEGIN`, a snapshot): the backend was terminated
//! (`pg_terminate_backend`, a server shutdown) or the socket closed.
//!
//! PostgreSQL sends a terminated session's `FATAL` error (SQLSTATE `57P01`) and closes the
//! socket; the next round trip on the connection reads that error, and every later one fails
//! with an I/O error. Without the audit the caller's statement would have been that next
//! round trip, so the audit keeps the error and hands it back as the statement's (or the
//! `COMMIT`'s) own, instead of sending the statement on a dead connection: the caller sees
//! the error it would have seen unaudited, not an `Io` one.

use sqlx::Error;

/// Whether `e` means the connection is gone: an I/O or protocol error, or a database error
/// of class `57P` (operator intervention: admin or crash shutdown, cannot connect now) or
/// `08` (connection exception). A cancelled statement (`57014`) leaves it usable.
pub(super) fn connection_lost(e: &Error) -> bool {
    match e {
        Error::Io(_) | Error::Protocol(_) => true,
        Error::Database(d) => d
            .code()
            .is_some_and(|c| c.starts_with("57P") || c.starts_with("08")),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_and_protocol_errors_are_a_lost_connection_others_are_not() {
        assert!(connection_lost(&Error::Io(std::io::Error::other("reset"))));
        assert!(connection_lost(&Error::Protocol("unexpected".into())));
        assert!(!connection_lost(&Error::PoolTimedOut));
        assert!(!connection_lost(&Error::RowNotFound));
    }
}
