//! Changes of watched files (`hintaudit proxy --watch`, `hintaudit verify --watch`): each a
//! write; deletes, overwrites, renames away, mode changes and replacements destructive; each
//! a change a repeat would make again. One piece of evidence of each kind for all of a call's
//! changes (`files (watched): created a.txt; deleted b.txt`), as strong as its source says
//! ([`FileSource`](crate::files::FileSource)): `likely` from the live watch, where the file
//! system names no writer and a change is the call's by the calls in flight when it was seen;
//! `confirmed` from verify's snapshots around a call that ran alone
//! ([design: file effects](../../../../docs/design.md#file-effects)).

use crate::effect::Effect;
use crate::facts::collect::Collector;
use crate::files::{FileChange, file_evidence};

/// Adds the evidence of `effect`'s file changes to `c`.
/// Each changed path is state the call wrote ([`StateKey::File`](crate::StateKey::File)).
pub(super) fn record_files<'e>(effect: &'e Effect, c: &mut Collector<'e>) {
    if effect.files.is_empty() {
        return;
    }
    effect
        .files
        .iter()
        .for_each(|change| c.file_changed(change));
    let source = effect.files_source;
    let confidence = source.confidence();
    let text = |changes: &[FileChange]| file_evidence(source.as_str(), changes);
    c.write(confidence, || text(&effect.files));
    if effect.files.iter().any(|f| f.kind.is_destructive()) {
        c.destructive(confidence, || {
            let destroyed: Vec<FileChange> = effect
                .files
                .iter()
                .filter(|f| f.kind.is_destructive())
                .cloned()
                .collect();
            text(&destroyed)
        });
    }
    c.net_change(confidence, || text(&effect.files));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::collect::lines;
    use crate::facts::evidence::Wanted;
    use crate::files::{ChangeKind, FileSource};

    /// An append is a write and a net change; a delete is destructive too. One piece of
    /// evidence of each kind names them all.
    #[test]
    fn file_changes_give_facts() {
        let mut effect = Effect {
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
                "writes: files (watched): appended to journal.txt; deleted old.tmp (likely)",
                "destructive: files (watched): deleted old.tmp (likely)",
                "net_changes: files (watched): appended to journal.txt; deleted old.tmp (likely)",
            ]
        );
        effect.files_source = FileSource::Snapshot;
        let mut c = Collector::facts(Wanted::ALL);
        record_files(&effect, &mut c);
        assert_eq!(
            lines(&c.finish())[1],
            "destructive: files (snapshot): deleted old.tmp (confirmed)",
            "verify's snapshots around a call that ran alone"
        );
    }
}
