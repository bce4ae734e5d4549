//! Corrected annotations (`correct_hints`,
//! [design: corrected annotations](../../../docs/design.md#corrected-annotations)): once a
//! tool has a finding at warning or above, every tools/list the layer serves carries its
//! hints tightened to what the evidence shows, and every open session is told with
//! `notifications/tools/list_changed`.
//!
//! The decisions are plain functions ([`correction_for`], [`Correction::served`]); the shell
//! ([`Corrections`]) keeps the corrections in force and the sessions to notify.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hintaudit_core::{
    AuditEvent, AuditStage, CallReport, DeclaredHints, Hint, Recorder, Rule, Severity,
};
use rmcp::model::{InitializeResult, Tool, ToolAnnotations, ToolsCapability};
use rmcp::{Peer, RoleServer};

use crate::guard::guarded;
use crate::registry::hints_of;
use action::ActionCorrections;
use listen::Listeners;
pub(crate) use listen::{accepted_filter, advertise_in_discover, subscription_hooks};

/// Corrected action metadata: `_meta`'s `io.modelcontextprotocol/action-metadata` tightened.
mod action;

/// 2026-07-28 clients: `toolsListChanged` on `subscriptions/listen` streams.
mod listen;

/// The fleet's side: corrections shared through the store of `history_url`.
#[cfg(feature = "shared-history")]
mod fleet;

/// Most tools with a correction in force; a tool beyond it is not corrected (its findings are
/// still recorded).
pub(crate) const MAX_CORRECTED_TOOLS: usize = 10_000;

/// How cautious a hint's value is, as a client reads it (unset is the spec's default): 1 for
/// the cautious reading (may write, may destroy, may repeat with effect, may reach out),
/// 0 for the permissive one.
fn caution(hint: Hint, value: Option<bool>) -> u8 {
    let permissive = match hint {
        Hint::ReadOnly | Hint::Idempotent => Some(true),
        Hint::Destructive | Hint::OpenWorld => Some(false),
    };
    u8::from(value != permissive)
}

fn set(hints: &mut DeclaredHints, hint: Hint, value: Option<bool>) {
    match hint {
        Hint::ReadOnly => hints.read_only = value,
        Hint::Destructive => hints.destructive = value,
        Hint::Idempotent => hints.idempotent = value,
        Hint::OpenWorld => hints.open_world = value,
    }
}

/// A tool's correction: the hints it sets, each with the value served, none less cautious
/// than declared and at least one more cautious.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Correction {
    /// `(hint, value)`, at most one per hint: each more cautious than the declared value.
    tightened: Vec<(Hint, Option<bool>)>,
}

impl Correction {
    /// The hints to serve over `listed` (the server's own, as it lists them now): when the
    /// correction is more cautious than the listing on some hint, every hint of the
    /// correction at least as cautious as the listed one (so an unset `destructiveHint`
    /// becomes the evidenced `true`), the listed hints elsewhere. `None` when the listed
    /// hints are at least as cautious everywhere: the correction is lifted.
    pub(crate) fn served(&self, listed: DeclaredHints) -> Option<DeclaredHints> {
        let stricter = |&(hint, value): &(Hint, Option<bool>)| {
            caution(hint, value) > caution(hint, listed.get(hint))
        };
        if !self.tightened.iter().any(stricter) {
            return None;
        }
        let mut served = listed;
        for &(hint, value) in &self.tightened {
            if caution(hint, value) >= caution(hint, listed.get(hint)) {
                set(&mut served, hint, value);
            }
        }
        Some(served)
    }

    /// This correction with `other`'s hints added, the more cautious value kept per hint.
    fn merged(&self, other: &Correction) -> Correction {
        let mut tightened = self.tightened.clone();
        for &(hint, value) in &other.tightened {
            match tightened.iter_mut().find(|(h, _)| *h == hint) {
                Some(kept) if caution(hint, value) > caution(hint, kept.1) => kept.1 = value,
                Some(_) => {}
                None => tightened.push((hint, value)),
            }
        }
        tightened.sort_by_key(|(h, _)| Hint::ALL.iter().position(|a| a == h));
        Correction { tightened }
    }
}

/// The correction a judged call supports: `None` unless it has a finding at warning or
/// above and the evidence tightens a hint. The hints are `SuggestedHints`' (the report's
/// suggestion), tightened only: readOnlyHint true → false, destructiveHint false → true,
/// idempotentHint true → false, and openWorldHint false → true on `undeclared_open_world`;
/// a suggestion that would loosen a hint (advice) is left out. A tool whose readOnlyHint
/// turns false keeps no declared `destructiveHint: false`: it is true when rows were removed
/// or overwritten, else unset (the cautious default).
pub(crate) fn correction_for(report: &CallReport<'_>) -> Option<Correction> {
    let findings = &report.verdict.findings;
    if !findings.iter().any(|f| f.severity >= Severity::Warning) {
        return None;
    }
    let declared = report.hints;
    let mut target = report.suggestion().map_or(declared, |s| s.corrected);
    if findings.iter().any(|f| f.rule == Rule::UndeclaredOpenWorld) {
        target.open_world = Some(true);
    }
    if declared.read_only == Some(true)
        && target.read_only == Some(false)
        && target.destructive == Some(false)
    {
        target.destructive = None;
    }
    let tightened: Vec<(Hint, Option<bool>)> = Hint::ALL
        .into_iter()
        .filter(|&h| {
            target.get(h) != declared.get(h)
                && caution(h, target.get(h)) >= caution(h, declared.get(h))
        })
        .map(|h| (h, target.get(h)))
        .collect();
    let correction = Correction { tightened };
    correction.served(declared).map(|_| correction)
}

/// Sets `tool`'s annotations' four hints to `hints` (its title and anything else kept).
fn set_hints(tool: &mut Tool, hints: DeclaredHints) {
    let a = tool.annotations.get_or_insert_with(ToolAnnotations::new);
    a.read_only_hint = hints.read_only;
    a.destructive_hint = hints.destructive;
    a.idempotent_hint = hints.idempotent;
    a.open_world_hint = hints.open_world;
}

/// Advertises `tools.listChanged` in an initialize answer: with `correct_hints`, the layer
/// sends `notifications/tools/list_changed` whatever the server does.
pub(crate) fn advertise_list_changed(info: &mut InitializeResult) {
    info.capabilities
        .tools
        .get_or_insert_with(ToolsCapability::default)
        .list_changed = Some(true);
}

/// A correction in force.
struct InForce {
    correction: Correction,
    since: Instant,
    /// Whether the fleet's store holds it (with a shared history): a stored correction the
    /// store no longer has was lifted by the operator, or its time ran out.
    #[cfg_attr(not(feature = "shared-history"), allow(dead_code))]
    stored: bool,
    /// Whether the server's own listing met it, as last served (logged once per change).
    met: bool,
}

/// What the layer's handlers share for `correct_hints`: the corrections in force and the
/// sessions to tell when they change. Cheap to share (`Arc`).
pub(crate) struct Corrections {
    lasts: Option<Duration>,
    tools: Mutex<HashMap<String, InForce>>,
    actions: ActionCorrections,
    peers: Mutex<Vec<Peer<RoleServer>>>,
    /// The open `subscriptions/listen` streams (2026-07-28 clients) to tell likewise.
    listeners: Arc<Listeners>,
    /// The fleet's store, with a shared history: corrections made on any replica are
    /// served by all (fleet.rs).
    #[cfg(feature = "shared-history")]
    fleet: Option<crate::SharedHistory>,
}

impl Corrections {
    /// Corrections served for `lasts` each (`None`: until restart or lifted), shared with
    /// the fleet through `fleet` when given.
    pub(crate) fn new(
        lasts: Option<Duration>,
        #[cfg(feature = "shared-history")] fleet: Option<crate::SharedHistory>,
    ) -> Arc<Self> {
        Arc::new(Corrections {
            lasts,
            tools: Mutex::default(),
            actions: ActionCorrections::default(),
            peers: Mutex::default(),
            listeners: Arc::default(),
            #[cfg(feature = "shared-history")]
            fleet,
        })
    }

    /// How long each correction is served (`None`: until restart or lifted).
    #[cfg_attr(not(feature = "shared-history"), allow(dead_code))]
    pub(crate) fn lasts(&self) -> Option<Duration> {
        self.lasts
    }

    fn tools(&self) -> parking_lot::MutexGuard<'_, HashMap<String, InForce>> {
        self.tools.lock()
    }

    /// Remembers a session to tell of changes (from its initialize request).
    pub(crate) fn register(&self, peer: Peer<RoleServer>) {
        let mut peers = self.peers.lock();
        peers.retain(|p| !p.is_transport_closed());
        peers.push(peer);
    }

    /// Runs one `subscriptions/listen` stream of a 2026-07-28 client: told of corrections
    /// while it is open, the inner server's own `listen` running on it (listen.rs).
    pub(crate) async fn listen<H: rmcp::ServerHandler>(
        &self,
        inner: &H,
        context: rmcp::service::SubscriptionContext,
    ) -> Result<(), rmcp::ErrorData> {
        listen::listen(&self.listeners, inner, context).await
    }

    /// Takes a judged call's correction, if it has one: a new or tightened correction is
    /// recorded (`AuditEvent::Corrected`), put in the fleet's store, and every open session
    /// told.
    pub(crate) fn after_call(
        self: &Arc<Self>,
        report: &CallReport<'_>,
        recorder: &Arc<dyn Recorder>,
    ) {
        if self.actions.after_call(report, self.lasts) {
            self.notify();
        }
        let Some(correction) = correction_for(report) else {
            return;
        };
        let Some((served, merged)) = self.take(report.tool, report.hints, correction) else {
            return;
        };
        guarded(AuditStage::Record, "recorder panicked", || {
            recorder.record(&AuditEvent::Corrected {
                tool: report.tool,
                hints: report.hints,
                corrected: served,
            })
        });
        self.store(report.tool, &merged);
        self.expire_later(report.tool);
        self.notify();
    }

    /// Puts `correction` in force for `tool` (merged with one in force): the hints served
    /// over `declared` and the correction, or `None` when nothing changed (or too many tools
    /// are corrected).
    fn take(
        &self,
        tool: &str,
        declared: DeclaredHints,
        correction: Correction,
    ) -> Option<(DeclaredHints, Correction)> {
        let mut tools = self.tools();
        let old = tools.get(tool).filter(|old| !self.expired(old));
        let merged = match old {
            Some(old) => old.correction.merged(&correction),
            None => correction,
        };
        if old.is_some_and(|old| old.correction == merged)
            || (tools.len() >= MAX_CORRECTED_TOOLS && !tools.contains_key(tool))
        {
            return None;
        }
        let served = merged.served(declared).unwrap_or(declared);
        tools.insert(tool.to_owned(), InForce::new(merged.clone(), false));
        Some((served, merged))
    }

    /// Serves a tools/list answer's tools: each corrected tool gets its corrected hints, every
    /// other tool is left as it is. A tool whose listed hints meet its correction (at least
    /// as cautious everywhere it tightens) is served as listed, and corrected again if a
    /// later listing goes back; a correction whose time is up is lifted.
    pub(crate) fn serve(&self, tools: &mut [Tool]) {
        self.actions.serve(tools, self.lasts);
        let mut in_force = self.tools();
        if in_force.is_empty() {
            return;
        }
        for tool in tools {
            let Some(entry) = in_force.get_mut(tool.name.as_ref()) else {
                continue;
            };
            if self.expired(entry) {
                tracing::info!(tool = %tool.name, "hintaudit: correction ran out");
                in_force.remove(tool.name.as_ref());
                continue;
            }
            let served = entry.correction.served(hints_of(tool));
            if served.is_none() != entry.met {
                entry.met = served.is_none();
                tracing::info!(
                    tool = %tool.name,
                    met = entry.met,
                    "hintaudit: the server's own hints {} the correction",
                    if entry.met { "meet" } else { "no longer meet" }
                );
            }
            if let Some(served) = served {
                set_hints(tool, served);
            }
        }
    }

    /// The operator's lever: lifts `tool`'s correction (in the fleet's store too) and tells
    /// the sessions. Whether one was in force here.
    pub(crate) fn lift(&self, tool: &str) -> bool {
        let lifted = self.tools().remove(tool).is_some();
        self.unstore(tool);
        if lifted {
            tracing::info!(tool, "hintaudit: correction lifted by the operator");
            self.notify();
        }
        lifted
    }

    fn expired(&self, entry: &InForce) -> bool {
        self.lasts.is_some_and(|d| entry.since.elapsed() >= d)
    }

    /// With a limited time, tells the sessions when `tool`'s correction runs out.
    fn expire_later(self: &Arc<Self>, tool: &str) {
        let (Some(lasts), Ok(runtime)) = (self.lasts, tokio::runtime::Handle::try_current()) else {
            return;
        };
        let (this, tool) = (Arc::downgrade(self), tool.to_owned());
        runtime.spawn(async move {
            tokio::time::sleep(lasts).await;
            let Some(this) = this.upgrade() else { return };
            let mut tools = this.tools();
            if tools.get(&tool).is_some_and(|e| this.expired(e)) {
                tools.remove(&tool);
                drop(tools);
                this.notify();
            }
        });
    }

    /// Sends `notifications/tools/list_changed` to every open session and listen stream, on a
    /// task of its own (never on a call's path); closed sessions are forgotten.
    fn notify(&self) {
        let peers: Vec<Peer<RoleServer>> = {
            let mut peers = self.peers.lock();
            peers.retain(|p| !p.is_transport_closed());
            peers.clone()
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        self.listeners.notify(&runtime);
        for peer in peers {
            runtime.spawn(async move {
                if let Err(e) = peer.notify_tool_list_changed().await {
                    tracing::debug!("hintaudit: tools/list_changed not sent: {e}");
                }
            });
        }
    }
}

impl InForce {
    fn new(correction: Correction, stored: bool) -> Self {
        InForce {
            correction,
            since: Instant::now(),
            stored,
            met: false,
        }
    }
}

/// Without the `shared-history` feature there is no fleet: corrections stay in the process.
#[cfg(not(feature = "shared-history"))]
impl Corrections {
    fn store(self: &Arc<Self>, _tool: &str, _correction: &Correction) {}

    fn unstore(&self, _tool: &str) {}

    /// Nothing to learn from a fleet.
    pub(crate) async fn sync(&self) {}
}

#[cfg(test)]
mod tests;
