//! The statement as the driver gets it, and its attribution to a tool call.
//!
//! [`AuditedQuery::split`] takes the user's `Execute` value apart in the order sqlx's drivers
//! do (arguments, then `persistent`, then the SQL text), so argument-encoding errors and
//! statement caching behave exactly as without auditing. [`Attribution::start`] classifies
//! the text, records the statement into the current [`CallScope`] (or counts it as
//! unattributed) and opens the statement span; [`Attribution::finish`] records the outcome.

use std::sync::Arc;

use hintaudit_core::{CallEffects, CallScope, Enforcement, StatementOutcome, semconv, stats};
use sqlx::database::Database;
use sqlx::error::BoxDynError;
use sqlx::{Execute, SqlStr};
use tracing::field::Empty;

use crate::classify::{Classification, Classifier};

/// The user's query, taken apart: text, arguments (or their encoding error), persistence
/// and the prepared statement it came from, if any.
#[doc(hidden)]
pub struct AuditedQuery<DB: Database> {
    sql: SqlStr,
    arguments: Option<Result<Option<DB::Arguments>, BoxDynError>>,
    persistent: bool,
    statement: Option<DB::Statement>,
}

impl<DB: Database> AuditedQuery<DB> {
    /// Takes `query` apart in the drivers' order: `take_arguments`, `persistent`, `sql`.
    pub(crate) fn split<'q, E: Execute<'q, DB>>(mut query: E) -> Self {
        let statement = query.statement().cloned();
        let arguments = query.take_arguments();
        let persistent = query.persistent();
        let sql = query.sql();
        AuditedQuery {
            sql,
            arguments: Some(arguments),
            persistent,
            statement,
        }
    }

    /// The SQL text.
    pub(crate) fn text(&self) -> &str {
        self.sql.as_str()
    }

    /// Whether encoding the arguments failed: the driver will return that error without
    /// sending anything to the database.
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    pub(crate) fn arguments_failed(&self) -> bool {
        matches!(self.arguments, Some(Err(_)))
    }
}

impl<'q, DB: Database> Execute<'q, DB> for AuditedQuery<DB> {
    fn sql(self) -> SqlStr {
        self.sql
    }

    fn statement(&self) -> Option<&DB::Statement> {
        self.statement.as_ref()
    }

    fn take_arguments(&mut self) -> Result<Option<DB::Arguments>, BoxDynError> {
        self.arguments.take().unwrap_or(Ok(None))
    }

    fn persistent(&self) -> bool {
        self.persistent
    }
}

/// Where a statement's evidence goes: one call's effects and the statement's index there
/// (`None`: work of the call through sqlx's `Acquire`, no statement of its own).
#[derive(Debug, Clone)]
pub(crate) struct Sink {
    pub(crate) effects: Arc<CallEffects>,
    pub(crate) index: Option<usize>,
}

impl Sink {
    /// Updates this sink's statement, if it has one (rows through sqlx's `Acquire` have
    /// none).
    #[cfg_attr(not(any(feature = "postgres", feature = "mysql")), allow(dead_code))]
    pub(crate) fn update(&self, update: impl FnOnce(&mut hintaudit_core::StatementEffect)) {
        if let Some(index) = self.index {
            self.effects.update_statement(index, update);
        }
    }
}

/// One statement's classification, attribution and span.
#[derive(Debug)]
pub(crate) struct Attribution {
    pub(crate) class: Arc<Classification>,
    pub(crate) sink: Option<Sink>,
    pub(crate) span: tracing::Span,
    /// What enforce mode refuses for the statement's call ([`crate::enforce`]).
    pub(crate) enforcement: Enforcement,
}

impl Attribution {
    /// Classifies `sql`, records the statement into the current call scope (or counts it as
    /// unattributed) and opens its span as a child of the current span, with `system` as its
    /// `db.system.name` (none when the
    /// scope says its call is not traced: [`CallScope::spans`]).
    pub(crate) fn start(classifier: &Classifier, system: Option<&'static str>, sql: &str) -> Self {
        let class = classifier.classify(sql);
        let mut enforcement = Enforcement::NONE;
        let (sink, spans) = match CallScope::current() {
            Some(scope) => {
                enforcement = scope.enforcement();
                let effects = scope.effects_handle();
                let index = effects.record_statement(class.effect.clone());
                (
                    Some(Sink {
                        effects,
                        index: Some(index),
                    }),
                    scope.spans(),
                )
            }
            None => {
                stats().unattributed_statement(class.effect.operation);
                (None, true)
            }
        };
        // A call that is not traced (not sampled) gets no statement span, and no orphan.
        let span = if spans {
            statement_span(&class, system)
        } else {
            tracing::Span::none()
        };
        Attribution {
            class,
            sink,
            span,
            enforcement,
        }
    }

    /// Records how the statement ended: see [`StatementEnd`].
    pub(crate) fn finish(&self, end: StatementEnd) {
        let StatementEnd {
            outcome,
            rows_affected,
            observed,
        } = end;
        if let Some(n) = rows_affected {
            self.span.record(semconv::DB_RESPONSE_AFFECTED_ROWS, n);
        }
        if outcome == StatementOutcome::Failed {
            self.span.record(semconv::OTEL_STATUS_CODE, "error");
        }
        if let Some(Sink {
            effects,
            index: Some(index),
        }) = &self.sink
        {
            effects.update_statement(*index, |s| {
                s.outcome = outcome;
                if rows_affected.is_some() {
                    s.rows_affected = rows_affected;
                }
                s.observed = observed;
            });
        }
    }
}

/// How a statement ended, as [`Attribution::finish`] records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StatementEnd {
    /// Whether the driver answered with an error. A statement whose caller stopped reading
    /// its rows did not fail.
    pub(crate) outcome: StatementOutcome,
    /// Rows affected, only where trustworthy: PostgreSQL writes; always `None` on SQLite,
    /// where the driver's count is stale.
    pub(crate) rows_affected: Option<u64>,
    /// Whether row-level observation (SQLite's hooks, the PostgreSQL oracle) covered it.
    pub(crate) observed: bool,
}

impl StatementEnd {
    /// Failed, with nothing counted or observed: the statement never reached the database
    /// (no connection), or the driver's error came first.
    pub(crate) const FAILED: StatementEnd = StatementEnd {
        outcome: StatementOutcome::Failed,
        rows_affected: None,
        observed: false,
    };
}

/// `future` in `span`, or bare when the span is disabled (no subscriber wants it, or the call
/// is not traced): entering a disabled span on every poll costs instructions and does
/// nothing.
pub(crate) fn in_span<F: std::future::Future>(
    future: F,
    span: tracing::Span,
) -> futures_util::future::Either<F, tracing::instrument::Instrumented<F>> {
    use futures_util::future::Either;
    use tracing::Instrument;
    if span.is_disabled() {
        Either::Left(future)
    } else {
        Either::Right(future.instrument(span))
    }
}

/// `future`, boxed, in `span` ([`in_span`]): boxed straight from its value, which a
/// statement's future (3.6 KB on SQLite) is cheaper to copy once than twice.
pub(crate) fn boxed_in_span<'a, F: std::future::Future + Send + 'a>(
    future: F,
    span: tracing::Span,
) -> futures_core::future::BoxFuture<'a, F::Output> {
    use tracing::Instrument;
    if span.is_disabled() {
        Box::pin(future)
    } else {
        Box::pin(future.instrument(span))
    }
}

/// The `db.statement` span of a classified statement (OpenTelemetry database client span
/// conventions), as a child of the current span.
fn statement_span(class: &Classification, system: Option<&'static str>) -> tracing::Span {
    let collection = class
        .effect
        .tables
        .first()
        .or(class.effect.read_tables.first())
        .map(String::as_str)
        .unwrap_or("");
    tracing::info_span!(
        "db.statement",
        { semconv::OTEL_NAME } = &*class.effect.summary,
        { semconv::OTEL_KIND } = "client",
        { semconv::OTEL_STATUS_CODE } = Empty,
        { semconv::DB_SYSTEM_NAME } = system,
        { semconv::DB_OPERATION_NAME } = class.operation_name.as_str(),
        { semconv::DB_COLLECTION_NAME } = collection,
        { semconv::DB_QUERY_SUMMARY } = &*class.effect.summary,
        { semconv::DB_QUERY_TEXT } = class.sanitized.as_str(),
        { semconv::DB_RESPONSE_AFFECTED_ROWS } = Empty,
    )
}
