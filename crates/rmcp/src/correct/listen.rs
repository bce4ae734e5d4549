//! 2026-07-28 clients (`correct_hints`): the layer accepts `toolsListChanged` on
//! `subscriptions/listen` streams itself, whatever the inner server accepts, and keeps the
//! sinks of the open streams so that a correction reaches them as it reaches legacy sessions.
//!
//! The inner server's own subscriptions are never dropped: the filter answered is the inner
//! server's with `toolsListChanged` added, and its `listen` runs on the same stream (its
//! context's accepted filter then includes `toolsListChanged`).

use parking_lot::{Mutex, MutexGuard};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rmcp::ServerHandler;
use rmcp::model::{DiscoverResult, SubscriptionFilter, ToolsCapability};
use rmcp::service::{SubscriptionContext, SubscriptionSink};

/// Most listen streams told of corrections at once; a stream beyond it still gets the inner
/// server's notifications, not the layer's.
pub(crate) const MAX_LISTENERS: usize = 10_000;

/// The sinks of the open listen streams that accepted `toolsListChanged`, by a key of ours
/// (request ids of stateless clients may repeat).
#[derive(Default)]
pub(crate) struct Listeners {
    sinks: Mutex<HashMap<u64, SubscriptionSink>>,
    next: AtomicU64,
    /// Whether "too many listen streams" was logged (once).
    full_logged: AtomicBool,
}

/// An open listen stream's place in [`Listeners`], given back when the stream closes (the
/// `listen` future ends or is dropped).
pub(crate) struct Listening {
    listeners: Arc<Listeners>,
    key: u64,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.listeners.sinks().remove(&self.key);
    }
}

impl Listeners {
    fn sinks(&self) -> MutexGuard<'_, HashMap<u64, SubscriptionSink>> {
        self.sinks.lock()
    }

    /// Keeps `sink` until the returned guard drops; `None` when it did not accept
    /// `toolsListChanged` or [`MAX_LISTENERS`] streams are open (logged once).
    fn open(self: &Arc<Self>, sink: &SubscriptionSink) -> Option<Listening> {
        if sink.accepted().tools_list_changed != Some(true) {
            return None;
        }
        let mut sinks = self.sinks();
        if sinks.len() >= MAX_LISTENERS {
            if !self.full_logged.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    max = MAX_LISTENERS,
                    "hintaudit: too many subscriptions/listen streams; later ones are not told of corrections"
                );
            }
            return None;
        }
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        sinks.insert(key, sink.clone());
        Some(Listening {
            listeners: Arc::clone(self),
            key,
        })
    }

    /// Sends `notifications/tools/list_changed` on every open stream, each on a task of its
    /// own on `runtime`.
    pub(crate) fn notify(&self, runtime: &tokio::runtime::Handle) {
        let sinks: Vec<SubscriptionSink> = self.sinks().values().cloned().collect();
        for sink in sinks {
            runtime.spawn(async move {
                if let Err(e) = sink.notify_tool_list_changed().await {
                    tracing::debug!(
                        "hintaudit: tools/list_changed not sent on a listen stream: {e}"
                    );
                }
            });
        }
    }
}

/// The filter the layer accepts for `requested`: the inner server's (`inner`), with
/// `toolsListChanged` added when the client asked for it. `inner` unchanged otherwise.
pub(crate) fn accepted_filter(
    requested: &SubscriptionFilter,
    inner: Option<SubscriptionFilter>,
) -> Option<SubscriptionFilter> {
    if requested.tools_list_changed != Some(true) {
        return inner;
    }
    let mut accepted = inner.unwrap_or_default();
    accepted.tools_list_changed = Some(true);
    Some(accepted)
}

/// Advertises `tools.listChanged` in a `server/discover` answer, as initialize does.
pub(crate) fn advertise_in_discover(result: &mut DiscoverResult) {
    result
        .capabilities
        .tools
        .get_or_insert_with(ToolsCapability::default)
        .list_changed = Some(true);
}

/// Runs one listen stream: its sink is told of corrections while it is open, and the inner
/// server's `listen` runs on it when the inner server accepts any of the request (else the
/// stream stays open until the client cancels it).
pub(crate) async fn listen<H: ServerHandler>(
    listeners: &Arc<Listeners>,
    inner: &H,
    context: SubscriptionContext,
) -> Result<(), rmcp::ErrorData> {
    let _listening = listeners.open(context.sink());
    if inner
        .accepted_subscription_filter(context.requested())
        .is_some()
    {
        inner.listen(context).await
    } else {
        context.cancelled().await;
        Ok(())
    }
}

/// Expands, inside `impl ServerHandler for HintAudit<H>` (service.rs), to `get_info`,
/// `discover`, `accepted_subscription_filter` and `listen`: the inner server's, unchanged
/// without `correct_hints`; with it, `tools.listChanged` advertised and `toolsListChanged`
/// accepted and sent on listen streams. Paths are absolute because a macro's names resolve
/// where it expands.
macro_rules! subscription_hooks {
    () => {
        /// The inner server's info; with `correct_hints`, `tools.listChanged` advertised, so that
        /// 2026-07-28 clients may listen for it.
        fn get_info(&self) -> ::rmcp::model::ServerConfig {
            let mut info = self.inner.get_info();
            if self.config.corrections.is_some() {
                $crate::correct::advertise_list_changed(&mut info);
            }
            info
        }

        /// server/discover: the inner answer; with `correct_hints`, `tools.listChanged` advertised.
        async fn discover(
            &self,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> Result<::rmcp::model::DiscoverResult, ::rmcp::ErrorData> {
            let mut result = self.inner.discover(context).await;
            if let (Ok(found), Some(_)) = (&mut result, &self.config.corrections) {
                $crate::correct::advertise_in_discover(found);
            }
            result
        }

        /// The inner server's filter; with `correct_hints`, `toolsListChanged` added when asked.
        fn accepted_subscription_filter(
            &self,
            requested: &::rmcp::model::SubscriptionFilter,
        ) -> Option<::rmcp::model::SubscriptionFilter> {
            let inner = self.inner.accepted_subscription_filter(requested);
            match &self.config.corrections {
                Some(_) => $crate::correct::accepted_filter(requested, inner),
                None => inner,
            }
        }

        /// subscriptions/listen: the inner server's; with `correct_hints`, the stream is also told
        /// of corrections while it is open (below).
        async fn listen(
            &self,
            context: ::rmcp::service::SubscriptionContext,
        ) -> Result<(), ::rmcp::ErrorData> {
            match &self.config.corrections {
                Some(corrections) => corrections.listen(&self.inner, context).await,
                None => self.inner.listen(context).await,
            }
        }
    };
}

pub(crate) use subscription_hooks;

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> SubscriptionFilter {
        SubscriptionFilter::builder().tools_list_changed().build()
    }

    #[test]
    fn accepted_filter_adds_tools_list_changed_only_when_requested() {
        let prompts = SubscriptionFilter::builder().prompts_list_changed().build();
        let both = SubscriptionFilter::builder()
            .prompts_list_changed()
            .tools_list_changed()
            .build();
        let rows: [(
            &SubscriptionFilter,
            Option<SubscriptionFilter>,
            Option<SubscriptionFilter>,
        ); 4] = [
            (&tools(), None, Some(tools())),
            (&both, Some(prompts.clone()), Some(both.clone())),
            (&prompts, None, None),
            (&prompts, Some(prompts.clone()), Some(prompts.clone())),
        ];
        for (requested, inner, expected) in rows {
            assert_eq!(
                accepted_filter(requested, inner.clone()),
                expected,
                "{requested:?} {inner:?}"
            );
        }
    }
}
