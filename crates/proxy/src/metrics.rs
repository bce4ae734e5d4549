//! The capture's metrics, read from the [`Capture`] at scrape time:
//! `hintaudit_capture_lag_bytes{backend}`, `hintaudit_capture_commits_total{attribution}` and
//! `hintaudit_capture_gaps_total{backend}`, `hintaudit_capture_pending_calls{backend}`, and the
//! capture's own histogram `hintaudit_capture_commit_to_finding_seconds{backend}`
//! ([design: telemetry names](../../../docs/design.md#5-telemetry-names)).

use std::sync::Mutex;

use hintaudit_telemetry::MetricName;
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntCounterVec, IntGaugeVec, Opts, Registry};

use crate::capture::{Capture, Settled};

/// Exports a capture's lag, settled commits, gaps, pending calls and commit-to-finding
/// latency; every `attribution` value, and the gaps of its backend, are present from the
/// start, at 0.
#[derive(Debug)]
pub struct CaptureMetrics {
    capture: Capture,
    lag: IntGaugeVec,
    commits: IntCounterVec,
    gaps: IntCounterVec,
    pending: IntGaugeVec,
    sync: Mutex<()>,
}

impl CaptureMetrics {
    /// Registers the capture's metrics in `registry` (the recorder's, so `/metrics` serves
    /// them with the rest).
    ///
    /// # Errors
    /// When the names are registered already.
    pub fn register(registry: &Registry, capture: Capture) -> prometheus::Result<()> {
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
        let pending = IntGaugeVec::new(
            opts(MetricName::CapturePendingCalls),
            MetricName::CapturePendingCalls.labels(),
        )?;
        let me = CaptureMetrics {
            capture,
            lag,
            commits,
            gaps,
            pending,
            sync: Mutex::new(()),
        };
        me.sync();
        registry.register(Box::new(me))
    }

    fn sync(&self) {
        let _guard = self.sync.lock().unwrap_or_else(|e| e.into_inner());
        let stats = self.capture.stats();
        self.lag
            .with_label_values(&[self.capture.backend()])
            .set(i64::try_from(stats.lag_bytes).unwrap_or(i64::MAX));
        for (s, value) in Settled::ALL.into_iter().zip(stats.settled) {
            catch_up(&self.commits.with_label_values(&[s.as_str()]), value);
        }
        catch_up(
            &self.gaps.with_label_values(&[self.capture.backend()]),
            stats.gaps,
        );
        self.pending
            .with_label_values(&[self.capture.backend()])
            .set(i64::try_from(stats.pending).unwrap_or(i64::MAX));
    }
}

impl Collector for CaptureMetrics {
    fn desc(&self) -> Vec<&Desc> {
        let mut d = self.lag.desc();
        d.extend(self.commits.desc());
        d.extend(self.gaps.desc());
        d.extend(self.pending.desc());
        d.extend(self.capture.latency().desc());
        d
    }

    fn collect(&self) -> Vec<MetricFamily> {
        self.sync();
        let mut families = self.lag.collect();
        families.extend(self.commits.collect());
        families.extend(self.gaps.collect());
        families.extend(self.pending.collect());
        families.extend(self.capture.latency().collect());
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
