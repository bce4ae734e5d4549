//! Which call a request is: the calls in flight when it arrived. No I/O, no async, no clock.
//!
//! A listener serves one child, so every request it sees is that child's. A request that
//! arrives while calls of one tool are in flight is the call that ends first's (exact with one
//! call in flight at a time, as verify calls tools); while calls of several tools are in
//! flight it is ambiguous: each of them is told, none takes it; with no call in flight it is
//! unattributed, kept with the tool whose call began last. What a call could not see (a tunnel
//! the client refused, a protocol the proxy does not read) is a gap of every call in flight.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::Arc;

use hintaudit_core::{OutboundAnswer, OutboundReach};

/// Requests kept before they are settled (taken by a call, or answered with no call in
/// flight), at most; beyond it the oldest unattributed one is let go, else the new one is not
/// kept and every call in flight has a gap.
pub(crate) const PENDING_MAX: usize = 10_000;
/// Unattributed requests kept, at most; the oldest go first.
pub(crate) const UNATTRIBUTED_MAX: usize = 1_000;

/// A call begun on a listener ([`crate::EgressListener::begin`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallToken(u64);

/// What a call could not see of its child's requests: its evidence is incomplete.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EgressGap {
    /// The client refused the test CA's certificate for `host` (a pinned certificate, or a
    /// root store that reads none of the variables): what it sent there was not seen.
    TlsRefused {
        /// The host of the tunnel.
        host: String,
    },
    /// A tunnel to `destination` carried neither TLS nor HTTP: it was closed, and what the
    /// client meant to send was not seen.
    NotHttp {
        /// `host:port`.
        destination: String,
    },
    /// A protocol upgrade (a WebSocket) to `host`: the request that opened it is kept, what
    /// passed through it was not seen.
    Upgrade {
        /// The host.
        host: String,
    },
    /// Requests past the bound of [`PENDING_MAX`] kept were not recorded.
    Dropped,
}

impl fmt::Display for EgressGap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EgressGap::TlsRefused { host } => write!(
                f,
                "the client refused the test CA for {host} (a pinned certificate, or its own root store): its requests there were not seen"
            ),
            EgressGap::NotHttp { destination } => write!(
                f,
                "a tunnel to {destination} carried neither TLS nor HTTP: closed, not seen"
            ),
            EgressGap::Upgrade { host } => write!(
                f,
                "a protocol upgrade to {host}: what passed through it was not seen"
            ),
            EgressGap::Dropped => write!(f, "requests past {PENDING_MAX} kept were not recorded"),
        }
    }
}

/// A request sent while calls of several tools were in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmbiguousRequest {
    /// The request, as it was when the call ended.
    pub request: OutboundReach,
    /// The tools whose calls were in flight, in the order they began.
    pub tools: Vec<String>,
}

/// A request sent while no call was in flight (at start-up, between calls, after the last).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnattributedRequest {
    /// The request.
    pub request: OutboundReach,
    /// The tool whose call began last before it; `None` before the first call.
    pub after: Option<String>,
}

/// A call's share of its child's requests ([`crate::EgressListener::end`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressShare {
    /// The requests that are the call's, in the order they arrived; one not answered by the
    /// call's end has [`OutboundAnswer::Unanswered`].
    pub requests: Vec<OutboundReach>,
    /// Requests sent while calls of other tools were in flight too: not the call's alone.
    pub ambiguous: Vec<AmbiguousRequest>,
    /// What the call could not see; empty when its evidence is complete.
    pub gaps: Vec<EgressGap>,
}

#[derive(Debug)]
struct InFlight {
    token: CallToken,
    tool: Arc<str>,
    gaps: Vec<EgressGap>,
}

#[derive(Debug)]
struct Pending {
    request: OutboundReach,
    /// The calls in flight when it arrived; empty: unattributed.
    candidates: Vec<CallToken>,
    /// Their tools, each once, in the order the calls began.
    tools: Vec<Arc<str>>,
    after: Option<Arc<str>>,
}

/// The attribution state of one listener.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    next_call: u64,
    next_request: u64,
    calls: Vec<InFlight>,
    pending: BTreeMap<u64, Pending>,
    unattributed: VecDeque<UnattributedRequest>,
    last_tool: Option<Arc<str>>,
}

impl Ledger {
    /// A call of `tool` begins.
    pub(crate) fn begin(&mut self, tool: &str) -> CallToken {
        self.next_call += 1;
        let token = CallToken(self.next_call);
        let tool: Arc<str> = Arc::from(tool);
        self.last_tool = Some(tool.clone());
        self.calls.push(InFlight {
            token,
            tool,
            gaps: Vec::new(),
        });
        token
    }

    /// A request arrived: its id for [`Ledger::answer`], or `None` when it could not be kept.
    pub(crate) fn arrive(&mut self, request: OutboundReach) -> Option<u64> {
        if self.pending.len() >= PENDING_MAX && !self.evict_unattributed() {
            self.gap(EgressGap::Dropped);
            return None;
        }
        self.next_request += 1;
        let mut tools: Vec<Arc<str>> = Vec::new();
        for c in &self.calls {
            if !tools.contains(&c.tool) {
                tools.push(c.tool.clone());
            }
        }
        let pending = Pending {
            request,
            candidates: self.calls.iter().map(|c| c.token).collect(),
            tools,
            after: self.last_tool.clone(),
        };
        self.pending.insert(self.next_request, pending);
        Some(self.next_request)
    }

    /// Request `id` was answered (or failed, or was refused): a request no call was in
    /// flight for is then unattributed for good; one a call already took keeps the answer it
    /// had when the call ended.
    pub(crate) fn answer(&mut self, id: u64, answer: OutboundAnswer) {
        let Some(p) = self.pending.get_mut(&id) else {
            return;
        };
        p.request.answer = answer;
        if p.candidates.is_empty()
            && let Some(p) = self.pending.remove(&id)
        {
            self.unattribute(p);
        }
    }

    /// Something every call in flight could not see.
    pub(crate) fn gap(&mut self, gap: EgressGap) {
        for c in &mut self.calls {
            if !c.gaps.contains(&gap) {
                c.gaps.push(gap.clone());
            }
        }
    }

    /// Whether any call is in flight.
    pub(crate) fn busy(&self) -> bool {
        !self.calls.is_empty()
    }

    /// Call `token` ended: the requests that are its own, those it shared with other tools'
    /// calls, and its gaps. An unknown token gets an empty share.
    pub(crate) fn end(&mut self, token: CallToken) -> EgressShare {
        let Some(at) = self.calls.iter().position(|c| c.token == token) else {
            return EgressShare::default();
        };
        let call = self.calls.remove(at);
        let mut share = EgressShare {
            gaps: call.gaps,
            ..EgressShare::default()
        };
        let ids: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.candidates.contains(&token))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            let Some(p) = self.pending.get_mut(&id) else {
                continue;
            };
            if p.tools.len() == 1 {
                if let Some(p) = self.pending.remove(&id) {
                    share.requests.push(p.request);
                }
                continue;
            }
            share.ambiguous.push(AmbiguousRequest {
                request: p.request.clone(),
                tools: p.tools.iter().map(|t| t.to_string()).collect(),
            });
            p.candidates.retain(|c| *c != token);
            if p.candidates.is_empty() {
                self.pending.remove(&id);
            }
        }
        share
    }

    /// The unattributed requests kept since the last time, in arrival order.
    pub(crate) fn take_unattributed(&mut self) -> Vec<UnattributedRequest> {
        std::mem::take(&mut self.unattributed).into()
    }

    fn unattribute(&mut self, p: Pending) {
        if self.unattributed.len() >= UNATTRIBUTED_MAX {
            self.unattributed.pop_front();
        }
        self.unattributed.push_back(UnattributedRequest {
            request: p.request,
            after: p.after.map(|t| t.to_string()),
        });
    }

    /// Lets the oldest unattributed request go (kept unanswered); whether there was one.
    fn evict_unattributed(&mut self) -> bool {
        let Some(id) = self
            .pending
            .iter()
            .find(|(_, p)| p.candidates.is_empty())
            .map(|(id, _)| *id)
        else {
            return false;
        };
        if let Some(p) = self.pending.remove(&id) {
            self.unattribute(p);
        }
        true
    }
}

#[cfg(test)]
mod tests;
