//! The capture as an [`Observer`]: a call's share of the log becomes a [`Share`] of source
//! `Database(kind)`: attributed commits as transactions observed from the log (`likely`),
//! truncations as statements; ambiguous commits are logged with their candidate tools and
//! never the call's (the capture tells the judge of them as written elsewhere).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use hintaudit_core::{
    EvidenceSource, ObservationSource, Operation, Share, StatementEffect, TransactionObservation,
};

use crate::capture::{CallShare, Capture, Settling, Ticket};
use crate::observe::{Observer, Observing, Settle, UpstreamLink};

impl Observer for Capture {
    fn begin<'a>(
        &'a self,
        tool: &'a Arc<str>,
        link: UpstreamLink,
    ) -> BoxFuture<'a, Box<dyn Observing>> {
        Box::pin(async move {
            let ticket = Capture::begin(self, tool.clone(), link).await;
            let call = CaptureCall {
                capture: self.clone(),
                ticket,
                tool: tool.clone(),
            };
            Box::new(call) as Box<dyn Observing>
        })
    }
}

/// A call the capture watches.
struct CaptureCall {
    capture: Capture,
    ticket: Ticket,
    tool: Arc<str>,
}

impl Observing for CaptureCall {
    fn finish(self: Box<Self>) -> Box<dyn Settle> {
        let source = EvidenceSource::Database(self.capture.kind());
        Box::new(CaptureSettle {
            settling: self.capture.finish(self.ticket),
            kept: None,
            source,
            tool: self.tool,
        })
    }
}

/// A call's share of the log on its way, and, once judged, the log's own share (for the
/// commit-to-finding latency when it is recorded).
struct CaptureSettle {
    settling: Settling,
    kept: Option<CallShare>,
    source: EvidenceSource,
    tool: Arc<str>,
}

impl Settle for CaptureSettle {
    fn share(&mut self) -> BoxFuture<'_, Share> {
        Box::pin(async move {
            let call = self.settling.share().await;
            let share = share_of(&call, self.source, &self.tool);
            self.kept = Some(call);
            share
        })
    }

    fn recorded(self: Box<Self>) {
        let kept = self.kept.unwrap_or_default();
        self.settling.recorded(&kept);
    }
}

/// The call's share of the log as its evidence: attributed commits, truncations, and how
/// complete it is; ambiguous commits logged with `tool` and their candidates.
fn share_of(call: &CallShare, source: EvidenceSource, tool: &str) -> Share {
    let mut share = Share::new(source);
    for commit in &call.attributed {
        if !commit.tables.is_empty() {
            share.transactions.push(TransactionObservation {
                wrote: true,
                tables: commit.tables.clone(),
                sequences: Vec::new(),
                committed: true,
                source: ObservationSource::Log,
                images: commit.images.clone(),
            });
        }
        for t in &commit.truncated {
            let mut s = StatementEffect::new(Operation::Truncate, vec![t.clone()]);
            s.summary = format!("TRUNCATE {t} (database log)").into();
            share.statements.push(s);
        }
        // A TRUNCATE of a table the log showed empty: observed, 0 rows (no driver counts a
        // TRUNCATE), it removed nothing.
        for t in &commit.truncated_empty {
            let mut s = StatementEffect::new(Operation::Truncate, vec![t.clone()]);
            s.summary = format!("TRUNCATE {t} (database log: already empty)").into();
            s.rows_affected = Some(0);
            s.observed = true;
            share.statements.push(s);
        }
    }
    for (commit, tools) in &call.ambiguous {
        let tables: Vec<&str> = commit.tables.iter().map(|w| w.table.as_str()).collect();
        tracing::info!(
            target: "hintaudit::proxy",
            tool,
            candidates = ?tools,
            ?tables,
            "a commit while calls of several tools were in flight: not attributed"
        );
    }
    share.late = call.late;
    share.gap = call.gap;
    share
}
