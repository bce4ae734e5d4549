//! The watch as an [`Observer`]: a call's [`FileShare`] becomes a [`Share`] of source
//! `files`: its changes as the call's file effects; ambiguous changes are logged with their
//! candidate tools and never the call's (the watcher tells the judge of them as written
//! elsewhere).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use hintaudit_core::{EvidenceSource, Share};

use crate::files::{FileSettling, FileShare, FileTicket, FileWatch};
use crate::observe::{Observer, Observing, Settle, UpstreamLink};

impl Observer for FileWatch {
    fn begin<'a>(
        &'a self,
        tool: &'a Arc<str>,
        _link: UpstreamLink,
    ) -> BoxFuture<'a, Box<dyn Observing>> {
        let call = WatchedCall {
            watch: self.clone(),
            ticket: FileWatch::begin(self, tool.clone()),
            tool: tool.clone(),
        };
        Box::pin(std::future::ready(Box::new(call) as Box<dyn Observing>))
    }
}

/// A call the watch follows.
struct WatchedCall {
    watch: FileWatch,
    ticket: FileTicket,
    tool: Arc<str>,
}

impl Observing for WatchedCall {
    fn finish(self: Box<Self>) -> Box<dyn Settle> {
        Box::new(WatchSettle {
            settling: self.watch.finish(self.ticket),
            tool: self.tool,
        })
    }
}

/// A call's share of the watched trees on its way.
struct WatchSettle {
    settling: FileSettling,
    tool: Arc<str>,
}

impl Settle for WatchSettle {
    fn share(&mut self) -> BoxFuture<'_, Share> {
        Box::pin(async move {
            let files = self.settling.share().await;
            share_of(files, &self.tool)
        })
    }

    fn recorded(self: Box<Self>) {
        // Dropping the settling ends the call's pending state and its turn.
    }
}

/// The call's file changes as its evidence; ambiguous ones logged with `tool`.
fn share_of(files: FileShare, tool: &str) -> Share {
    for (change, tools) in &files.ambiguous {
        tracing::info!(
            target: "hintaudit::proxy",
            tool,
            candidates = ?tools,
            path = %change.path,
            change = change.kind.as_str(),
            "a file change while calls of several tools were in flight: not attributed"
        );
    }
    let mut share = Share::new(EvidenceSource::Files);
    share.files = files.changes;
    share.gap = files.gap;
    share.late = files.late;
    share
}
