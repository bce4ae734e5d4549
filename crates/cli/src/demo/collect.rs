//! A recorder that keeps what the demo prints: one row per judged call and the latest
//! listing findings per tool.

use parking_lot::Mutex;
use std::sync::Arc;

use hintaudit_core::{AuditEvent, CallStatus, DeclaredHints, Effect, Finding, Recorder};

/// One judged call, owned.
#[derive(Debug, Clone)]
pub struct CallRecord {
    /// The tool.
    pub tool: String,
    /// Its declared hints.
    pub hints: DeclaredHints,
    /// How the call ended.
    pub status: CallStatus,
    /// A one-line summary of the observed effect.
    pub effect: String,
    /// The observed effect.
    pub observed: Effect,
    /// Findings of the call.
    pub findings: Vec<Finding>,
}

/// Keeps every call and the latest listing of every tool. Clone shares the same store.
#[derive(Debug, Clone, Default)]
pub struct Collector {
    inner: Arc<Mutex<Collected>>,
}

/// What a [`Collector`] holds.
#[derive(Debug, Clone, Default)]
pub struct Collected {
    /// Calls in the order they finished.
    pub calls: Vec<CallRecord>,
    /// Per tool, in first-listed order: its hints and listing findings.
    pub listings: Vec<(String, DeclaredHints, Vec<Finding>)>,
    /// Findings settled after their call or listing (a shared history's), in order.
    pub settled: Vec<Finding>,
}

impl Collector {
    /// A copy of everything collected so far.
    pub fn snapshot(&self) -> Collected {
        self.inner.lock().clone()
    }
}

impl Recorder for Collector {
    fn record(&self, event: &AuditEvent<'_>) {
        let mut c = self.inner.lock();
        match event {
            AuditEvent::Call(r) => c.calls.push(CallRecord {
                tool: r.tool.to_owned(),
                hints: r.hints,
                status: r.status,
                effect: r.effect.summary(),
                observed: r.effect.clone(),
                findings: r.verdict.findings.clone(),
            }),
            AuditEvent::Listing {
                tool,
                hints,
                findings,
            } => {
                let entry = (tool.to_string(), *hints, findings.to_vec());
                match c.listings.iter_mut().find(|(t, _, _)| t == tool) {
                    Some(slot) => *slot = entry,
                    None => c.listings.push(entry),
                }
            }
            AuditEvent::Settled { findings, .. } => c.settled.extend(findings.iter().cloned()),
            _ => {}
        }
    }
}
