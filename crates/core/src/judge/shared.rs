//! The judge's side of a fleet's shared history ([design: the fleet's
//! history](../../../../docs/design.md#the-fleets-history)).
//!
//! With a shared history, a call that may repeat is judged in two steps: at its end, every
//! rule but `idempotency_broken` ([`Judge::judge_shared`], no I/O, the answer is not held up);
//! when the store answers, the repeat ([`Judge::settle`]), with the store's reading of it, or
//! this process's own when the store failed. Each repeat is judged once, by the replica that
//! served it.

use std::fmt::Write as _;
use std::sync::Arc;

use crate::facts::{Facts, Keys, Outline, Wanted, summarize};
use crate::finding::{Confidence, Finding, Rule};
use crate::hints::{DeclaredHints, Hint};
use crate::history::shared::{MAX_SUMMARY_BYTES, bounded};
use crate::history::{ArgsKey, PendingRepeat, Previous, Repeat, SharedAnswer, SharedCall};

use super::{Judge, ToolCall, Verdict, changed_hint, changed_on_repeat};

impl Judge {
    /// Judges a finished call as [`Judge::judge_keyed`] does, except that a call which may
    /// repeat (one that wrote a table, or of a tool declared idempotent and not read-only)
    /// leaves its repeat to a shared history: the verdict has `repeat: None` and no
    /// `idempotency_broken`, and the [`PendingRepeat`] says what to tell the store; settle it
    /// with [`Judge::settle`]. Other calls are judged in full, with `None`. This process's own
    /// history records every call either way.
    pub fn judge_shared(
        &self,
        call: &ToolCall<'_>,
        key: ArgsKey,
    ) -> (Verdict, Option<PendingRepeat>) {
        self.judge_with(call, key, true)
    }

    /// Settles a pending repeat with the shared history's `answer`, or with this process's
    /// own reading ([`PendingRepeat::local`]) when `answer` is `None` (the store failed or
    /// timed out): counts the repeat for advice and returns `idempotency_broken` when the
    /// call repeated an identical one cleanly, changed something again and declares
    /// `idempotentHint: true`. The evidence names the replica of the previous call when the
    /// store knew it.
    pub fn settle(&self, pending: &PendingRepeat, answer: Option<&SharedAnswer>) -> Vec<Finding> {
        let repeat = answer.map_or(pending.local, |a| a.repeat);
        let net = usize::from(pending.net_change.is_some());
        if let Some(c) = self.state().advice.get_mut(&*pending.call.tool) {
            c.count_repeat(repeat, net);
        }
        let hints = pending.hints;
        let Some((text, confidence)) = &pending.net_change else {
            return Vec::new();
        };
        if !changed_on_repeat(repeat, net)
            || hints.read_only == Some(true)
            || hints.idempotent != Some(true)
        {
            return Vec::new();
        }
        let mut evidence = format!("repeat with the same arguments: {text}");
        if let Some(previous) = answer.and_then(|a| a.previous.as_ref()) {
            write_previous(&mut evidence, previous);
        }
        vec![Finding::new(
            &*pending.call.tool,
            Rule::IdempotencyBroken,
            Hint::Idempotent,
            *confidence,
            evidence,
        )]
    }
}

/// `hints_changed` for a tool whose hints the fleet last saw as `from`, now served as `to`
/// by this replica: the finding [`Judge::judge_listing`] makes for one process, for a fleet.
pub fn fleet_hints_changed(tool: &str, from: &DeclaredHints, to: &DeclaredHints) -> Finding {
    Finding::new(
        tool,
        Rule::HintsChanged,
        changed_hint(from, to),
        Confidence::Confirmed,
        format!(
            "hints changed from {} to {} (across the fleet)",
            from.compact(),
            to.compact()
        ),
    )
}

/// Whether a call with these hints and this outline may repeat in a way the judge reads: it
/// wrote state, a table or a path (its writes can disturb another tool's repeat, and a tool that writes can
/// be advised idempotent), or its tool declares `idempotentHint: true` and is not read-only.
/// Other calls need no shared history: no round trip.
pub(super) fn needs_shared(hints: DeclaredHints, outline: &Outline<'_>) -> bool {
    !outline.written.is_empty() || (hints.idempotent == Some(true) && hints.read_only != Some(true))
}

/// Whether the evidence of what a repeat would change again is wanted (the tool declares
/// idempotent, is not read-only, and the call changed something).
pub(super) fn wants_summary(hints: DeclaredHints, outline: &Outline<'_>) -> bool {
    Wanted::for_hints(hints).net_changes && outline.net_changes > 0
}

/// The pending repeat of a call judged with `repeat` by this process's history.
pub(super) fn pending(
    call: &ToolCall<'_>,
    key: ArgsKey,
    outline: &Outline<'_>,
    facts: Option<&Facts<'_>>,
    repeat: Repeat,
) -> PendingRepeat {
    let net_change = facts
        .filter(|_| wants_summary(call.hints, outline))
        .and_then(|f| summarize(&f.net_changes))
        .map(|e| (e.text, e.confidence));
    let summary = net_change
        .as_ref()
        .map_or_else(String::new, |(text, _)| bounded(text, MAX_SUMMARY_BYTES));
    PendingRepeat {
        call: SharedCall {
            tool: Arc::from(call.tool),
            key,
            touched: shared_names(&outline.touched),
            written: shared_names(&outline.written),
            summary,
        },
        hints: call.hints,
        local: repeat,
        net_change,
    }
}

/// State keys as the shared history names them ([`StateKey::shared_name`](crate::StateKey::shared_name)).
fn shared_names(keys: &Keys<'_>) -> Vec<String> {
    keys.iter().map(|k| k.shared_name().into_owned()).collect()
}

/// Appends what the store kept of the previous identical call.
fn write_previous(evidence: &mut String, previous: &Previous) {
    let secs = previous.age.as_secs_f64();
    let _ = write!(
        evidence,
        " (the previous identical call ended {secs:.1} s before on replica {}",
        previous.replica
    );
    if !previous.summary.is_empty() {
        let _ = write!(evidence, ": {}", previous.summary);
    }
    evidence.push(')');
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::effect::{Effect, Operation, RowChange, RowImage, RowOperation, StatementEffect};
    use crate::policy::Policy;

    fn insert() -> Effect {
        let mut effect = Effect::default();
        effect.statements.push(StatementEffect::new(
            Operation::Insert,
            vec!["appointments".into()],
        ));
        effect.row_changes.push(RowChange {
            table: "appointments".into(),
            operation: RowOperation::Insert,
            statement: Some(0),
            committed: true,
            image: RowImage::Unknown,
            nested: None,
            row_id: None,
        });
        effect
    }

    fn call<'a>(tool: &'a str, hints: DeclaredHints, effect: &'a Effect) -> ToolCall<'a> {
        ToolCall {
            tool,
            hints,
            arguments: None,
            effect,
        }
    }

    /// The repeat of an idempotent liar is left to the store, then judged by its answer; the
    /// store's failure falls back to this process's history; a read-only read needs no store.
    #[test]
    fn a_shared_repeat_is_judged_when_the_store_answers() {
        let judge = Judge::new(Policy::default());
        let hints = DeclaredHints::new(Some(false), Some(false), Some(true), Some(false));
        let effect = insert();
        let c = call("create_appointment", hints, &effect);
        let key = judge.args_key(None);
        let (verdict, pending) = judge.judge_shared(&c, key);
        let pending = pending.expect("an idempotent tool's call goes to the store");
        assert_eq!(verdict.repeat, None);
        assert!(verdict.findings.is_empty(), "{:?}", verdict.findings);
        assert_eq!(pending.local(), Repeat::First);
        assert_eq!(pending.shared_call().written, ["appointments"]);
        assert!(pending.shared_call().summary.contains("appointments"));
        // Another replica's store answer: a clean repeat of a call that replica served.
        let answer = SharedAnswer {
            repeat: Repeat::Clean,
            previous: Some(Previous {
                replica: "bookings-2".into(),
                age: Duration::from_millis(1500),
                summary: "insert appointments".into(),
            }),
        };
        let findings = judge.settle(&pending, Some(&answer));
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].rule, Rule::IdempotencyBroken);
        assert!(
            findings[0].evidence.contains("replica bookings-2"),
            "{}",
            findings[0].evidence
        );
        // The store failed: this process had not seen the call before, so no repeat.
        assert!(judge.settle(&pending, None).is_empty());
        // The second call here: this process's own history knows the first.
        let (_, again) = judge.judge_shared(&c, key);
        let again = again.unwrap();
        assert_eq!(again.local(), Repeat::Clean);
        assert_eq!(judge.settle(&again, None)[0].rule, Rule::IdempotencyBroken);
        // A read that wrote nothing, of a read-only tool: no round trip.
        let read_only = DeclaredHints::new(Some(true), Some(false), Some(true), Some(false));
        let nothing = Effect::default();
        let (_, none) = judge.judge_shared(&call("get", read_only, &nothing), key);
        assert!(none.is_none());
    }

    /// Without a store, the same calls give the same findings as before.
    #[test]
    fn without_a_store_the_repeat_is_judged_at_once() {
        let judge = Judge::new(Policy::default());
        let hints = DeclaredHints::new(Some(false), Some(false), Some(true), Some(false));
        let effect = insert();
        let c = call("create_appointment", hints, &effect);
        let key = judge.args_key(None);
        assert_eq!(judge.judge_keyed(&c, key).repeat, Some(Repeat::First));
        let second = judge.judge_keyed(&c, key);
        assert_eq!(second.findings[0].rule, Rule::IdempotencyBroken);
    }

    #[test]
    fn a_fleet_hints_change_names_the_hint_and_both_sets() {
        let from = DeclaredHints::new(Some(true), None, None, None);
        let to = DeclaredHints::new(Some(false), None, None, None);
        let f = fleet_hints_changed("t", &from, &to);
        assert_eq!((f.rule, f.hint), (Rule::HintsChanged, Hint::ReadOnly));
        assert!(f.evidence.contains("across the fleet"), "{}", f.evidence);
    }
}
