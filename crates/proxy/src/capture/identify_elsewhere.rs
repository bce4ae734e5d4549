//! Whose a commit is ([`Origin`]) on systems other than Linux, where there is no `/proc` to
//! match a writer's client port with the sockets of the upstream's processes
//! (identify.rs does that on Linux). A writer is still told by its application_name (the
//! `PGAPPNAME` each `--stdio` child gets on PostgreSQL) and by `--upstream-addr`; any other
//! is [`Origin::AnyCall`], the position rule, as on Linux when `/proc` cannot show the
//! upstream: never a guess that a write is not ours. Said once, at start-up, in the log.

use crate::capture::writer::{Origin, UpstreamHost, Writer, by_application_name};

/// Tells this proxy's upstream connections from other writers, without `/proc`.
#[derive(Debug)]
pub(crate) struct Identify {
    host: UpstreamHost,
}

impl Identify {
    pub(crate) fn new(host: UpstreamHost) -> Self {
        if !matches!(host, UpstreamHost::Address(_)) {
            tracing::warn!(
                "telling the upstream's database connections by their sockets reads /proc: \
                 not on this platform; a writer named by no application_name of ours is the \
                 upstream's (every call in flight a candidate), unless --upstream-addr says \
                 otherwise"
            );
        }
        Identify { host }
    }

    /// Upstream connection `session` runs in child `pid`: not used without `/proc`.
    pub(crate) fn child(&self, _session: u64, _pid: Option<u32>) {}

    /// Whose a commit written by `writer` is; [`Origin::AnyCall`] when no writer is known.
    pub(crate) fn origin(&self, writer: Option<&Writer>) -> Origin {
        let Some(writer) = writer else {
            return Origin::AnyCall;
        };
        if let Some(origin) = by_application_name(&writer.application_name) {
            return origin;
        }
        match (&self.host, writer.client) {
            (UpstreamHost::Address(ip), Some(client))
                if ip.to_canonical() != client.ip().to_canonical() =>
            {
                Origin::Foreign
            }
            _ => Origin::AnyCall,
        }
    }
}
