//! The judge: compares what a call did with the hints its tool declares, by the
//! [design: rules](../../../docs/design.md#2-rules).
//!
//! ```
//! use hintaudit_core::*;
//! let judge = Judge::new(Policy::default());
//! let hints = DeclaredHints { read_only: Some(true), ..Default::default() };
//! let mut effect = Effect::default();
//! effect.statements.push(StatementEffect::new(Operation::Update, vec!["appointments".into()]));
//! effect.row_changes.push(RowChange {
//!     table: "appointments".into(), operation: RowOperation::Update, statement: Some(0),
//!     committed: true, image: RowImage::Unknown, nested: None, row_id: None,
//! });
//! let verdict = judge.judge(&ToolCall { tool: "get_appointment", hints, arguments: None, effect: &effect });
//! assert_eq!(verdict.findings[0].rule, Rule::ReadOnlyWrite);
//! assert_eq!(verdict.findings[0].confidence, Confidence::Confirmed);
//! ```

use hashbrown::HashMap;
use hashbrown::hash_map::EntryRef;
use parking_lot::{Mutex, MutexGuard};
use std::sync::Arc;

use serde_json::Value;

use crate::closed_world::OpenWorldReading;
use crate::effect::Effect;
use crate::facts::{Evidence, Facts, Outline, Wanted, summarize};
use crate::finding::{Advice, Confidence, Finding, Rule};
use crate::hints::{DeclaredHints, Hint};
use crate::history::{ArgsHasher, ArgsKey, History, PendingRepeat, Repeat};
use crate::policy::Policy;
use crate::refusals::{enforced_findings, refused_evidence};
use crate::touched::StateKey;

/// The action-metadata rules: a tool's declared `outcome` and destination against a call's
/// facts, and its listing against its hints.
mod action;
/// The judge's side of a fleet's shared history: calls judged with their repeat pending, the
/// repeat settled when the store answers, and `hints_changed` across replicas.
mod shared;

pub use action::lint_action;
pub use shared::fleet_hints_changed;

/// Most tools whose first-seen hints and advice counters the judge keeps; calls of further
/// tools are judged but not tracked for `hints_changed` or advice.
pub const MAX_TRACKED_TOOLS: usize = 10_000;
/// Most pieces of state (tables, watched paths) whose last write the idempotency history
/// tracks.
pub const MAX_TRACKED_TABLES: usize = 10_000;

/// One finished tool call, as the judge sees it.
#[derive(Debug, Clone, Copy)]
pub struct ToolCall<'a> {
    /// The tool name.
    pub tool: &'a str,
    /// The hints the tool declared when it was called.
    pub hints: DeclaredHints,
    /// The call's arguments (hashed, never kept); `None` for none.
    pub arguments: Option<&'a Value>,
    /// What the call did.
    pub effect: &'a Effect,
}

/// The judge's conclusion about one call.
///
/// Each finding carries its evidence text. For all the evidence of a call, findings or not,
/// read its effect with [`Facts::from_effect`] and the judge's [`Judge::policy`]: the judge
/// itself writes only the texts its rules can use with the declared hints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Findings, most severe first.
    pub findings: Vec<Finding>,
    /// Whether this call repeated an identical earlier one, and whether cleanly.
    pub repeat: Option<Repeat>,
    /// Advice for the tool, from the calls judged so far, this one included: what
    /// [`Judge::advice`] would answer right after it.
    pub advice: Vec<Advice>,
}

impl Verdict {
    /// `clean`, or the most severe finding's severity: the span attribute `hintaudit.verdict`.
    pub fn label(&self) -> &'static str {
        self.findings
            .iter()
            .map(|f| f.severity)
            .max()
            .map_or("clean", |s| s.as_str())
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct AdviceCounters {
    calls: u64,
    writing_calls: u64,
    destructive_calls: u64,
    reaching_calls: u64,
    clean_repeats: u64,
    changing_repeats: u64,
}

impl AdviceCounters {
    /// Counts a repeat (first, clean or disturbed) that changed `net_changes` things again.
    fn count_repeat(&mut self, repeat: Repeat, net_changes: usize) {
        self.clean_repeats += u64::from(repeat == Repeat::Clean);
        self.changing_repeats += u64::from(changed_on_repeat(repeat, net_changes));
    }
}

#[derive(Debug)]
struct State {
    history: History,
    first_hints: HashMap<Arc<str>, DeclaredHints>,
    advice: HashMap<Arc<str>, AdviceCounters>,
}

/// The judge. Cheap to share (`Arc`); every method takes `&self` and is safe to call from
/// any thread. State (history, first-seen hints, advice counters) is bounded: see
/// [`Policy::with_history_capacity`], [`MAX_TRACKED_TOOLS`], [`MAX_TRACKED_TABLES`].
#[derive(Debug)]
pub struct Judge {
    policy: Policy,
    hasher: ArgsHasher,
    state: Mutex<State>,
}

impl Judge {
    /// A judge with `policy` and a random argument-hash key.
    pub fn new(policy: Policy) -> Self {
        Judge {
            state: Mutex::new(State {
                history: History::new(policy.history_capacity(), MAX_TRACKED_TABLES),
                first_hints: HashMap::new(),
                advice: HashMap::new(),
            }),
            hasher: ArgsHasher::random(),
            policy,
        }
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// Lints one tool's hints as tools/list serves them: `hint_missing` for every meaningful
    /// unset hint, `hint_contradiction`, and `hints_changed` when they differ from the hints
    /// first seen for this tool (the first listing sets them).
    pub fn judge_listing(&self, tool: &str, hints: DeclaredHints) -> Vec<Finding> {
        let mut findings = lint_hints(tool, hints);
        let mut state = self.state();
        match state.first_hints.get(tool) {
            Some(first) if *first != hints => findings.push(Finding::new(
                tool,
                Rule::HintsChanged,
                changed_hint(first, &hints),
                Confidence::Confirmed,
                format!(
                    "hints changed from {} to {}",
                    first.compact(),
                    hints.compact()
                ),
            )),
            Some(_) => {}
            None if state.first_hints.len() < MAX_TRACKED_TOOLS => {
                state.first_hints.insert(Arc::from(tool), hints);
            }
            None => {}
        }
        findings
    }

    /// Advice for a tool with these hints, from the calls judged so far.
    pub fn advice(&self, tool: &str, hints: DeclaredHints) -> Vec<Advice> {
        let c = self.state().advice.get(tool).copied().unwrap_or_default();
        advice_for(hints, c, self.policy.advice_after_calls())
    }

    /// Records a write of `written` that no call judged here made ([`History::written_elsewhere`]):
    /// a database commit or a file change the evidence sources could not give to one call
    /// (ambiguous, unattributed, foreign). The next repeat of every call that touches that
    /// state is disturbed, and not judged for `idempotency_broken`.
    /// Table names are normalized as the policy names them.
    pub fn written_elsewhere<'k>(&self, written: impl IntoIterator<Item = &'k StateKey<'k>>) {
        let keys: Vec<StateKey<'_>> = written.into_iter().map(StateKey::normalized).collect();
        self.state().history.written_elsewhere(&keys);
    }

    /// Judges one finished call against its declared hints, and records it in the history.
    pub fn judge(&self, call: &ToolCall<'_>) -> Verdict {
        self.judge_keyed(call, self.hasher.key(call.arguments))
    }

    /// The key [`Judge::judge_keyed`] needs for a tools/call `arguments` object (`None`: no
    /// arguments): a keyed hash of its canonical JSON (see [`ArgsHasher::key_of_object`]).
    /// Take it before the arguments move into the tool, rather than cloning them for the judge.
    pub fn args_key(&self, arguments: Option<&serde_json::Map<String, Value>>) -> ArgsKey {
        self.hasher.key_of_object(arguments)
    }

    /// As [`Judge::judge`], with the arguments' key taken beforehand by [`Judge::args_key`];
    /// `call.arguments` is not read.
    pub fn judge_keyed(&self, call: &ToolCall<'_>, key: ArgsKey) -> Verdict {
        self.judge_with(call, key, false).0
    }

    /// [`Judge::judge_keyed`], with the repeat left to a shared history when `share` and the
    /// call may repeat ([`shared::needs_shared`]): then the verdict has no repeat and no
    /// `idempotency_broken`, and the [`PendingRepeat`] says what to tell the store.
    fn judge_with(
        &self,
        call: &ToolCall<'_>,
        key: ArgsKey,
        share: bool,
    ) -> (Verdict, Option<PendingRepeat>) {
        // The facts in outline, then three steps: the history (repeats), the advice
        // counters, the rules. Most calls are clean: the outline (the evidence counted,
        // no text written) settles them. Only when a rule fires are the facts read in
        // full, with the texts its rules can use: the same evidence, so the same findings.
        let outline = Facts::outline(call.effect, &self.policy);
        let mut state = self.state();
        let repeat = state.history.record(
            call.tool,
            key,
            outline.touched.iter(),
            outline.written.iter(),
        );
        let shared = share && shared::needs_shared(call.hints, &outline);
        let reading = self.policy.open_world_reading();
        let counted = (!shared).then_some(repeat);
        let counters = state.count_for_advice(call.tool, &outline, counted, reading);
        drop(state);
        let advice = counters.map_or_else(Vec::new, |c| {
            advice_for(call.hints, c, self.policy.advice_after_calls())
        });
        // A shared repeat is judged when the store answers: no repeat rule fires now.
        let judged = if shared { Repeat::First } else { repeat };
        let mut findings = Vec::new();
        let mut facts = None;
        if rules_fire(call, &outline, judged, reading)
            || (shared && shared::wants_summary(call.hints, &outline))
        {
            let f = Facts::build(call.effect, &self.policy, Wanted::for_hints(call.hints));
            findings = self.findings(call, &f, judged);
            findings.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.rule.cmp(&b.rule)));
            facts = Some(f);
        }
        let pending = shared.then(|| shared::pending(call, key, &outline, facts.as_ref(), repeat));
        let verdict = Verdict {
            findings,
            repeat: (!shared).then_some(repeat),
            advice,
        };
        (verdict, pending)
    }

    /// The findings of a call whose history said `repeat`: the rules one call settles
    /// ([`Judge::rule_findings`]), and `idempotency_broken` when it repeated an identical
    /// earlier call cleanly (nothing else wrote its state in between) yet changed something
    /// again while declaring `idempotentHint: true`.
    fn findings(&self, call: &ToolCall<'_>, facts: &Facts<'_>, repeat: Repeat) -> Vec<Finding> {
        let mut findings = self.rule_findings(call, facts);
        let hints = call.hints;
        if changed_on_repeat(repeat, facts.net_changes.len())
            && hints.read_only != Some(true)
            && hints.idempotent == Some(true)
            && let Some(e) = summarize(&facts.net_changes)
        {
            findings.push(Finding::new(
                call.tool,
                Rule::IdempotencyBroken,
                Hint::Idempotent,
                e.confidence,
                format!("repeat with the same arguments: {}", e.text),
            ));
        }
        findings
    }

    /// The rules one call settles by itself: `read_only_write` (or
    /// `read_only_write_attempt`), `undeclared_destructive`, `undeclared_open_world`.
    fn rule_findings(&self, call: &ToolCall<'_>, facts: &Facts<'_>) -> Vec<Finding> {
        let hints = call.hints;
        let mut findings = Vec::new();
        let mut push = |rule: Rule, hint: Hint, evidence: &[Evidence]| {
            if let Some(e) = summarize(evidence) {
                findings.push(Finding::new(call.tool, rule, hint, e.confidence, e.text));
            }
        };
        // What enforce mode refused still shows the hint was false: each hint's own rule is
        // recorded for it as well as `enforced` (see `refused_evidence`).
        let refused = |hint: Hint| refused_evidence(&call.effect.refusals, hint);
        if hints.read_only == Some(true) {
            if !facts.writes.is_empty() {
                push(Rule::ReadOnlyWrite, Hint::ReadOnly, &facts.writes);
            } else if let Some(e) = refused(Hint::ReadOnly) {
                push(Rule::ReadOnlyWrite, Hint::ReadOnly, &[e]);
            } else {
                push(Rule::ReadOnlyWriteAttempt, Hint::ReadOnly, &facts.attempts);
            }
        } else if hints.destructive == Some(false) {
            match refused(Hint::Destructive) {
                Some(e) if facts.destructive.is_empty() => {
                    push(Rule::UndeclaredDestructive, Hint::Destructive, &[e]);
                }
                _ => push(
                    Rule::UndeclaredDestructive,
                    Hint::Destructive,
                    &facts.destructive,
                ),
            }
        }
        findings.extend(enforced_findings(
            call.tool,
            call.hints,
            &call.effect.refusals,
        ));
        if hints.open_world == Some(false) {
            let finding = open_world_finding(self.policy.open_world_reading(), facts)
                .or_else(|| refused(Hint::OpenWorld).map(|e| (e.text, e.confidence)));
            if let Some((evidence, confidence)) = finding {
                findings.push(Finding::new(
                    call.tool,
                    Rule::UndeclaredOpenWorld,
                    Hint::OpenWorld,
                    confidence,
                    evidence,
                ));
            }
        }
        findings
    }
}

impl State {
    /// Advice: counts the call for the tool's advice ([`Judge::advice`]) and returns the
    /// tool's counters, unless [`MAX_TRACKED_TOOLS`] other tools are counted already.
    fn count_for_advice(
        &mut self,
        tool: &str,
        outline: &Outline<'_>,
        repeat: Option<Repeat>,
        reading: OpenWorldReading,
    ) -> Option<AdviceCounters> {
        let full = self.advice.len() >= MAX_TRACKED_TOOLS;
        let c = match self.advice.entry_ref(tool) {
            // `entry_ref` allocates the key only when it inserts.
            EntryRef::Occupied(e) => e.into_mut(),
            EntryRef::Vacant(e) if !full => e.insert(AdviceCounters::default()),
            EntryRef::Vacant(_) => return None,
        };
        let o = outline;
        c.calls += 1;
        c.writing_calls += u64::from(o.writes > 0 || o.attempts > 0 || o.any_write_statement);
        c.destructive_calls += u64::from(o.destructive > 0);
        c.reaching_calls += u64::from(reaches_out(reading, o.outside, o.outside_changes));
        if let Some(repeat) = repeat {
            c.count_repeat(repeat, o.net_changes);
        }
        Some(*c)
    }
}

/// Whether any rule would find against a call with this outline: then the judge reads the
/// facts in full. Each rule needs evidence of its kind, which the outline counts; a call
/// enforce mode refused something for is read in full too (`enforced` reads the refusals).
fn rules_fire(
    call: &ToolCall<'_>,
    o: &Outline<'_>,
    repeat: Repeat,
    reading: OpenWorldReading,
) -> bool {
    let h = call.hints;
    let read_only = h.read_only == Some(true);
    (read_only && (o.writes > 0 || o.attempts > 0))
        || (!read_only && h.destructive == Some(false) && o.destructive > 0)
        || !call.effect.refusals.is_empty()
        || (h.open_world == Some(false) && reaches_out(reading, o.outside, o.outside_changes))
        || (!read_only && h.idempotent == Some(true) && changed_on_repeat(repeat, o.net_changes))
}

/// Whether the call reached outside the closed world, by `reading`, from how many requests
/// went outside it (`outside`) and how many of those were mutating (`changes`): any request
/// outside it (the specification's reading), or a mutating one (the directory reading).
fn reaches_out(reading: OpenWorldReading, outside: usize, changes: usize) -> bool {
    match reading {
        OpenWorldReading::Interaction => outside > 0,
        OpenWorldReading::StateChange => changes > 0,
    }
}

/// `undeclared_open_world`'s evidence and confidence, when the alerting `reading` finds the
/// call reached outside; the text says what the other reading makes of it.
fn open_world_finding(
    reading: OpenWorldReading,
    facts: &Facts<'_>,
) -> Option<(String, Confidence)> {
    if !reaches_out(reading, facts.outside.len(), facts.outside_changes.len()) {
        return None;
    }
    let evidence = match reading {
        OpenWorldReading::Interaction => &facts.outside,
        OpenWorldReading::StateChange => &facts.outside_changes,
    };
    let e = summarize(evidence)?;
    let directory = if facts.outside_changes.is_empty() {
        "no outside state changed"
    } else {
        "outside state changed"
    };
    Some((
        format!(
            "{} (spec reading: interaction outside the closed world; directory reading: {directory})",
            e.text
        ),
        e.confidence,
    ))
}

/// Whether a clean repeat changed something again (`net_changes` pieces of evidence of a
/// change a repeat makes again): evidence against `idempotentHint: true`.
fn changed_on_repeat(repeat: Repeat, net_changes: usize) -> bool {
    repeat == Repeat::Clean && net_changes > 0
}

fn changed_hint(a: &DeclaredHints, b: &DeclaredHints) -> Hint {
    Hint::ALL
        .into_iter()
        .find(|h| a.get(*h) != b.get(*h))
        .unwrap_or(Hint::ReadOnly)
}

/// The listing rules that need no state: `hint_missing` and `hint_contradiction`.
pub fn lint_hints(tool: &str, hints: DeclaredHints) -> Vec<Finding> {
    let mut findings: Vec<Finding> = hints
        .missing()
        .map(|h| {
            Finding::new(
                tool,
                Rule::HintMissing,
                h,
                Confidence::Confirmed,
                format!(
                    "{} unset; clients assume {}",
                    h.spec_name(),
                    h.default_value()
                ),
            )
        })
        .collect();
    if hints.read_only == Some(true) && hints.destructive == Some(true) {
        findings.push(Finding::new(
            tool,
            Rule::HintContradiction,
            Hint::Destructive,
            Confidence::Confirmed,
            "readOnlyHint true and destructiveHint true",
        ));
    }
    findings
}

fn advice_for(hints: DeclaredHints, c: AdviceCounters, after: u64) -> Vec<Advice> {
    let e = hints.effective();
    let mut out = Vec::new();
    if c.calls < after {
        return out;
    }
    if !e.read_only && c.writing_calls == 0 {
        out.push(Advice::CouldBeReadOnly);
    }
    if !e.read_only && e.destructive && c.writing_calls > 0 && c.destructive_calls == 0 {
        out.push(Advice::CouldBeNonDestructive);
    }
    if !e.read_only
        && !e.idempotent
        && c.writing_calls > 0
        && c.clean_repeats > 0
        && c.changing_repeats == 0
    {
        out.push(Advice::CouldBeIdempotent);
    }
    if e.open_world && c.reaching_calls == 0 {
        out.push(Advice::CouldBeClosedWorld);
    }
    out
}
