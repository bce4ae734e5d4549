//! A snapshot diff as the core judge's [`Effect`]: the judge's rules and evidence texts apply
//! to the verifier's observations unchanged.

use hintaudit_core::{Effect, Operation, RowChange, RowImage, RowOperation, StatementEffect};

use crate::snapshot::{Diff, TableDiff};

/// The diff as the core judge's effect: one committed row change per row, confirmed; DDL
/// for created, dropped and altered tables, and created and dropped sequences. A moved
/// sequence has no core effect type: `crate::sequences` judges it.
pub(crate) fn effect_of(diff: &Diff) -> Effect {
    let mut effect = Effect::default();
    for t in &diff.tables {
        push_rows(&mut effect, t, RowOperation::Insert, t.added);
        push_rows(&mut effect, t, RowOperation::Delete, t.removed);
        push_rows(&mut effect, t, RowOperation::Update, t.changed);
        if t.created || t.dropped || t.altered {
            let object = t.kind.sql();
            let verb = if t.created {
                "CREATE"
            } else if t.dropped {
                "DROP"
            } else {
                "ALTER"
            };
            let verb = format!("{verb} {object}");
            let mut s = StatementEffect::new(Operation::Ddl, vec![t.table.clone()]);
            s.drops = t.dropped;
            s.summary = format!("{verb} {}", t.table).into();
            effect.statements.push(s);
        }
    }
    effect
}

fn push_rows(effect: &mut Effect, t: &TableDiff, operation: RowOperation, n: u64) {
    for _ in 0..n {
        effect.row_changes.push(RowChange {
            table: t.table.clone(),
            operation,
            statement: None,
            committed: true,
            image: if operation == RowOperation::Update {
                RowImage::Changed(Vec::new())
            } else {
                RowImage::Unknown
            },
            nested: None,
            row_id: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hintaudit_core::{DeclaredHints, Judge, Policy, Rule, ToolCall};

    #[test]
    fn diffs_become_confirmed_evidence() {
        let diff = Diff {
            tables: vec![TableDiff {
                table: "items".into(),
                removed: 2,
                changed: 1,
                ..TableDiff::default()
            }],
        };
        let effect = effect_of(&diff);
        let hints = DeclaredHints {
            read_only: Some(false),
            destructive: Some(false),
            idempotent: Some(false),
            open_world: Some(false),
        };
        let verdict = Judge::new(Policy::default()).judge(&ToolCall {
            tool: "archive",
            hints,
            arguments: None,
            effect: &effect,
        });
        let f = &verdict.findings[0];
        assert_eq!(f.rule, Rule::UndeclaredDestructive);
        assert_eq!(f.confidence.as_str(), "confirmed");
        assert_eq!(
            f.evidence,
            "2 rows deleted from items; 1 row updated in items"
        );
        let dropped = Diff {
            tables: vec![TableDiff {
                table: "t".into(),
                dropped: true,
                ..TableDiff::default()
            }],
        };
        assert!(effect_of(&dropped).statements[0].drops);
    }
}
