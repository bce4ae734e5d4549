//! Facts: an [`Effect`] read through the [`Policy`], before any hint is consulted.
//!
//! The judge turns facts into findings; keeping them apart lets the offline verifier reuse
//! the same evidence texts. Each evidence source is read by its own step, in this order
//! (which is the order of the evidence in each list):
//!
//! 1. row changes, as database hooks report them (`rows.rs`);
//! 2. the database oracle: PostgreSQL's per-transaction table writes (`oracle.rs`);
//! 3. statements: statement analysis and the driver's row counts (`statements.rs`), silent
//!    where the row changes or the oracle already spoke;
//! 4. outbound requests (`outbound.rs`);
//! 5. explicit effects the server reports itself (`explicit.rs`);
//! 6. changes of watched files (`files.rs`): the proxy's live watch and verify's snapshots.
//!
//! How strong each source is: [design: evidence](../../../../docs/design.md#3-evidence).

/// The facts of one call, and the collector every step adds to.
mod collect;
/// One piece of evidence, which texts are wanted, and how a list of them reads as one line.
mod evidence;
/// Step 5: effects the server reports itself.
mod explicit;
/// Step 6: changes of watched files.
mod files;
/// Step 2: the database oracle's per-transaction table writes.
mod oracle;
/// Step 4: outbound requests.
mod outbound;
/// Step 1: row changes from database hooks.
mod rows;
/// Step 3: statements, as analysis and the driver tell them.
mod statements;

pub use collect::Facts;
pub(crate) use collect::Keys;
pub(crate) use collect::Outline;
pub(crate) use evidence::Wanted;
pub use evidence::{Evidence, summarize};

use crate::effect::Effect;
use crate::policy::Policy;
use crate::touched::StateKey;
use collect::Collector;

impl<'e> Facts<'e> {
    /// Reads `effect` through `policy`.
    pub fn from_effect(effect: &'e Effect, policy: &Policy) -> Facts<'e> {
        Facts::build(effect, policy, Wanted::ALL)
    }

    /// [`Facts::from_effect`], writing only the `want`ed evidence texts.
    pub(crate) fn build(effect: &'e Effect, policy: &Policy, want: Wanted) -> Facts<'e> {
        collect(effect, policy, Collector::facts(want)).finish()
    }

    /// The facts of `effect` in outline: the same evidence, counted, with no text written
    /// and no host kept (the judge's first reading of a call; see
    /// [`Judge::judge_keyed`](crate::Judge::judge_keyed)).
    pub(crate) fn outline(effect: &'e Effect, policy: &Policy) -> Outline<'e> {
        collect(effect, policy, Collector::outline()).finish_outline()
    }
}

/// Runs every evidence source over `effect`, in the order of the module's list, into `c`.
fn collect<'e>(effect: &'e Effect, policy: &Policy, mut c: Collector<'e>) -> Collector<'e> {
    let hooked = rows::record_row_changes(effect, policy, &mut c);
    let oracle_tables = oracle::record_transactions(effect, policy, &mut c);
    statements::record_statements(effect, policy, &hooked, &oracle_tables, &mut c);
    outbound::record_outbound(effect, policy, &mut c);
    explicit::record_explicit(effect, &mut c);
    files::record_files(effect, &mut c);
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effect::{Operation, RowChange, RowImage, RowOperation, StatementEffect};

    /// Statements past the 64 of the bit mask are marked as hooked too.
    #[test]
    fn hooked_statements_past_sixty_four() {
        for hooked in [3, 63, 64, 66] {
            let mut s = StatementEffect::new(Operation::Update, vec!["t".into()]);
            s.observed = true;
            let effect = Effect {
                statements: vec![s; 70],
                row_changes: vec![RowChange {
                    table: "t".into(),
                    operation: RowOperation::Update,
                    statement: Some(hooked),
                    committed: true,
                    image: RowImage::Unknown,
                    nested: None,
                    row_id: None,
                }],
                ..Default::default()
            };
            let mut effect = effect;
            // A row change naming a statement that does not exist marks nothing.
            let mut stray = effect.row_changes[0].clone();
            stray.statement = Some(usize::MAX);
            effect.row_changes.push(stray);
            let f = Facts::from_effect(&effect, &Policy::default());
            // Every other statement changed nothing; the hooked one updated its row.
            assert_eq!(f.attempts.len(), 69, "hooked {hooked}");
            assert_eq!(f.writes.len(), 1, "hooked {hooked}");
            assert_eq!(f.writes[0].text, "2 rows updated in t", "hooked {hooked}");
        }
    }
}

/// The state a call touched, each key once, in first-seen order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateTouched<'e> {
    /// State read or written: a repeat is disturbed when any of it was written by something
    /// else since the previous identical call ended.
    pub touched: Vec<StateKey<'e>>,
    /// State written: it disturbs the repeats of every call that touches it.
    pub written: Vec<StateKey<'e>>,
}

/// The state `effect` touched, read through `policy`: watched tables read or written (row
/// changes, the database oracle, statements), and watched paths changed (a change seen is a
/// write; the file watch sees no reads). Outbound requests and reported effects touch no
/// state the history keys yet. The judge keys its history with the same reading.
pub fn state_touched<'e>(effect: &'e Effect, policy: &Policy) -> StateTouched<'e> {
    let outline = Facts::outline(effect, policy);
    StateTouched {
        touched: outline.touched.iter().cloned().collect(),
        written: outline.written.iter().cloned().collect(),
    }
}
