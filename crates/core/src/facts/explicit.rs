//! Explicit effects: what the server reports itself (files, queues, mail) through the
//! explicit API. Confirmed writes; overwrites and deletes are destructive; whether a repeat
//! changes anything again is only likely.

use crate::effect::{Effect, ExplicitChange};
use crate::facts::collect::Collector;
use crate::finding::Confidence;

/// Adds the evidence of `effect`'s reported effects to `c`.
pub(super) fn record_explicit(effect: &Effect, c: &mut Collector<'_>) {
    for e in &effect.explicit {
        let verb = match e.change {
            ExplicitChange::Add => "added",
            ExplicitChange::Overwrite => "overwrote",
            ExplicitChange::Delete => "deleted",
        };
        let text = || format!("reported: {verb} {}", e.target);
        c.write(Confidence::Confirmed, text);
        if matches!(e.change, ExplicitChange::Overwrite | ExplicitChange::Delete) {
            c.destructive(Confidence::Confirmed, text);
        }
        c.net_change(Confidence::Likely, text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effect::ExplicitEffect;
    use crate::facts::collect::lines;
    use crate::facts::evidence::Wanted;

    /// One row per reported effect: the facts it gives.
    #[test]
    fn explicit_effects() {
        let cases: Vec<(ExplicitChange, &str, Vec<&str>)> = vec![
            (
                ExplicitChange::Add,
                "queue:mail",
                vec![
                    "writes: reported: added queue:mail (confirmed)",
                    "net_changes: reported: added queue:mail (likely)",
                ],
            ),
            (
                ExplicitChange::Overwrite,
                "file:/var/exports/a.csv",
                vec![
                    "writes: reported: overwrote file:/var/exports/a.csv (confirmed)",
                    "destructive: reported: overwrote file:/var/exports/a.csv (confirmed)",
                    "net_changes: reported: overwrote file:/var/exports/a.csv (likely)",
                ],
            ),
            (
                ExplicitChange::Delete,
                "file:/tmp/b",
                vec![
                    "writes: reported: deleted file:/tmp/b (confirmed)",
                    "destructive: reported: deleted file:/tmp/b (confirmed)",
                    "net_changes: reported: deleted file:/tmp/b (likely)",
                ],
            ),
        ];
        for (change, target, want) in cases {
            let effect = Effect {
                explicit: vec![ExplicitEffect {
                    target: target.into(),
                    change,
                }],
                ..Default::default()
            };
            let mut c = Collector::facts(Wanted::ALL);
            record_explicit(&effect, &mut c);
            assert_eq!(lines(&c.finish()), want, "{change:?}");
        }
    }
}
