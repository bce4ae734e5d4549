//! What a request asks of the state behind its API: by the read-only requests named, then its
//! GraphQL operation, then its method (RFC 9110, section 9.2: safe and idempotent methods).

use super::{GraphqlKind, OutboundReach, ReadOnlyRequests};

/// What a request asks of the state behind its API
/// ([design: judging requests](../../../../docs/design.md#judging-requests)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestChange {
    /// Reads: GET, HEAD, OPTIONS, TRACE; a GraphQL query or subscription; a request
    /// `read_only_requests` (or a built-in entry) names.
    Read,
    /// An HTTPS tunnel (CONNECT) whose requests were not seen: an interaction, no known change.
    Tunnel,
    /// Adds: POST, a GraphQL mutation. A repeat adds again.
    Add,
    /// Replaces: PUT. Destructive; a repeat changes nothing more (RFC 9110: idempotent).
    Replace,
    /// Modifies: PATCH. Destructive; a repeat may change again.
    Modify,
    /// Deletes: DELETE. Destructive.
    Delete,
    /// May change, how is not known: another method, or a GraphQL request whose operation is
    /// not known (a persisted query). Never a read.
    Unknown,
}

impl RequestChange {
    /// Whether the request asks for a change (all but [`RequestChange::Read`] and
    /// [`RequestChange::Tunnel`]).
    pub fn writes(self) -> bool {
        !matches!(self, RequestChange::Read | RequestChange::Tunnel)
    }

    /// Whether it removes or overwrites something: PUT, PATCH, DELETE.
    pub fn destructive(self) -> bool {
        matches!(
            self,
            RequestChange::Replace | RequestChange::Modify | RequestChange::Delete
        )
    }

    /// Whether sending it again changes something again: POST, PATCH, a GraphQL mutation.
    pub fn repeats(self) -> bool {
        matches!(self, RequestChange::Add | RequestChange::Modify)
    }
}

impl OutboundReach {
    /// What this request asks, in this order: a request `reads` names is a read; a GraphQL
    /// operation by its type (a query or subscription reads, a mutation adds, an unknown one
    /// may change); else its method. Judged on the path template (a request without a path is
    /// matched as `/`).
    pub fn change(&self, reads: &ReadOnlyRequests) -> RequestChange {
        if self.method == "CONNECT" {
            return RequestChange::Tunnel;
        }
        let template = self.path.as_deref().unwrap_or("/");
        if reads.find(&self.method, &self.host, template).is_some() {
            return RequestChange::Read;
        }
        if let Some(g) = &self.graphql {
            return match g.kind {
                GraphqlKind::Query | GraphqlKind::Subscription => RequestChange::Read,
                GraphqlKind::Mutation => RequestChange::Add,
                GraphqlKind::Unknown => RequestChange::Unknown,
            };
        }
        match self.method.as_str() {
            "GET" | "HEAD" | "OPTIONS" | "TRACE" => RequestChange::Read,
            "POST" => RequestChange::Add,
            "PUT" => RequestChange::Replace,
            "PATCH" => RequestChange::Modify,
            "DELETE" => RequestChange::Delete,
            _ => RequestChange::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbound::GraphqlOperation;

    /// One row per request `(method, host, path, GraphQL operation)`: what it asks, and whether
    /// that writes, destroys and changes again on a repeat.
    #[test]
    fn what_requests_ask() {
        use GraphqlKind as G;
        use RequestChange as C;
        let reads = ReadOnlyRequests::default()
            .with_pattern("POST api.example.com/v1/lookup")
            .unwrap();
        for (method, host, path, graphql, want, writes, destroys, repeats) in [
            (
                "GET",
                "api.example.com",
                "/v1/items",
                None,
                C::Read,
                false,
                false,
                false,
            ),
            (
                "HEAD",
                "api.example.com",
                "/",
                None,
                C::Read,
                false,
                false,
                false,
            ),
            (
                "OPTIONS",
                "api.example.com",
                "*",
                None,
                C::Read,
                false,
                false,
                false,
            ),
            (
                "TRACE",
                "api.example.com",
                "/",
                None,
                C::Read,
                false,
                false,
                false,
            ),
            (
                "CONNECT",
                "api.example.com",
                "/",
                None,
                C::Tunnel,
                false,
                false,
                false,
            ),
            (
                "POST",
                "api.example.com",
                "/v1/items",
                None,
                C::Add,
                true,
                false,
                true,
            ),
            (
                "PUT",
                "api.example.com",
                "/v1/items/7",
                None,
                C::Replace,
                true,
                true,
                false,
            ),
            (
                "PATCH",
                "api.example.com",
                "/v1/items/7",
                None,
                C::Modify,
                true,
                true,
                true,
            ),
            (
                "DELETE",
                "api.example.com",
                "/v1/items/7",
                None,
                C::Delete,
                true,
                true,
                false,
            ),
            (
                "PROPFIND",
                "api.example.com",
                "/",
                None,
                C::Unknown,
                true,
                false,
                false,
            ),
            (
                "POST",
                "api.example.com",
                "/v1/lookup",
                None,
                C::Read,
                false,
                false,
                false,
            ),
            (
                "POST",
                "api.notion.com",
                "/v1/search",
                None,
                C::Read,
                false,
                false,
                false,
            ),
            (
                "POST",
                "api.notion.com",
                "/v1/databases/668d797c76fa49349b05ad288df2d136/query",
                None,
                C::Read,
                false,
                false,
                false,
            ),
            (
                "POST",
                "api.notion.com",
                "/v1/pages",
                None,
                C::Add,
                true,
                false,
                true,
            ),
            (
                "PATCH",
                "api.notion.com",
                "/v1/search",
                None,
                C::Modify,
                true,
                true,
                true,
            ),
            (
                "POST",
                "slack.com",
                "/api/conversations.history",
                None,
                C::Read,
                false,
                false,
                false,
            ),
            (
                "POST",
                "slack.com",
                "/api/chat.postMessage",
                None,
                C::Add,
                true,
                false,
                true,
            ),
            (
                "POST",
                "api.github.com",
                "/graphql",
                Some(G::Query),
                C::Read,
                false,
                false,
                false,
            ),
            (
                "POST",
                "api.github.com",
                "/graphql",
                Some(G::Subscription),
                C::Read,
                false,
                false,
                false,
            ),
            (
                "POST",
                "api.github.com",
                "/graphql",
                Some(G::Mutation),
                C::Add,
                true,
                false,
                true,
            ),
            (
                "GET",
                "api.github.com",
                "/graphql",
                Some(G::Mutation),
                C::Add,
                true,
                false,
                true,
            ),
            (
                "POST",
                "api.github.com",
                "/graphql",
                Some(G::Unknown),
                C::Unknown,
                true,
                false,
                false,
            ),
            (
                "GET",
                "api.github.com",
                "/graphql",
                Some(G::Unknown),
                C::Unknown,
                true,
                false,
                false,
            ),
        ] {
            let mut r = OutboundReach::new(method, host, Some(443)).with_path(path);
            if let Some(kind) = graphql {
                r = r.with_graphql(GraphqlOperation::new(kind, None));
            }
            let c = r.change(&reads);
            let row = format!("{method} {host}{path} {graphql:?}");
            assert_eq!(c, want, "{row}");
            assert_eq!(
                (c.writes(), c.destructive(), c.repeats()),
                (writes, destroys, repeats),
                "{row}"
            );
        }
    }
}
