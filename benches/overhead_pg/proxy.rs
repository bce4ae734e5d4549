//! A loopback TCP proxy in front of PostgreSQL that counts round trips: every
//! `ReadyForQuery` message (`Z`) the server sends ends one round trip of the client (a simple
//! query, or an extended-protocol exchange up to its `Sync`). Counting the protocol instead of
//! instrumenting hintaudit measures what either pool really sends, the same way for both.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A running proxy: its address and its count of round trips so far.
pub struct Proxy {
    pub addr: SocketAddr,
    pub round_trips: Arc<AtomicU64>,
}

impl Proxy {
    /// Round trips counted so far, all connections together.
    pub fn count(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }
}

/// Starts a proxy to `upstream` on an ephemeral loopback port.
pub async fn start(upstream: SocketAddr) -> Proxy {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
    let addr = listener.local_addr().expect("proxy addr");
    let round_trips = Arc::new(AtomicU64::new(0));
    let counter = round_trips.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let Ok(server) = TcpStream::connect(upstream).await else {
                    return;
                };
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let up = tokio::spawn(async move { tokio::io::copy(&mut cr, &mut sw).await });
                let mut scan = Scanner::default();
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = match sr.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    counter.fetch_add(scan.feed(&buf[..n]), Ordering::Relaxed);
                    if cw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
                up.abort();
            });
        }
    });
    Proxy { addr, round_trips }
}

/// Walks the server's message stream (type byte, 4-byte big-endian length including itself)
/// across reads. Connect with `sslmode=disable`: the one server answer without a type byte
/// is the answer to an SSL request.
#[derive(Default)]
struct Scanner {
    /// Bytes of the current message's header seen so far.
    header: Vec<u8>,
    /// Bytes of the current message's body still to skip.
    skip: usize,
}

impl Scanner {
    /// The number of `ReadyForQuery` messages that start in `data`.
    fn feed(&mut self, mut data: &[u8]) -> u64 {
        let mut ready = 0;
        while !data.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(data.len());
                self.skip -= n;
                data = &data[n..];
                continue;
            }
            let need = 5 - self.header.len();
            let n = need.min(data.len());
            self.header.extend_from_slice(&data[..n]);
            data = &data[n..];
            if self.header.len() == 5 {
                if self.header[0] == b'Z' {
                    ready += 1;
                }
                let len = u32::from_be_bytes([
                    self.header[1],
                    self.header[2],
                    self.header[3],
                    self.header[4],
                ]) as usize;
                self.skip = len.saturating_sub(4);
                self.header.clear();
            }
        }
        ready
    }
}
