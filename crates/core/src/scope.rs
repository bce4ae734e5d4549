//! The call scope: which tool call the current task works for.
//!
//! The one piece of runtime in hintaudit-core (a tokio task-local), here so that the crate
//! that opens it (hintaudit-rmcp) and the crates that read it (hintaudit-sqlx) share it.
//!
//! The rmcp layer opens a [`CallScope`] around the inner `call_tool` future; code that runs
//! inside it (the audited sqlx pool, HTTP client instrumentation, the explicit API) finds it
//! with [`CallScope::current`] and records into its [`CallEffects`]. The scope is a
//! `tokio::task_local!`, so it is lost when a tool spawns a task of its own: use
//! [`CallScope::carry`] or [`CallScope::spawn`] to take it along.
//!
//! Evidence that arrives after the call answered (the proxy's share of the database log,
//! read after the answer went back) is recorded through a [`Deferred`]: the layer judges the
//! call when the last one is dropped ([`CallEffects::when_settled`]), not when it answers.
//!
//! ```
//! use hintaudit_core::{CallScope, Operation, StatementEffect};
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let scope = CallScope::new("cancel_appointment");
//! let effects = scope.effects_handle();
//! scope
//!     .run(async {
//!         let here = CallScope::current().expect("inside the scope");
//!         here.effects().record_statement(StatementEffect::new(Operation::Delete, vec!["appointments".into()]));
//!     })
//!     .await;
//! assert!(CallScope::current().is_none());
//! assert_eq!(effects.snapshot().statements.len(), 1);
//! # }
//! ```

use parking_lot::{Mutex, MutexGuard};
use std::future::Future;
use std::sync::Arc;

use crate::completeness::EvidenceSource;
use crate::effect::{
    Effect, ExplicitEffect, OutboundReach, RowChange, StatementEffect, TransactionObservation,
};
use crate::enforce::{Enforcement, Refusal};

tokio::task_local! {
    static CURRENT: Option<CallScope>;
}

/// The effects of one tool call, filled from any thread while the call runs.
///
/// Every method locks a mutex for a few instructions and never panics (a poisoned lock is
/// taken over: the data is append-only, so a panic elsewhere cannot leave it inconsistent).
#[derive(Debug, Default)]
pub struct CallEffects {
    tool: Arc<str>,
    effect: Mutex<Effect>,
    late: Mutex<Late>,
}

/// The call's deferred shares ([`CallScope::defer`]) and what runs when they are all in.
#[derive(Default)]
struct Late {
    /// [`Deferred`] handles alive.
    open: usize,
    /// What runs when `open` falls to 0 ([`CallEffects::when_settled`]).
    then: Option<Box<dyn FnOnce() + Send>>,
}

impl std::fmt::Debug for Late {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Late")
            .field("open", &self.open)
            .field("then", &self.then.is_some())
            .finish()
    }
}

impl CallEffects {
    fn lock(&self) -> MutexGuard<'_, Effect> {
        self.effect.lock()
    }

    /// The tool this call is for.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// Records a statement; returns its index, for [`CallEffects::update_statement`] and
    /// [`RowChange::statement`].
    pub fn record_statement(&self, statement: StatementEffect) -> usize {
        let mut effect = self.lock();
        effect.statements.push(statement);
        effect.statements.len() - 1
    }

    /// Updates a recorded statement once the driver has answered. An unknown index is ignored.
    pub fn update_statement(&self, index: usize, update: impl FnOnce(&mut StatementEffect)) {
        if let Some(s) = self.lock().statements.get_mut(index) {
            update(s);
        }
    }

    /// Records row changes (from database hooks).
    pub fn record_row_changes(&self, changes: impl IntoIterator<Item = RowChange>) {
        self.lock().row_changes.extend(changes);
    }

    /// Records what a transaction oracle observed.
    pub fn record_transaction(&self, observation: TransactionObservation) {
        self.lock().transactions.push(observation);
    }

    /// Records an outbound request.
    pub fn record_outbound(&self, reach: OutboundReach) {
        self.lock().outbound.push(reach);
    }

    /// Records an effect the server reports itself.
    pub fn record_explicit(&self, effect: ExplicitEffect) {
        self.lock().explicit.push(effect);
    }

    /// Records a change of a watched file (`hintaudit proxy --watch`).
    pub fn record_file(&self, change: crate::files::FileChange) {
        self.lock().files.push(change);
    }

    /// Notes that the call took a connection through sqlx's `Acquire`, whose statements are
    /// not audited one by one ([`Effect::unaudited_acquires`]).
    pub fn record_unaudited_acquire(&self) {
        let mut effect = self.lock();
        effect.unaudited_acquires = effect.unaudited_acquires.saturating_add(1);
    }

    /// Records a refusal of enforce mode (an `enforced` finding).
    pub fn record_refusal(&self, refusal: Refusal) {
        self.lock().refusals.push(refusal);
    }

    /// Notes that `source` had not read through the call's end when its share was taken
    /// (the proxy's capture had not read the database's log that far within
    /// `--capture-wait-ms`; the watch had not read the call's end marker in time): a
    /// disclosure of the call says `pending`, unless a source is incomplete
    /// ([`Effect::completeness`]).
    pub fn mark_pending(&self, source: EvidenceSource) {
        self.lock().completeness.pending(source);
    }

    /// Notes that `source` lost part of the call's interval (a gap: a replication slot made
    /// again, an inotify queue overflow, a watched root removed): a disclosure of the call
    /// says `incomplete`, and `hintaudit_evidence_incomplete_total{source}` counts the call
    /// once per source. Returns whether the source was not marked before for this call.
    pub fn mark_incomplete(&self, source: EvidenceSource) -> bool {
        self.lock().completeness.incomplete(source)
    }

    /// A copy of everything recorded so far.
    pub fn snapshot(&self) -> Effect {
        self.lock().clone()
    }

    /// Takes everything recorded so far, leaving the effects empty.
    pub fn take(&self) -> Effect {
        std::mem::take(&mut *self.lock())
    }

    /// Runs `then` once every [`Deferred`] share of this call is in: at once (on this
    /// thread) when none is open, else on the thread that drops the last one. The rmcp
    /// layer judges the call in `then`. A second call replaces a `then` not yet run.
    pub fn when_settled(&self, then: impl FnOnce() + Send + 'static) {
        let mut late = self.late.lock();
        if late.open == 0 {
            drop(late);
            then();
        } else {
            late.then = Some(Box::new(then));
        }
    }

    /// Whether a [`Deferred`] share of this call is still open.
    pub fn is_deferred(&self) -> bool {
        self.late.lock().open > 0
    }
}

/// A share of a call's effects that is recorded after the call answered
/// ([`CallScope::defer`]): the call is judged when the last such share is dropped. Record
/// into [`Deferred::effects`] before dropping it; drop it on every path (an error too), or
/// the call is never judged.
#[derive(Debug)]
pub struct Deferred {
    effects: Arc<CallEffects>,
}

impl Deferred {
    /// The call's effects, to record the late share into.
    pub fn effects(&self) -> &CallEffects {
        &self.effects
    }
}

impl Drop for Deferred {
    fn drop(&mut self) {
        let then = {
            let mut late = self.effects.late.lock();
            late.open = late.open.saturating_sub(1);
            if late.open == 0 {
                late.then.take()
            } else {
                None
            }
        };
        if let Some(then) = then {
            then();
        }
    }
}

/// The scope of one tool call. Cheap to clone (one `Arc`).
#[derive(Debug, Clone)]
pub struct CallScope {
    effects: Arc<CallEffects>,
    spans: bool,
    enforcement: Enforcement,
}

impl CallScope {
    /// A new scope for a call of `tool`, with empty effects, whose statements get spans.
    pub fn new(tool: impl Into<Arc<str>>) -> Self {
        CallScope {
            effects: Arc::new(CallEffects {
                tool: tool.into(),
                effect: Mutex::new(Effect::default()),
                late: Mutex::default(),
            }),
            spans: true,
            enforcement: Enforcement::NONE,
        }
    }

    /// What enforce mode refuses for this call (default: nothing). The rmcp layer sets it
    /// from the tool's mode and declared hints ([`Enforcement::for_hints`]).
    pub fn with_enforcement(mut self, enforcement: Enforcement) -> Self {
        self.enforcement = enforcement;
        self
    }

    /// What enforce mode refuses for this call: see [`CallScope::with_enforcement`].
    pub fn enforcement(&self) -> Enforcement {
        self.enforcement
    }

    /// Whether the call's statements get spans of their own (default: yes). The rmcp layer
    /// turns them off for a call whose own span is off (not sampled, or tracing disabled),
    /// so that an untraced call costs no statement spans and leaves no orphans.
    pub fn with_spans(mut self, spans: bool) -> Self {
        self.spans = spans;
        self
    }

    /// Whether the call's statements get spans: see [`CallScope::with_spans`].
    pub fn spans(&self) -> bool {
        self.spans
    }

    /// The scope the current task runs in, if any. Outside a tokio task, `None`.
    pub fn current() -> Option<CallScope> {
        CURRENT.try_with(|s| s.clone()).ok().flatten()
    }

    /// The effects of this call.
    pub fn effects(&self) -> &CallEffects {
        &self.effects
    }

    /// A shared handle to the effects, to read them after the scope ends.
    pub fn effects_handle(&self) -> Arc<CallEffects> {
        self.effects.clone()
    }

    /// Opens a share of this call's effects that will be recorded after the call answers:
    /// the call is judged (its findings, metrics, span and logs) when the last [`Deferred`]
    /// is dropped, not when it answers. `hintaudit proxy` defers each call until the
    /// capture has read the database log past the call's end.
    ///
    /// ```
    /// use hintaudit_core::{CallScope, Operation, StatementEffect};
    /// let scope = CallScope::new("archive_item");
    /// let late = scope.defer();
    /// let effects = scope.effects_handle();
    /// let judged = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    /// let flag = judged.clone();
    /// effects.when_settled(move || flag.store(true, std::sync::atomic::Ordering::SeqCst));
    /// assert!(!judged.load(std::sync::atomic::Ordering::SeqCst));
    /// late.effects().record_statement(StatementEffect::new(Operation::Delete, vec!["items".into()]));
    /// drop(late);
    /// assert!(judged.load(std::sync::atomic::Ordering::SeqCst));
    /// assert_eq!(effects.take().statements.len(), 1);
    /// ```
    pub fn defer(&self) -> Deferred {
        let mut late = self.effects.late.lock();
        late.open += 1;
        Deferred {
            effects: self.effects.clone(),
        }
    }

    /// Runs `future` inside this scope.
    pub async fn run<F: Future>(self, future: F) -> F::Output {
        CURRENT.scope(Some(self), future).await
    }

    /// Wraps `future` so that it runs in the current task's scope (or in none, when there is
    /// none), wherever it is later polled. Use it for futures a tool hands to another task.
    pub fn carry<F: Future>(future: F) -> impl Future<Output = F::Output> {
        CURRENT.scope(Self::current(), future)
    }

    /// `tokio::spawn` that carries the current scope into the new task, so the spawned task's
    /// statements are attributed to the call that spawned it.
    ///
    /// # Panics
    /// As `tokio::spawn`: when called outside a tokio runtime.
    pub fn spawn<F>(future: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        tokio::spawn(Self::carry(future))
    }
}
