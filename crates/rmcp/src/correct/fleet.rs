//! Corrections shared through the fleet's store (`history_url`, shared/corrections.lua): a
//! correction made on one replica is put in the store, and every replica serves what the
//! store holds, read again at each tools/list it serves. A correction the store no longer
//! holds (lifted by the operator, or its time ran out) is lifted here too.

use std::sync::Arc;

use hintaudit_core::Hint;

use super::{Correction, Corrections, InForce, MAX_CORRECTED_TOOLS};

impl Corrections {
    /// Puts `correction` in the fleet's store (on a task of its own); once the store holds
    /// it, a later read without it lifts it here.
    pub(super) fn store(self: &Arc<Self>, tool: &str, correction: &Correction) {
        let Some(fleet) = &self.fleet else { return };
        let this = Arc::downgrade(self);
        let name = tool.to_owned();
        fleet.submit_correction(
            tool.to_owned(),
            letters(correction),
            self.lasts,
            move |answer| {
                let (Some(this), Some(answer)) = (this.upgrade(), answer) else {
                    return;
                };
                if let Some(entry) = this.tools().get_mut(&name) {
                    entry.stored = !answer.is_empty();
                }
            },
        );
    }

    /// Lifts `tool`'s correction in the fleet's store (on a task of its own).
    pub(super) fn unstore(&self, tool: &str) {
        if let Some(fleet) = &self.fleet {
            fleet.submit_lift(tool.to_owned());
        }
    }

    /// Reads the fleet's corrections (awaited, within the store's timeout): corrections made
    /// on other replicas are put in force here, tightened ones merged, and stored ones the
    /// store no longer holds lifted. Sessions are told when that changed anything. A store
    /// that fails changes nothing (counted at stage `history`).
    pub(crate) async fn sync(&self) {
        let Some(fleet) = &self.fleet else { return };
        let Some(held) = fleet.corrections().await else {
            return;
        };
        let held: Vec<(String, Correction)> = held
            .into_iter()
            .filter_map(|(tool, l)| Some((tool, from_letters(&l)?)))
            .collect();
        let mut changed = false;
        let mut tools = self.tools();
        tools.retain(|tool, entry| {
            let keep = !entry.stored || held.iter().any(|(t, _)| t == tool);
            changed |= !keep;
            keep
        });
        for (tool, correction) in held {
            let room = tools.len() < MAX_CORRECTED_TOOLS;
            match tools.get_mut(&tool) {
                Some(entry) => {
                    let merged = entry.correction.merged(&correction);
                    changed |= merged != entry.correction;
                    entry.correction = merged;
                    entry.stored = true;
                }
                None if room => {
                    tools.insert(tool, InForce::new(correction, true));
                    changed = true;
                }
                None => {}
            }
        }
        drop(tools);
        if changed {
            self.notify();
        }
    }
}

/// A correction as 4 letters, one per hint in MCP's order: `-` not corrected, else the value
/// served (`t`, `f`, `u` unset).
fn letters(correction: &Correction) -> String {
    Hint::ALL
        .iter()
        .map(
            |h| match correction.tightened.iter().find(|(t, _)| t == h) {
                None => '-',
                Some((_, Some(true))) => 't',
                Some((_, Some(false))) => 'f',
                Some((_, None)) => 'u',
            },
        )
        .collect()
}

/// [`letters`]' inverse; `None` for anything else, or a correction that tightens nothing.
fn from_letters(text: &str) -> Option<Correction> {
    if text.chars().count() != Hint::ALL.len() {
        return None;
    }
    let mut tightened = Vec::new();
    for (hint, c) in Hint::ALL.into_iter().zip(text.chars()) {
        let value = match c {
            '-' => continue,
            't' => Some(true),
            'f' => Some(false),
            'u' => None,
            _ => return None,
        };
        tightened.push((hint, value));
    }
    (!tightened.is_empty()).then_some(Correction { tightened })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrections_round_trip_through_four_letters() {
        let c = Correction {
            tightened: vec![(Hint::ReadOnly, Some(false)), (Hint::Destructive, None)],
        };
        assert_eq!(letters(&c), "fu--");
        assert_eq!(from_letters("fu--"), Some(c));
        for bad in ["----", "fu-", "fux-", ""] {
            assert_eq!(from_letters(bad), None, "{bad}");
        }
    }
}
