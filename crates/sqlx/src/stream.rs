//! A fallible stream written as an `async` block that yields, in safe code.
//!
//! The audited executors need streams that own a pooled connection and borrow it for the
//! driver's stream, which a combinator chain cannot express. This is the technique of
//! sqlx-core's internal `TryAsyncStream` (and of the `async-stream` crate, without its
//! macros): the producer future puts each item into a shared slot and suspends once; the
//! stream takes the item out when the producer is pending.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures_core::stream::Stream;
use futures_util::FutureExt;
use futures_util::future::Fuse;

/// Hands items from the producer to the stream.
#[doc(hidden)]
#[derive(Debug)]
pub struct Yielder<T> {
    slot: Arc<Mutex<Option<T>>>,
}

impl<T> Yielder<T> {
    /// Yields one item; resumes when the consumer asks for the next.
    pub(crate) async fn send(&self, item: T) {
        *self.slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(item);
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
}

pin_project_lite::pin_project! {
    /// A stream of `Result<T, E>` produced by an `async` block, `Fut`, held inline: boxed,
    /// the stream and its producer are one allocation.
    pub(crate) struct TryStream<T, Fut> {
        slot: Arc<Mutex<Option<T>>>,
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
        let slot = Arc::new(Mutex::new(None));
        let producer = f(Yielder { slot: slot.clone() }).fuse();
        TryStream { slot, producer }
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
        match this.producer.poll(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(None),
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
            Poll::Pending => {
                let item = this.slot.lock().unwrap_or_else(|e| e.into_inner()).take();
                match item {
                    Some(item) => Poll::Ready(Some(Ok(item))),
                    None => Poll::Pending,
                }
            }
        }
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
}
