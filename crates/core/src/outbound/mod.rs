//! Outbound requests: what a tool sent to an HTTP API, and what the request asks of the state
//! behind it ([design: judging requests](../../../../docs/design.md#judging-requests)).
//!
//! Sources differ in what they see. hintaudit-http and verify's recording proxy see the
//! method, host and port; the egress proxy (hintaudit-egress), which terminates TLS, also sees
//! the path (kept as a [`path_template`]), the answer's status and the GraphQL operation. A
//! request whose path is known is judged by what it asks ([`RequestChange`]), at `likely`;
//! one whose path is not known is judged by its method alone, as before.
//!
//! ```
//! use hintaudit_core::{OutboundAnswer, OutboundReach, ReadOnlyRequests, RequestChange};
//! let search = OutboundReach::new("POST", "api.notion.com", Some(443))
//!     .with_path("/v1/search?token=s3cr3t")
//!     .with_answer(OutboundAnswer::Status(200));
//! assert_eq!(search.path.as_deref(), Some("/v1/search"));
//! // Notion's search is a read sent as a POST: a built-in read-only request.
//! assert_eq!(search.change(&ReadOnlyRequests::default()), RequestChange::Read);
//! let page = OutboundReach::new("DELETE", "api.notion.com", Some(443))
//!     .with_path("/v1/blocks/c02fc1d3-db8b-45c5-a222-27595b15aea7");
//! assert_eq!(page.path.as_deref(), Some("/v1/blocks/{id}"));
//! assert!(page.change(&ReadOnlyRequests::default()).destructive());
//! ```

/// What a request asks of the state behind its API.
mod change;
/// GraphQL operations: their type and name.
mod graphql;
/// `read_only_requests`: reads sent as writes, and the built-in ones of well-known APIs.
mod reads;
/// Path templates: ids and high-entropy segments collapsed.
mod template;

pub use change::RequestChange;
pub use graphql::{GraphqlKind, GraphqlOperation};
pub use reads::{
    BUILTIN_READ_ONLY_REQUESTS, ReadOnlyRequests, RequestPattern, RequestPatternError,
};
pub use template::path_template;

/// An outbound request a tool made.
///
/// `host`, `port` and `method` come from every source. `path`, `answer` and `graphql` come
/// from sources that see inside the request (the egress proxy); they are `None`,
/// [`OutboundAnswer::Unknown`] and `None` otherwise. No query value, header, cookie or body
/// is ever kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundReach {
    /// The host, lower-cased, without port.
    pub host: String,
    /// The destination port, where known (the URL's, or its scheme's default).
    pub port: Option<u16>,
    /// The request method, upper-cased (`GET`, `POST`, …).
    pub method: String,
    /// The path as a template ([`path_template`]: `/v1/pages/{id}`, no query), where the
    /// source sees it. A request with a path is judged by what it asks ([`RequestChange`]);
    /// one without, by its method alone.
    pub path: Option<String>,
    /// How the request was answered, where the source sees answers.
    pub answer: OutboundAnswer,
    /// The GraphQL operation the request carried, where the source read it.
    pub graphql: Option<GraphqlOperation>,
}

impl OutboundReach {
    /// A request of `method` (upper-cased here) to `host` (lower-cased here) at `port`; no
    /// path, answer or GraphQL operation known.
    pub fn new(method: &str, host: &str, port: Option<u16>) -> Self {
        OutboundReach {
            host: host.trim_matches(['[', ']']).to_lowercase(),
            port,
            method: method.to_uppercase(),
            path: None,
            answer: OutboundAnswer::Unknown,
            graphql: None,
        }
    }

    /// With the path of the request line `path` (its query, if any, is dropped), kept as
    /// its [`path_template`]: the raw path is never stored.
    pub fn with_path(mut self, path: &str) -> Self {
        self.path = Some(path_template(path));
        self
    }

    /// With how the request was answered.
    pub fn with_answer(mut self, answer: OutboundAnswer) -> Self {
        self.answer = answer;
        self
    }

    /// With the GraphQL operation the request carried.
    pub fn with_graphql(mut self, operation: GraphqlOperation) -> Self {
        self.graphql = Some(operation);
        self
    }

    /// `host:port`, or the host alone when the port is unknown (IPv6 in brackets).
    pub fn destination(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match self.port {
            Some(p) => format!("{host}:{p}"),
            None => host,
        }
    }

    /// Whether the method may change the remote side: anything but GET, HEAD, OPTIONS,
    /// TRACE and CONNECT. A CONNECT (an HTTPS tunnel, as `hintaudit verify`'s recording
    /// proxy sees it) hides the method sent through it: it is an interaction, not a known
    /// change of state. Requests with a path are judged by [`OutboundReach::change`] instead.
    pub fn is_mutating(&self) -> bool {
        !matches!(
            self.method.as_str(),
            "GET" | "HEAD" | "OPTIONS" | "TRACE" | "CONNECT"
        )
    }

    /// The evidence text: `outbound POST to api.example.com:443`, followed for a request with
    /// a path by the path template, the answer and the GraphQL operation:
    /// `outbound POST to api.github.com:443/graphql (200): graphql mutation AddComment`.
    pub fn describe(&self) -> String {
        let mut text = format!("outbound {} to {}", self.method, self.destination());
        if let Some(path) = &self.path {
            text.push_str(path);
        }
        if let Some(answer) = self.answer.describe() {
            text.push_str(&format!(" ({answer})"));
        }
        if let Some(g) = &self.graphql {
            text.push_str(&format!(": {g}"));
        }
        text
    }
}

/// How an outbound request was answered, as its source saw it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutboundAnswer {
    /// The source does not see answers (hintaudit-http, verify's recording proxy).
    #[default]
    Unknown,
    /// The destination answered with this HTTP status.
    Status(u16),
    /// Sent on, and no answer had come when the call ended (or the connection broke after
    /// the request was sent): the destination may have acted on it.
    Unanswered,
    /// Not sent on: the egress proxy's forwarding refused it (a host neither routed nor
    /// allowed) and answered `502` itself.
    NotForwarded,
    /// Not delivered: the connection to the destination could not be made (refused, no
    /// route, its TLS certificate not trusted).
    Failed,
}

impl OutboundAnswer {
    /// Whether the destination may have acted on the request: a status below 400, an
    /// unanswered request, or an unknown answer. A 4xx or 5xx status, a request not
    /// forwarded and one never delivered changed nothing (an attempt).
    pub fn delivered(self) -> bool {
        match self {
            OutboundAnswer::Unknown | OutboundAnswer::Unanswered => true,
            OutboundAnswer::Status(s) => s < 400,
            OutboundAnswer::NotForwarded | OutboundAnswer::Failed => false,
        }
    }

    /// The answer in evidence: `201`, `no answer by the call's end`, `not forwarded`, `not
    /// delivered`; `None` when unknown.
    pub fn describe(self) -> Option<String> {
        match self {
            OutboundAnswer::Unknown => None,
            OutboundAnswer::Status(s) => Some(s.to_string()),
            OutboundAnswer::Unanswered => Some("no answer by the call's end".to_owned()),
            OutboundAnswer::NotForwarded => Some("not forwarded".to_owned()),
            OutboundAnswer::Failed => Some("not delivered".to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row per request: its evidence text.
    #[test]
    fn descriptions() {
        let r = |m: &str| OutboundReach::new(m, "API.Example.com", Some(443));
        for (reach, want) in [
            (r("post"), "outbound POST to api.example.com:443"),
            (
                OutboundReach::new("GET", "[::1]", None).with_path("/"),
                "outbound GET to [::1]/",
            ),
            (
                r("POST")
                    .with_path("/v1/pages?secret=x")
                    .with_answer(OutboundAnswer::Status(201)),
                "outbound POST to api.example.com:443/v1/pages (201)",
            ),
            (
                r("POST")
                    .with_path("/graphql")
                    .with_answer(OutboundAnswer::NotForwarded)
                    .with_graphql(GraphqlOperation::new(
                        GraphqlKind::Mutation,
                        Some("AddComment"),
                    )),
                "outbound POST to api.example.com:443/graphql (not forwarded): graphql mutation AddComment",
            ),
            (
                r("DELETE")
                    .with_path("/v1/blocks/1")
                    .with_answer(OutboundAnswer::Unanswered),
                "outbound DELETE to api.example.com:443/v1/blocks/{id} (no answer by the call's end)",
            ),
            (
                r("PUT").with_path("/x").with_answer(OutboundAnswer::Failed),
                "outbound PUT to api.example.com:443/x (not delivered)",
            ),
        ] {
            assert_eq!(reach.describe(), want);
        }
    }

    /// One row per answer: whether the destination may have acted on it.
    #[test]
    fn delivered_answers() {
        for (answer, want) in [
            (OutboundAnswer::Unknown, true),
            (OutboundAnswer::Status(200), true),
            (OutboundAnswer::Status(303), true),
            (OutboundAnswer::Status(399), true),
            (OutboundAnswer::Status(400), false),
            (OutboundAnswer::Status(503), false),
            (OutboundAnswer::Unanswered, true),
            (OutboundAnswer::NotForwarded, false),
            (OutboundAnswer::Failed, false),
        ] {
            assert_eq!(answer.delivered(), want, "{answer:?}");
        }
    }
}
