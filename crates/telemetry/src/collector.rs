//! A Prometheus collector over hintaudit-core's process-wide audit counters
//! ([`hintaudit_core::stats`]): `hintaudit_unattributed_statements_total{operation}` and
//! `hintaudit_audit_errors_total{stage}`, read at scrape time so no one has to push them.

use parking_lot::Mutex;

use hintaudit_core::{AuditStage, Operation, stats};
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntCounterVec, Opts};

use crate::metric_name::MetricName;

/// Exports the process-wide audit counters. Every operation and stage is present from the
/// start, at 0. Registering one in several registries is fine: each reads the same atomics.
#[derive(Debug)]
pub(crate) struct AuditStatsCollector {
    unattributed: IntCounterVec,
    errors: IntCounterVec,
    // Serializes scrapes: each brings the counters up to the atomics' values.
    sync: Mutex<()>,
}

fn counter_vec(name: MetricName) -> prometheus::Result<IntCounterVec> {
    IntCounterVec::new(Opts::new(name.as_str(), name.help()), name.labels())
}

impl AuditStatsCollector {
    pub(crate) fn new() -> prometheus::Result<Self> {
        let collector = AuditStatsCollector {
            unattributed: counter_vec(MetricName::UnattributedStatements)?,
            errors: counter_vec(MetricName::AuditErrors)?,
            sync: Mutex::new(()),
        };
        collector.sync();
        Ok(collector)
    }

    fn sync(&self) {
        let _guard = self.sync.lock();
        for op in Operation::ALL {
            catch_up(
                &self.unattributed.with_label_values(&[op.as_str()]),
                stats().unattributed_statements(op),
            );
        }
        for stage in AuditStage::ALL {
            catch_up(
                &self.errors.with_label_values(&[stage.as_str()]),
                stats().audit_errors(stage),
            );
        }
    }
}

fn catch_up(counter: &prometheus::IntCounter, value: u64) {
    let have = counter.get();
    if value > have {
        counter.inc_by(value - have);
    }
}

impl Collector for AuditStatsCollector {
    fn desc(&self) -> Vec<&Desc> {
        let mut d = self.unattributed.desc();
        d.extend(self.errors.desc());
        d
    }

    fn collect(&self) -> Vec<MetricFamily> {
        self.sync();
        let mut families = self.unattributed.collect();
        families.extend(self.errors.collect());
        families
    }
}
