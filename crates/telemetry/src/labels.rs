//! Bounded label values
//! ([design: telemetry names](../../../docs/design.md#5-telemetry-names)).

use parking_lot::RwLock;
use std::collections::HashSet;
use std::sync::Arc;

use crate::metric_name::OTHER_TABLE;

/// The `table` label: the first `max` distinct tables seen keep their name, any further table
/// is `__other__`. Memory is bounded by `max` names.
#[derive(Debug)]
pub(crate) struct TableLabels {
    max: usize,
    seen: RwLock<HashSet<Arc<str>>>,
    other: Arc<str>,
}

impl TableLabels {
    pub(crate) fn new(max: usize) -> Self {
        TableLabels {
            max,
            seen: RwLock::default(),
            other: Arc::from(OTHER_TABLE),
        }
    }

    /// The label value for `table`.
    pub(crate) fn label(&self, table: &str) -> Arc<str> {
        {
            let seen = self.seen.read();
            if let Some(t) = seen.get(table) {
                return t.clone();
            }
            if seen.len() >= self.max {
                return self.other.clone();
            }
        }
        let mut seen = self.seen.write();
        if let Some(t) = seen.get(table) {
            return t.clone();
        }
        if seen.len() >= self.max || table == OTHER_TABLE {
            return self.other.clone();
        }
        let t: Arc<str> = Arc::from(table);
        seen.insert(t.clone());
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_n_tables_keep_their_names() {
        let labels = TableLabels::new(2);
        let rows = [
            ("a", "a"),
            ("b", "b"),
            ("a", "a"),
            ("c", OTHER_TABLE),
            ("b", "b"),
            ("d", OTHER_TABLE),
        ];
        for (table, want) in rows {
            assert_eq!(&*labels.label(table), want, "{table}");
        }
        let none = TableLabels::new(0);
        assert_eq!(&*none.label("a"), OTHER_TABLE);
    }
}
