//! Observed effects disclosed (`disclose_effects`,
//! [design: observed effects disclosed](../../../docs/design.md#observed-effects-disclosed)):
//! what one tool call was seen to do, as the JSON object a tools/call result carries in its
//! `_meta` under [`DISCLOSURE_META_KEY`].
//!
//! Plain data from an [`Effect`] and the call's findings: how complete the evidence is,
//! tables with their row counts, files (watched and reported), outbound hosts, findings.
//! Never row data, SQL text, file content or argument values.
//!
//! ```
//! use hintaudit_core::{Disclosure, Effect, EvidenceSource, OutboundReach};
//! use hintaudit_core::files::{ChangeKind, FileChange};
//! let mut effect = Effect::default();
//! effect.outbound.push(OutboundReach::new("post", "API.example.com", Some(443)));
//! effect.files.push(FileChange { path: "notes/a.txt".into(), kind: ChangeKind::Created });
//! let json = Disclosure::of(&effect, &[]).to_json();
//! assert_eq!(json["status"], "observed");
//! assert_eq!(json["outbound"][0]["host"], "api.example.com");
//! assert_eq!(json["files"][0]["target"], "notes/a.txt");
//! assert_eq!(json["files"][0]["change"], "added");
//!
//! effect.completeness.incomplete(EvidenceSource::Files);
//! let json = Disclosure::of(&effect, &[]).to_json();
//! assert_eq!(json["status"], "incomplete");
//! assert_eq!(json["incomplete"][0], "files");
//! ```

use std::collections::BTreeMap;

use serde::Serialize;

use crate::completeness::EvidenceSource;
use crate::effect::{Effect, ExplicitChange, RowOperation, StatementOutcome};
use crate::files::{ChangeKind, FileChange};
use crate::finding::Finding;

/// The `_meta` key of a tools/call result that carries the call's [`Disclosure`] (MCP's
/// reverse-DNS `_meta` prefix rule: `io.hintaudit/`).
pub const DISCLOSURE_META_KEY: &str = "io.hintaudit/effects";

/// What one call was seen to do, as disclosed to the client. Serialized (camelCase) as
/// docs/design.md shows; lists are sorted, so equal effects give equal JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Disclosure {
    /// `observed`: every source read the call's whole interval; `pending`: a source had not
    /// read through the call's end when the answer went back (the lists and findings hold
    /// what was read by then); `incomplete`: a source lost part of the call's interval
    /// ([`crate::EvidenceStatus`]).
    pub status: &'static str,
    /// The sources that had not read through the call's end (and lost none of it), as
    /// [`EvidenceSource::as_str`] names them: `postgresql`, `files`.
    pub pending: Vec<&'static str>,
    /// The sources that lost part of the call's interval.
    pub incomplete: Vec<&'static str>,
    /// Tables the call wrote (committed), by name.
    pub tables: Vec<TableDisclosure>,
    /// Files the call was seen changing in the watched trees (paths as findings show them,
    /// relative to their root), and files the server reported changing (explicit effects on
    /// `file:` targets, paths as reported).
    pub files: Vec<TargetDisclosure>,
    /// Other targets the server reported changing (`queue:mail`).
    pub reported: Vec<TargetDisclosure>,
    /// Hosts the call sent requests to.
    pub outbound: Vec<HostDisclosure>,
    /// The call's findings, most severe first.
    pub findings: Vec<FindingDisclosure>,
}

/// One table the call wrote: committed rows, and the write statements seen on it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TableDisclosure {
    /// The table, lower-cased as the evidence names it.
    pub name: String,
    /// Rows inserted (committed).
    pub inserted: u64,
    /// Rows updated (committed).
    pub updated: u64,
    /// Rows deleted (committed).
    pub deleted: u64,
    /// The write statements that ran on it without error, as SQL keywords (`UPDATE`,
    /// `TRUNCATE`), each once; empty when only rows were seen (the database's log).
    pub operations: Vec<&'static str>,
}

/// A file or another target the server reported changing.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[non_exhaustive]
pub struct TargetDisclosure {
    /// The file's path (without `file:`), or the reported target (`queue:mail`).
    pub target: String,
    /// `added`, `overwritten` or `deleted`.
    pub change: &'static str,
}

/// A host the call reached.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[non_exhaustive]
pub struct HostDisclosure {
    /// The host, lower-cased.
    pub host: String,
    /// The port, where known.
    pub port: Option<u16>,
}

/// One finding of the call: rule, severity, hint and confidence; never its evidence text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FindingDisclosure {
    /// The rule (`read_only_write`).
    pub rule: &'static str,
    /// `info`, `warning` or `critical`.
    pub severity: &'static str,
    /// The hint the finding is about, as the spec names it (`readOnlyHint`).
    pub hint: &'static str,
    /// `confirmed` or `likely`.
    pub confidence: &'static str,
}

impl Disclosure {
    /// The disclosure of a call with `effect` and `findings`; its status from
    /// [`Effect::completeness`].
    pub fn of(effect: &Effect, findings: &[Finding]) -> Disclosure {
        let names = |s: Vec<EvidenceSource>| s.into_iter().map(EvidenceSource::as_str).collect();
        Disclosure {
            status: effect.completeness.status().as_str(),
            pending: names(effect.completeness.pending_sources()),
            incomplete: names(effect.completeness.incomplete_sources()),
            tables: tables(effect),
            files: files(effect),
            reported: targets(effect, false),
            outbound: hosts(effect),
            findings: findings
                .iter()
                .map(|f| FindingDisclosure {
                    rule: f.rule.as_str(),
                    severity: f.severity.as_str(),
                    hint: f.hint.spec_name(),
                    confidence: f.confidence.as_str(),
                })
                .collect(),
        }
    }

    /// The JSON object put under [`DISCLOSURE_META_KEY`].
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// Per table: committed row changes where a hook saw them, else the committed counts of
/// transaction observations (oracle, database log), plus the write statements that ran.
fn tables(effect: &Effect) -> Vec<TableDisclosure> {
    let mut by_name: BTreeMap<&str, TableDisclosure> = BTreeMap::new();
    for r in effect.row_changes.iter().filter(|r| r.committed) {
        let t = entry(&mut by_name, r.table.as_str());
        *match r.operation {
            RowOperation::Insert => &mut t.inserted,
            RowOperation::Update => &mut t.updated,
            RowOperation::Delete => &mut t.deleted,
        } += 1;
    }
    let hooked: Vec<&str> = by_name.keys().copied().collect();
    for o in effect.transactions.iter().filter(|o| o.committed) {
        for w in o
            .tables
            .iter()
            .filter(|w| !hooked.contains(&w.table.as_str()))
        {
            let t = entry(&mut by_name, w.table.as_str());
            t.inserted += w.inserted;
            t.updated += w.updated;
            t.deleted += w.deleted;
        }
    }
    let ran = |s: &&crate::effect::StatementEffect| {
        s.operation.is_write() && s.outcome == StatementOutcome::Ok
    };
    for s in effect.statements.iter().filter(ran) {
        for table in s.tables.iter().filter(|t| !s.session_tables.contains(t)) {
            let t = entry(&mut by_name, table.as_str());
            if !t.operations.contains(&s.operation.as_str()) {
                t.operations.push(s.operation.as_str());
            }
        }
    }
    by_name.into_values().collect()
}

/// `name`'s entry, made empty the first time.
fn entry<'m, 'e>(
    by_name: &'m mut BTreeMap<&'e str, TableDisclosure>,
    name: &'e str,
) -> &'m mut TableDisclosure {
    by_name.entry(name).or_insert_with(|| TableDisclosure {
        name: name.to_owned(),
        ..TableDisclosure::default()
    })
}

/// Reported effects on `file:` targets (`files`), or on any other (`!files`).
fn targets(effect: &Effect, files: bool) -> Vec<TargetDisclosure> {
    let mut out: Vec<TargetDisclosure> = effect
        .explicit
        .iter()
        .filter_map(|e| {
            let target = match e.target.strip_prefix("file:") {
                Some(path) if files => path,
                None if !files => e.target.as_str(),
                _ => return None,
            };
            let change = match e.change {
                ExplicitChange::Add => "added",
                ExplicitChange::Overwrite => "overwritten",
                ExplicitChange::Delete => "deleted",
            };
            Some(TargetDisclosure {
                target: target.to_owned(),
                change,
            })
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The watched files the call changed and the `file:` targets it reported, each once, sorted.
fn files(effect: &Effect) -> Vec<TargetDisclosure> {
    let mut out = targets(effect, true);
    for c in &effect.files {
        watched(c, &mut out);
    }
    out.sort();
    out.dedup();
    out
}

/// A watched path's change as `added` (created, or content only added), `overwritten`
/// (content, mode or kind changed with something replaced or lost, its git repository
/// keeping the old content or not) or `deleted`; a rename is its old path `deleted` and
/// its new path `added`. A change that is none (a reformatted document) is left out.
fn watched(c: &FileChange, out: &mut Vec<TargetDisclosure>) {
    let mut push = |target: &str, change| {
        out.push(TargetDisclosure {
            target: target.to_owned(),
            change,
        });
    };
    if let ChangeKind::RenamedTo(to) = &c.kind {
        push(&c.path, "deleted");
        push(to, "added");
        return;
    }
    if c.kind.is_none() {
        return;
    }
    let change = match &c.kind {
        ChangeKind::Deleted => "deleted",
        ChangeKind::ContentKept(inner) if **inner == ChangeKind::Deleted => "deleted",
        k if k.is_destructive() || matches!(k, ChangeKind::ContentKept(_)) => "overwritten",
        _ => "added",
    };
    push(&c.path, change);
}

/// Every host reached, each once, sorted.
fn hosts(effect: &Effect) -> Vec<HostDisclosure> {
    let mut out: Vec<HostDisclosure> = effect
        .outbound
        .iter()
        .map(|o| HostDisclosure {
            host: o.host.clone(),
            port: o.port,
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests;
