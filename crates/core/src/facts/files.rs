//! Changes of watched files (`hintaudit proxy --watch`): each a write; deletes, overwrites,
//! renames away, mode changes and replacements destructive; each a change a repeat would
//! make again. `likely`: the file system names no writer, so a change is the call's by the
//! calls in flight when it was seen
//! ([design: file effects](../../../../docs/design.md#file-effects)).

use crate::effect::Effect;
use crate::facts::collect::Collector;
use crate::files::file_evidence;
use crate::finding::Confidence;

/// Adds the evidence of `effect`'s file changes to `c`.
/// Each changed path is state the call wrote ([`StateKey::File`](crate::StateKey::File)).
pub(super) fn record_files<'e>(effect: &'e Effect, c: &mut Collector<'e>) {
    for change in &effect.files {
        c.file_changed(change);
        let text = || file_evidence("watched", std::slice::from_ref(change));
        c.write(Confidence::Likely, text);
        if change.kind.is_destructive() {
            c.destructive(Confidence::Likely, text);
        }
        c.net_change(Confidence::Likely, text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::collect::lines;
    use crate::facts::evidence::Wanted;
    use crate::files::{ChangeKind, FileChange};

    /// An append is a write and a net change; a delete is destructive too.
    #[test]
    fn file_changes_give_facts() {
        let effect = Effect {
            files: vec![
                FileChange {
                    path: "journal.txt".into(),
                    kind: ChangeKind::Appended,
                },
                FileChange {
                    path: "old.tmp".into(),
                    kind: ChangeKind::Deleted,
                },
            ],
            ..Default::default()
        };
        let mut c = Collector::facts(Wanted::ALL);
        record_files(&effect, &mut c);
        assert_eq!(
            lines(&c.finish()),
            [
                "writes: files (watched): appended to journal.txt (likely)",
                "writes: files (watched): deleted old.tmp (likely)",
                "destructive: files (watched): deleted old.tmp (likely)",
                "net_changes: files (watched): appended to journal.txt (likely)",
                "net_changes: files (watched): deleted old.tmp (likely)",
            ]
        );
    }
}
