//! One way in for every source of a call's evidence
//! ([design: adding a kind of state](../../../docs/design.md#adding-a-kind-of-state)).
//!
//! An [`Observer`] (the database log's [`Capture`](crate::Capture), the
//! [`FileWatch`](crate::FileWatch)) begins with every tool call before it goes upstream
//! ([`Observer::begin`]), is told when the call answered ([`Observing::finish`]), and settles
//! into one [`Share`] per call ([`Settle::share`]). [`Observers`] runs them all for
//! [`Forward`](crate::Forward), which knows none of them by kind:
//!
//! - every call begins with each observer in the order they were registered;
//! - its end is told to all of them under one lock, so that every observer sees the calls
//!   answer in the same order (each records its shares in that order: two observers that
//!   each waited for a call the other had behind it would wait for their bounds);
//! - the shares are recorded on one task of the call's own through one deferred share of its
//!   effects ([`CallScope::defer`]), [`Share::record`] each, after which the layer judges the
//!   call. The answer never waits here: with `--disclose-effects` the layer holds the answer
//!   until the deferred share is in, since the answer carries the effects; without, nothing
//!   waits.
//!
//! Phase 1: the proxy's observers only. verify's snapshots and outbound recorder are to
//! implement the same traits later, once these move to a crate that verify depends on too.

use parking_lot::Mutex;
use std::fmt::Debug;
use std::sync::Arc;

use futures_util::future::{BoxFuture, join_all};
use hintaudit_core::{CallScope, Share};

/// The upstream connection a call goes on, as observers tell writers apart (the capture: by
/// the connection and its child's process tree).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UpstreamLink {
    /// The connection's number, unique in this process ([`Upstream::id`](crate::Upstream::id)).
    pub connection: u64,
    /// Its child's pid, for `--stdio` (the root of the process tree whose sockets are its).
    pub child: Option<u32>,
}

/// A source of calls' evidence that watches them from outside (a database's log, a tree's
/// events). Register it in serve.rs's start-up; [`Forward`](crate::Forward) runs it for
/// every tool call.
pub trait Observer: Send + Sync + Debug {
    /// A call of `tool` on upstream connection `link` is about to go upstream: registers it,
    /// waiting for nothing but what the call's start needs (the capture: the position read
    /// that covers the calls answered before it). Never fails: a failure is counted as an
    /// audit error and shows in the share (late, or a gap).
    fn begin<'a>(
        &'a self,
        tool: &'a Arc<str>,
        link: UpstreamLink,
    ) -> BoxFuture<'a, Box<dyn Observing>>;
}

/// A call an [`Observer`] watches. Dropped unfinished (the call's future was dropped), the
/// call is taken out of the observer's attribution.
pub trait Observing: Send {
    /// The call answered now: returns at once with its share on its way.
    fn finish(self: Box<Self>) -> Box<dyn Settle>;
}

/// A call's share on its way. Until it is dropped or [`Settle::recorded`], the call counts as
/// pending (`hintaudit_capture_pending_calls{backend}`).
pub trait Settle: Send {
    /// The call's share: once the observer has read past the call's end, or at its bound
    /// (`--capture-wait-ms`: then `late`), and once the calls that answered before it are
    /// recorded (within the same bound).
    fn share(&mut self) -> BoxFuture<'_, Share>;

    /// The share is recorded into the call's effects: the call is no longer pending.
    fn recorded(self: Box<Self>);
}

/// Every observer the proxy runs, in registration order. Clones share them.
#[derive(Debug, Clone, Default)]
pub struct Observers {
    list: Arc<[Arc<dyn Observer>]>,
    /// Held while a call's end is told to every observer: one answer order for all.
    answers: Arc<Mutex<()>>,
}

/// The observers watching one call ([`Observers::begin`]).
pub struct Observed {
    calls: Vec<Box<dyn Observing>>,
}

impl Observers {
    /// Runs `list`, in this order.
    pub fn new(list: Vec<Arc<dyn Observer>>) -> Observers {
        Observers {
            list: list.into(),
            answers: Arc::default(),
        }
    }

    /// Whether there is no observer.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// A call of `tool` on `link` is about to go upstream: begins with every observer.
    pub async fn begin(&self, tool: &Arc<str>, link: UpstreamLink) -> Observed {
        let mut calls = Vec::with_capacity(self.list.len());
        for o in self.list.iter() {
            calls.push(o.begin(tool, link).await);
        }
        Observed { calls }
    }

    /// The call answered: tells every observer, then records their shares into the call's
    /// scope on a task of its own, through one [`CallScope::defer`]: the layer judges the
    /// call once they are in. Outside a call's scope the shares are dropped unrecorded.
    pub fn finish(&self, observed: Observed) {
        if observed.calls.is_empty() {
            return;
        }
        let settles: Vec<Box<dyn Settle>> = {
            let _answers = self.answers.lock();
            observed.calls.into_iter().map(|c| c.finish()).collect()
        };
        let Some(scope) = CallScope::current() else {
            return;
        };
        let deferred = scope.defer();
        tokio::spawn(async move {
            let mut settles = settles;
            let shares = join_all(settles.iter_mut().map(|s| s.share())).await;
            for share in shares {
                share.record(deferred.effects());
            }
            // The layer judges the call here.
            drop(deferred);
            for s in settles {
                s.recorded();
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use hintaudit_core::files::{ChangeKind, FileChange};
    use hintaudit_core::{EvidenceSource, EvidenceStatus};
    use tokio::sync::oneshot;

    use super::*;

    /// A source whose shares are handed over by the test: each call's share comes when the
    /// test sends it, as a log read past the call's end would.
    #[derive(Debug)]
    struct Handed {
        source: EvidenceSource,
        shares: Mutex<Vec<oneshot::Receiver<Share>>>,
    }

    struct HandedCall(Option<oneshot::Receiver<Share>>, EvidenceSource);

    impl Observer for Handed {
        fn begin<'a>(
            &'a self,
            _tool: &'a Arc<str>,
            _link: UpstreamLink,
        ) -> BoxFuture<'a, Box<dyn Observing>> {
            let rx = self.shares.lock().pop();
            let call = HandedCall(rx, self.source);
            Box::pin(std::future::ready(Box::new(call) as Box<dyn Observing>))
        }
    }

    impl Observing for HandedCall {
        fn finish(self: Box<Self>) -> Box<dyn Settle> {
            self
        }
    }

    impl Settle for HandedCall {
        fn share(&mut self) -> BoxFuture<'_, Share> {
            let source = self.1;
            let rx = self.0.take();
            Box::pin(async move {
                match rx {
                    Some(rx) => rx.await.unwrap_or_else(|_| Share::lost(source)),
                    None => Share::late(source),
                }
            })
        }

        fn recorded(self: Box<Self>) {}
    }

    fn handed(source: EvidenceSource) -> (Arc<Handed>, oneshot::Sender<Share>) {
        let (tx, rx) = oneshot::channel();
        let o = Handed {
            source,
            shares: Mutex::new(vec![rx]),
        };
        (Arc::new(o), tx)
    }

    #[tokio::test]
    async fn a_call_is_judged_once_every_observers_share_is_recorded() {
        let (files, files_tx) = handed(EvidenceSource::Files);
        let pg = EvidenceSource::Database(hintaudit_core::DatabaseKind::Postgres);
        let (log, log_tx) = handed(pg);
        let observers = Observers::new(vec![files, log]);
        let scope = CallScope::new("save");
        let effects = scope.effects_handle();
        let (judged_tx, judged) = oneshot::channel();
        scope
            .run(async {
                let observed = observers
                    .begin(&Arc::from("save"), UpstreamLink::default())
                    .await;
                observers.finish(observed);
            })
            .await;
        effects.when_settled(move || {
            let _ = judged_tx.send(());
        });
        assert!(effects.is_deferred(), "no share is in yet");
        let mut share = Share::new(EvidenceSource::Files);
        share.files.push(FileChange {
            path: "a.txt".into(),
            kind: ChangeKind::Created,
        });
        files_tx.send(share).unwrap();
        log_tx.send(Share::late(pg)).unwrap();
        judged.await.unwrap();
        let effect = effects.take();
        assert_eq!(effect.files.len(), 1);
        assert_eq!(effect.completeness.status(), EvidenceStatus::Pending);
        assert_eq!(effect.completeness.pending_sources(), [pg]);
    }
}
