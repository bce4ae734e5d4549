//! The demo's stand-in for an outside service: an HTTP server on loopback that accepts the
//! bookings example's notifications, configured as outside the closed world.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hintaudit_core::{ClosedWorld, ClosedWorldError};

/// A running notification service on loopback.
#[derive(Debug)]
pub struct OutsideService {
    /// Its address (`127.0.0.1:<port>`).
    pub addr: SocketAddr,
    received: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl OutsideService {
    /// Starts the service on a free loopback port; it answers every request with 202.
    ///
    /// # Errors
    /// When no loopback port can be bound.
    pub async fn start() -> std::io::Result<OutsideService> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let received = Arc::new(AtomicU64::new(0));
        let counter = received.clone();
        let app = axum::Router::new().fallback(move || {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::Relaxed);
                axum::http::StatusCode::ACCEPTED
            }
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(OutsideService {
            addr,
            received,
            task,
        })
    }

    /// The URL notifications are POSTed to.
    pub fn url(&self) -> String {
        format!("http://{}/notify", self.addr)
    }

    /// Requests received so far.
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// `world` with this service's address configured as outside.
    ///
    /// # Errors
    /// Never in practice: the address always parses as an entry.
    pub fn outside_of(&self, world: ClosedWorld) -> Result<ClosedWorld, ClosedWorldError> {
        world.with_outside(&self.addr.to_string())
    }
}

impl Drop for OutsideService {
    fn drop(&mut self) {
        self.task.abort();
    }
}
