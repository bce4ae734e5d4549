//! What every connection of a listener shares: the run's parts, the listener's ledger, its
//! stop signal, and the count of tunnels being opened.

use parking_lot::{Mutex, MutexGuard};
use std::sync::Arc;

use hintaudit_core::{OutboundAnswer, OutboundReach};
use http::{Request, Response};
use hyper::body::Incoming;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::Shared;
use crate::destination::Destination;
use crate::ledger::{EgressGap, Ledger};
use crate::policy::Target;
use crate::upstream::Body;

/// What every connection of a listener shares: the run's parts and the listener's ledger.
pub(crate) struct Context {
    pub(crate) shared: Arc<Shared>,
    pub(crate) ledger: Mutex<Ledger>,
    pub(crate) stop: CancellationToken,
    /// Tunnels opened whose first bytes were not read yet, or whose TLS handshake has not
    /// ended yet.
    pub(crate) opening: watch::Sender<usize>,
}

/// A tunnel being opened, counted in [`Context::opening`] until dropped.
pub(crate) struct Opening(Arc<Context>);

impl Opening {
    pub(crate) fn new(ctx: &Arc<Context>) -> Opening {
        ctx.opening.send_modify(|n| *n += 1);
        Opening(ctx.clone())
    }
}

impl Drop for Opening {
    fn drop(&mut self) {
        self.0.opening.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl Context {
    pub(crate) fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock()
    }

    pub(crate) fn body_limit(&self) -> usize {
        self.shared.body_limit
    }

    pub(crate) fn arrive(&self, reach: OutboundReach) -> Option<u64> {
        self.ledger().arrive(reach)
    }

    pub(crate) fn answer(&self, id: Option<u64>, answer: OutboundAnswer) {
        if let Some(id) = id {
            self.ledger().answer(id, answer);
        }
    }

    /// Something the calls in flight could not see; logged (no call to tell) when none is.
    pub(crate) fn gap(&self, gap: EgressGap) {
        let mut ledger = self.ledger();
        if !ledger.busy() {
            tracing::info!(target: "hintaudit::egress", "egress, between calls: {gap}");
        }
        ledger.gap(gap);
    }

    pub(crate) fn target(&self, dest: &Destination) -> Option<Target> {
        self.shared
            .policy
            .target(&dest.scheme, &dest.host, dest.port)
    }

    pub(crate) async fn send(
        &self,
        request: Request<Body>,
    ) -> Result<Response<Incoming>, hyper_util::client::legacy::Error> {
        self.shared.upstream.send(request).await
    }

    /// Runs `task` until it ends or the listener is dropped.
    pub(crate) fn spawn(self: &Arc<Self>, task: impl Future<Output = ()> + Send + 'static) {
        let stop = self.stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = stop.cancelled() => {}
                () = task => {}
            }
        });
    }
}
