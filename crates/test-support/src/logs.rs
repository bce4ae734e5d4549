//! Log lines captured from a `tracing_subscriber::fmt` subscriber set as this thread's
//! default: a test on a current-thread runtime sees every task's lines.
//!
//! ```
//! let logs = hintaudit_test_support::logs::LogBuffer::default();
//! let _guard = logs.capture(tracing::Level::TRACE);
//! tracing::warn!("egress: api.example.com unreachable");
//! assert!(logs.text().contains("api.example.com unreachable"));
//! ```

use parking_lot::Mutex;
use std::io::Write;
use std::sync::Arc;

/// The lines written so far, shared with the subscriber; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl LogBuffer {
    /// Sets a fmt subscriber (no colours, down to `level`) writing here as this thread's
    /// default, until the guard is dropped.
    pub fn capture(&self, level: tracing::Level) -> tracing::subscriber::DefaultGuard {
        let writer = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_max_level(level)
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    /// Everything written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock()).into_owned()
    }
}

impl Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
