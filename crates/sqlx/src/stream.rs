//! A fallible stream written as an `async` block that yields, in safe code.
//!
//! The audited executors need streams that own a pooled connection and borrow it for the
//! driver's stream, which a combinator chain cannot express. This is the technique of
//! sqlx-core's internal `TryAsyncStream` (and of the `async-stream` crate, without its
//! macros): the producer future puts each item into a shared slot and suspends once; the
//! stream takes the item out when the producer is pending.
//!
//! [`DetachableStream`] (a statement straight on the pool, whose producer owns its
//! connection) can also finish its producer after the consumer dropped it: while the
//! producer asks for it ([`Yielder::finish_on_drop`]), dropping the stream spawns the
//! producer on the current tokio runtime, where its further items are discarded. The
//! PostgreSQL oracle uses it so that a stream dropped early still commits its transaction,
//! as the statement would have in autocommit. A producer that cannot be finished so (no
//! runtime, or the runtime shuts down first) is counted as an audit error.

use parking_lot::Mutex;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use futures_core::future::BoxFuture;
use futures_core::stream::Stream;
use futures_util::FutureExt;
use futures_util::future::Fuse;

/// What the producer and the stream share.
#[derive(Debug)]
struct Shared<T> {
    slot: Mutex<Option<T>>,
    /// The producer asks to be run to its end if the stream is dropped.
    finish_on_drop: AtomicBool,
    /// The stream was dropped and the producer runs on alone: items are discarded.
    detached: AtomicBool,
}

impl<T> Shared<T> {
    fn new() -> Arc<Self> {
        Arc::new(Shared {
            slot: Mutex::new(None),
            finish_on_drop: AtomicBool::new(false),
            detached: AtomicBool::new(false),
        })
    }

    fn take(&self) -> Option<T> {
        self.slot.lock().take()
    }
}

/// Hands items from the producer to the stream.
#[doc(hidden)]
#[derive(Debug)]
pub struct Yielder<T> {
    shared: Arc<Shared<T>>,
    detachable: bool,
}

impl<T> Yielder<T> {
    /// Yields one item; resumes when the consumer asks for the next. Once the stream was
    /// dropped and the producer runs on alone, the item is discarded and this returns at once.
    pub(crate) async fn send(&self, item: T) {
        if self.shared.detached.load(Ordering::Acquire) {
            return;
        }
        *self.shared.slot.lock() = Some(item);
        let mut suspended = false;
        std::future::poll_fn(|_| {
            if suspended {
                Poll::Ready(())
            } else {
                // No wake-up is scheduled: the stream returns the item and polls the
                // producer again on the next `poll_next`.
                suspended = true;
                Poll::Pending
            }
        })
        .await;
    }

    /// Whether this producer can be finished after its stream is dropped (a
    /// [`DetachableStream`]'s).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn detachable(&self) -> bool {
        self.detachable
    }

    /// While `on`, dropping a [`DetachableStream`] before its end spawns the producer on the
    /// current tokio runtime instead of dropping it. Without a runtime, or when the runtime
    /// shuts down before the producer ends, it is dropped, and counted as an audit error.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn finish_on_drop(&self, on: bool) {
        self.shared.finish_on_drop.store(on, Ordering::Release);
    }
}

/// The next item of a producer that was polled: the end, the error, or the item it put in
/// the slot (none yet: pending).
fn next<T, E>(polled: Poll<Result<(), E>>, shared: &Shared<T>) -> Poll<Option<Result<T, E>>> {
    match polled {
        Poll::Ready(Ok(())) => Poll::Ready(None),
        Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
        Poll::Pending => match shared.take() {
            Some(item) => Poll::Ready(Some(Ok(item))),
            None => Poll::Pending,
        },
    }
}

pin_project_lite::pin_project! {
    /// A stream of `Result<T, E>` produced by an `async` block, `Fut`, held inline: boxed,
    /// the stream and its producer are one allocation.
    pub(crate) struct TryStream<T, Fut> {
        shared: Arc<Shared<T>>,
        #[pin]
        producer: Fuse<Fut>,
    }
}

impl<T, E, Fut> TryStream<T, Fut>
where
    Fut: Future<Output = Result<(), E>>,
{
    /// Runs `f` as the producer; it yields with [`Yielder::send`] and ends with `Ok(())` or
    /// the error to yield last.
    pub(crate) fn new<F>(f: F) -> Self
    where
        F: FnOnce(Yielder<T>) -> Fut,
    {
        let shared = Shared::new();
        let producer = f(Yielder {
            shared: shared.clone(),
            detachable: false,
        })
        .fuse();
        TryStream { shared, producer }
    }
}

impl<T, E, Fut> Stream for TryStream<T, Fut>
where
    Fut: Future<Output = Result<(), E>>,
{
    type Item = Result<T, E>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        if this.producer.is_terminated() {
            return Poll::Ready(None);
        }
        let polled = this.producer.poll(cx);
        next(polled, this.shared)
    }
}

/// A stream of `Result<T, sqlx::Error>` produced by a boxed `'static` producer that can be
/// finished after the stream is dropped (see [`Yielder::finish_on_drop`]).
pub(crate) struct DetachableStream<T> {
    shared: Arc<Shared<T>>,
    producer: Option<BoxFuture<'static, Result<(), sqlx::Error>>>,
}

impl<T> DetachableStream<T> {
    /// Runs `f` as the producer, as [`TryStream::new`]; `f` boxes it (a boxed future is
    /// what a dropped stream can hand to a task of its own).
    pub(crate) fn new<F>(f: F) -> Self
    where
        F: FnOnce(Yielder<T>) -> BoxFuture<'static, Result<(), sqlx::Error>>,
    {
        let shared = Shared::new();
        let producer = f(Yielder {
            shared: shared.clone(),
            detachable: true,
        });
        DetachableStream {
            shared,
            producer: Some(producer),
        }
    }
}

impl<T> Stream for DetachableStream<T> {
    type Item = Result<T, sqlx::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let Some(producer) = this.producer.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = producer.as_mut().poll(cx);
        if polled.is_ready() {
            this.producer = None;
        }
        next(polled, &this.shared)
    }
}

impl<T> Drop for DetachableStream<T> {
    fn drop(&mut self) {
        let Some(producer) = self.producer.take() else {
            return;
        };
        if !self.shared.finish_on_drop.load(Ordering::Acquire) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            Unfinished.lost("no tokio runtime");
            return;
        };
        self.shared.detached.store(true, Ordering::Release);
        drop(self.shared.take());
        // Made here and moved in: a task dropped before its first poll drops it too.
        let unfinished = Unfinished;
        runtime.spawn(async move {
            let _ = producer.await;
            std::mem::forget(unfinished);
        });
    }
}

/// A dropped stream's producer, asked to run to its end, that has not: dropped with it, it
/// counts an audit error (stage `Oracle`, the one producer that asks), since the statement's
/// transaction then rolls back where bare autocommit would have kept its writes. Forgotten
/// once the producer ended.
struct Unfinished;

impl Unfinished {
    fn lost(self, why: &str) {
        std::mem::forget(self);
        hintaudit_core::stats().audit_error(
            hintaudit_core::AuditStage::Oracle,
            &format!("a dropped stream's statement could not be finished ({why}): rolled back"),
        );
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        Unfinished.lost("its task ended first: the runtime shut down, or it panicked");
    }
}

use futures_core::FusedFuture;

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::TryStreamExt;

    #[tokio::test]
    async fn yields_in_order_then_the_error() {
        let s = TryStream::new(|y: Yielder<u32>| async move {
            for i in 0..3 {
                y.send(i).await;
            }
            Err("done")
        });
        let mut s = Box::pin(s);
        let mut got = vec![];
        let err = loop {
            match s.try_next().await {
                Ok(Some(v)) => got.push(v),
                Ok(None) => break None,
                Err(e) => break Some(e),
            }
        };
        assert_eq!(got, [0, 1, 2]);
        assert_eq!(err, Some("done"));
        assert!(s.try_next().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_dropped_detachable_stream_finishes_its_producer_when_asked() {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let s = DetachableStream::new(|y: Yielder<u32>| {
            async move {
                y.finish_on_drop(true);
                for i in 0..3 {
                    y.send(i).await;
                }
                let _ = tx.send("finished");
                Ok(())
            }
            .boxed()
        });
        let mut s = Box::pin(s);
        assert_eq!(s.try_next().await.unwrap(), Some(0));
        drop(s);
        assert_eq!(rx.await, Ok("finished"));

        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let s = DetachableStream::new(|y: Yielder<u32>| {
            async move {
                y.send(0).await;
                y.send(1).await;
                let _ = tx.send(());
                Ok(())
            }
            .boxed()
        });
        let mut s = Box::pin(s);
        assert_eq!(s.try_next().await.unwrap(), Some(0));
        drop(s);
        // Not asked: the producer is dropped, as `TryStream`'s.
        assert!(rx.await.is_err());
    }

    /// Sets its flag when dropped.
    struct Flag(Arc<AtomicBool>);

    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// A stream whose producer asks to be finished, after its first item, and a flag set
    /// when the producer is dropped (it never ends by itself).
    fn half_read(rt: &tokio::runtime::Runtime) -> (DetachableStream<u32>, Arc<AtomicBool>) {
        let dropped = Arc::new(AtomicBool::new(false));
        let flag = Flag(dropped.clone());
        let mut s = DetachableStream::new(|y: Yielder<u32>| {
            async move {
                let _flag = flag;
                y.finish_on_drop(true);
                y.send(0).await;
                std::future::pending::<()>().await;
                Ok(())
            }
            .boxed()
        });
        assert_eq!(rt.block_on(s.try_next()).unwrap(), Some(0));
        (s, dropped)
    }

    fn oracle_errors() -> u64 {
        hintaudit_core::stats().audit_errors(hintaudit_core::AuditStage::Oracle)
    }

    #[test]
    fn a_producer_that_cannot_be_finished_counts_an_audit_error() {
        // Dropped where no runtime runs.
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (s, dropped) = half_read(&rt);
        let before = oracle_errors();
        drop(s);
        assert!(dropped.load(Ordering::SeqCst), "the producer is dropped");
        assert!(oracle_errors() > before, "the loss is counted");

        // Spawned, then the runtime shuts down before the producer ends.
        let (s, dropped) = half_read(&rt);
        let before = oracle_errors();
        rt.block_on(async move { drop(s) });
        assert!(
            !dropped.load(Ordering::SeqCst),
            "the producer runs on in a task of its own"
        );
        drop(rt);
        assert!(dropped.load(Ordering::SeqCst));
        assert!(oracle_errors() > before, "the loss is counted");
    }
}
