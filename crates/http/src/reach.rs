//! [`OutboundRecorder`]: turns one outbound request into an [`OutboundReach`] in the call
//! scope of the tool that made it. The middleware and the tower layer both use it.

use std::sync::Arc;

use hintaudit_core::{
    CallScope, ClosedWorld, Enforcement, Hint, OutboundReach, Refusal, RefusedBy,
};

/// A request enforce mode refused: the tool declares `openWorldHint: false` and the
/// destination is outside the closed world. Nothing was sent. The message names the hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenWorldRefused {
    /// The request that was refused.
    pub reach: OutboundReach,
}

impl std::fmt::Display for OpenWorldRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&Enforcement::message(
            Hint::OpenWorld,
            &format!(
                "hintaudit refused {} to {}, outside the closed world; nothing was sent",
                self.reach.method,
                self.reach.destination()
            ),
        ))
    }
}

impl std::error::Error for OpenWorldRefused {}

/// Records outbound requests in the current [`CallScope`], and says whether each one's
/// destination is inside the closed world. Cheap to clone (one `Arc`).
///
/// The closed world here labels the `hintaudit.outbound` trace event and, in enforce mode,
/// decides which requests are refused ([`OutboundRecorder::admit`]); the judge decides with
/// its own policy's closed world, so give both the same one
/// ([`hintaudit_core::Config::closed_world`]).
#[derive(Debug, Clone, Default)]
pub struct OutboundRecorder {
    world: Arc<ClosedWorld>,
}

impl OutboundRecorder {
    /// A recorder whose events are labelled by `world`.
    pub fn new(world: ClosedWorld) -> Self {
        OutboundRecorder {
            world: Arc::new(world),
        }
    }

    /// The closed world.
    pub fn closed_world(&self) -> &ClosedWorld {
        &self.world
    }

    /// Records a request of `method` to `uri` as [`OutboundRecorder::record`] does, unless
    /// the current call enforces `openWorldHint: false`
    /// ([`hintaudit_core::Enforcement::closed_world`]) and the destination is outside the
    /// closed world: then the request is not recorded as sent, the refusal is recorded in the
    /// call (an `enforced` finding), and the error to hand the tool is returned.
    ///
    /// # Errors
    /// [`OpenWorldRefused`] for a refused request.
    pub fn admit(
        &self,
        method: &http::Method,
        uri: &http::Uri,
    ) -> Result<Option<OutboundReach>, OpenWorldRefused> {
        let scope = CallScope::current();
        if let Some(scope) = scope.filter(|s| s.enforcement().closed_world)
            && let Some(reach) = reach_of(method, uri)
            && !self.world.contains(&reach.host, reach.port)
        {
            trace_outbound(
                scope.effects().tool(),
                &reach,
                false,
                "outbound request refused (openWorldHint: false enforced)",
            );
            scope.effects().record_refusal(Refusal {
                hint: Hint::OpenWorld,
                by: RefusedBy::Hintaudit,
                statement: None,
                what: format!("{} to {}", reach.method, reach.destination()),
            });
            return Err(OpenWorldRefused { reach });
        }
        Ok(self.record(method, uri))
    }

    /// Records a request of `method` to `uri` in the current call scope; returns what was
    /// recorded, or `None` when the request has no host (a relative URI). Outside a call
    /// scope the request is only logged at debug level: no tool call made it.
    pub fn record(&self, method: &http::Method, uri: &http::Uri) -> Option<OutboundReach> {
        let reach = reach_of(method, uri)?;
        let inside = self.world.contains(&reach.host, reach.port);
        match CallScope::current() {
            Some(scope) => {
                trace_outbound(scope.effects().tool(), &reach, inside, "outbound request");
                scope.effects().record_outbound(reach.clone());
            }
            None => tracing::debug!(
                server.address = %reach.host,
                http.request.method = %reach.method,
                "outbound request outside any tool call"
            ),
        }
        Some(reach)
    }
}

/// The request's destination and method; `None` for a relative URI.
fn reach_of(method: &http::Method, uri: &http::Uri) -> Option<OutboundReach> {
    let host = uri.host()?;
    let port = uri.port_u16().or(match uri.scheme_str() {
        Some("https") | Some("wss") => Some(443),
        Some("http") | Some("ws") => Some(80),
        _ => None,
    });
    Some(OutboundReach::new(method.as_str(), host, port))
}

/// The `hintaudit.outbound` debug event of a request made in a call of `tool`: `message`
/// says whether it was sent or refused, `closed_world` whether its destination is inside.
fn trace_outbound(tool: &str, reach: &OutboundReach, closed_world: bool, message: &str) {
    tracing::debug!(
        name: "hintaudit.outbound",
        tool,
        server.address = %reach.host,
        server.port = reach.port,
        http.request.method = %reach.method,
        hintaudit.closed_world = closed_world,
        "{message}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row per (method, URI): what is recorded in the scope.
    #[tokio::test]
    async fn requests_are_recorded_in_the_scope() {
        let cases = [
            (
                "GET",
                "https://API.example.com/x",
                Some(("GET", "api.example.com", Some(443))),
            ),
            (
                "post",
                "http://127.0.0.1:8080/n",
                Some(("POST", "127.0.0.1", Some(8080))),
            ),
            (
                "DELETE",
                "http://[::1]/n",
                Some(("DELETE", "::1", Some(80))),
            ),
            ("PUT", "/relative", None),
        ];
        for (method, uri, want) in cases {
            let recorder = OutboundRecorder::default();
            let scope = CallScope::new("t");
            let effects = scope.effects_handle();
            let method = http::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let uri: http::Uri = uri.parse().unwrap();
            let got = scope.run(async { recorder.record(&method, &uri) }).await;
            let want = want.map(|(m, h, p)| OutboundReach::new(m, h, p));
            assert_eq!(got, want, "{uri}");
            assert_eq!(
                effects.snapshot().outbound,
                want.into_iter().collect::<Vec<_>>()
            );
        }
        // Outside a scope: recorded nowhere, still described.
        let r = OutboundRecorder::default();
        let uri: http::Uri = "http://example.com/".parse().unwrap();
        assert!(r.record(&http::Method::GET, &uri).is_some());
    }
}
