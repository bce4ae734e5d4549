//! The capture's metrics, read from the [`Capture`] at scrape time:
//! `hintaudit_capture_lag_bytes{backend}`, `hintaudit_capture_commits_total{attribution}` and
//! `hintaudit_capture_gaps_total{backend}` (`backend="files"` for `--watch`: inotify queue
//! overflows), `hintaudit_capture_read_bytes_total{backend}`,
//! `hintaudit_capture_pending_calls{backend}`, and the capture's own histogram
//! `hintaudit_capture_commit_to_finding_seconds{backend}`
//! ([design: telemetry names](../../../docs/design.md#5-telemetry-names)).

use parking_lot::Mutex;

use hintaudit_telemetry::MetricName;
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntCounterVec, IntGaugeVec, Opts, Registry};

use crate::capture::{Capture, Settled};
use crate::files::FileWatch;

/// Exports a capture's lag, settled commits, gaps, log bytes read, pending calls and
/// commit-to-finding latency, and a file watch's gaps (`backend="files"`); every
/// `attribution` value, and the gaps of each backend, are present from the start, at 0.
#[derive(Debug)]
pub struct CaptureMetrics {
    capture: Option<Capture>,
    files: Option<FileWatch>,
    lag: IntGaugeVec,
    commits: IntCounterVec,
    gaps: IntCounterVec,
    read: IntCounterVec,
    pending: IntGaugeVec,
    sync: Mutex<()>,
}

impl CaptureMetrics {
    /// Registers the metrics of the capture and of the file watch, those given, in
    /// `registry` (the recorder's, so `/metrics` serves them with the rest).
    ///
    /// # Errors
    /// When the names are registered already.
    pub fn register(
        registry: &Registry,
        capture: Option<Capture>,
        files: Option<FileWatch>,
    ) -> prometheus::Result<()> {
        let opts = |m: MetricName| Opts::new(m.as_str(), m.help());
        let lag = IntGaugeVec::new(
            opts(MetricName::CaptureLag),
            MetricName::CaptureLag.labels(),
        )?;
        let commits = IntCounterVec::new(
            opts(MetricName::CaptureCommits),
            MetricName::CaptureCommits.labels(),
        )?;
        let gaps = IntCounterVec::new(
            opts(MetricName::CaptureGaps),
            MetricName::CaptureGaps.labels(),
        )?;
        let read = IntCounterVec::new(
            opts(MetricName::CaptureReadBytes),
            MetricName::CaptureReadBytes.labels(),
        )?;
        let pending = IntGaugeVec::new(
            opts(MetricName::CapturePendingCalls),
            MetricName::CapturePendingCalls.labels(),
        )?;
        let me = CaptureMetrics {
            capture,
            files,
            lag,
            commits,
            gaps,
            read,
            pending,
            sync: Mutex::new(()),
        };
        me.sync();
        registry.register(Box::new(me))
    }

    fn sync(&self) {
        let _guard = self.sync.lock();
        if let Some(capture) = &self.capture {
            let stats = capture.stats();
            self.lag
                .with_label_values(&[capture.backend()])
                .set(i64::try_from(stats.lag_bytes).unwrap_or(i64::MAX));
            for (s, value) in Settled::ALL.into_iter().zip(stats.settled) {
                catch_up(&self.commits.with_label_values(&[s.as_str()]), value);
            }
            catch_up(
                &self.gaps.with_label_values(&[capture.backend()]),
                stats.gaps,
            );
            catch_up(
                &self.read.with_label_values(&[capture.backend()]),
                stats.read_bytes,
            );
            self.pending
                .with_label_values(&[capture.backend()])
                .set(i64::try_from(stats.pending).unwrap_or(i64::MAX));
        }
        if let Some(files) = &self.files {
            catch_up(&self.gaps.with_label_values(&["files"]), files.stats().gaps);
        }
    }
}

impl Collector for CaptureMetrics {
    fn desc(&self) -> Vec<&Desc> {
        let mut d = self.lag.desc();
        d.extend(self.commits.desc());
        d.extend(self.gaps.desc());
        d.extend(self.read.desc());
        d.extend(self.pending.desc());
        if let Some(capture) = &self.capture {
            d.extend(capture.latency().desc());
        }
        d
    }

    fn collect(&self) -> Vec<MetricFamily> {
        self.sync();
        let mut families = self.lag.collect();
        families.extend(self.commits.collect());
        families.extend(self.gaps.collect());
        families.extend(self.read.collect());
        families.extend(self.pending.collect());
        if let Some(capture) = &self.capture {
            families.extend(capture.latency().collect());
        }
        families
    }
}

/// Raises counter `c` to `value` (the capture's own count, which only grows).
fn catch_up(c: &prometheus::IntCounter, value: u64) {
    let have = c.get();
    if value > have {
        c.inc_by(value - have);
    }
}
