//! Rows a statement affected, as MySQL's OK packets count them ([`Counted`]).

use sqlx::Either;
use sqlx::mysql::MySql;

use crate::rows::{RowCount, Step};

/// Rows affected as the OK packets count them, per result; for a `… RETURNING` statement
/// (MariaDB), whose result set ends without a count, the rows it returned.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct Counted {
    results: Vec<u64>,
    returned: u64,
}

impl RowCount<MySql> for Counted {
    fn add(&mut self, v: &Step<MySql>) {
        match v {
            Either::Left(r) => {
                let n = match r.rows_affected() {
                    0 => self.returned,
                    n => n,
                };
                self.results.push(n);
                self.returned = 0;
            }
            Either::Right(_) => self.returned += 1,
        }
    }

    fn add_rows(&mut self, n: u64) {
        self.returned += n;
    }

    /// Rows so far, over all results.
    fn total(&self) -> u64 {
        self.results.iter().sum::<u64>() + self.returned
    }
}

impl Counted {
    /// Rows per finished result.
    pub(super) fn results(&self) -> Vec<u64> {
        self.results.clone()
    }
}
