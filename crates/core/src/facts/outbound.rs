//! Outbound requests: every host reached; each request outside the closed world; and what
//! those outside it changed.
//!
//! A request whose path the source saw (the egress proxy) is judged by what it asks
//! ([`RequestChange`]): a write when it asks for a change and the destination may have acted
//! on it (a status below 400, or no answer by the call's end), an attempt when it was
//! refused (4xx, 5xx), not forwarded or not delivered; PUT, PATCH and DELETE destructive;
//! POST, PATCH and GraphQL mutations a change a repeat makes again; all `likely`, since a
//! method is a convention the API may not keep. A request without a path (hintaudit-http,
//! verify's recording proxy) is judged by its method alone, as it always was: a mutating
//! method is a confirmed write ([design: judging
//! requests](../../../../docs/design.md#judging-requests)).

use crate::effect::{Effect, OutboundReach};
use crate::facts::collect::Collector;
use crate::finding::Confidence;
use crate::outbound::RequestChange;
use crate::policy::Policy;

/// Adds the hosts `effect` reached, its requests outside `policy`'s closed world, and what
/// those changed, to `c`. A request inside the closed world (a database's HTTP API, a sidecar
/// on loopback) is part of the tool's own environment: its writes are not the outside world's.
pub(super) fn record_outbound<'e>(effect: &'e Effect, policy: &Policy, c: &mut Collector<'e>) {
    for o in &effect.outbound {
        c.host(&o.host);
        if policy.closed_world().contains(&o.host, o.port) {
            continue;
        }
        if o.path.is_some() {
            record_request(o, o.change(policy.read_only_requests()), c);
        } else {
            let text = || format!("outbound {} to {}", o.method, o.destination());
            c.outside(o.is_mutating(), text);
            if o.is_mutating() {
                c.write(Confidence::Confirmed, text);
            }
        }
    }
}

/// A request whose path is known, asking `change`.
fn record_request(o: &OutboundReach, change: RequestChange, c: &mut Collector<'_>) {
    let text = || o.describe();
    let changed = change.writes() && o.answer.delivered();
    c.outside(changed, text);
    if !change.writes() {
        return;
    }
    if !changed {
        c.attempt(Confidence::Likely, text);
        return;
    }
    c.write(Confidence::Likely, text);
    if change.destructive() {
        c.destructive(Confidence::Likely, text);
    }
    if change.repeats() {
        c.net_change(Confidence::Likely, text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effect::OutboundReach;
    use crate::facts::collect::lines;
    use crate::facts::evidence::Wanted;

    /// A case: its name, the requests as `(method, host, port)`, the facts as [`lines`].
    type Case = (
        &'static str,
        Vec<(&'static str, &'static str, Option<u16>)>,
        Vec<&'static str>,
    );

    /// One row per set of requests, `(method, host, port)`: the facts they give under the
    /// default closed world (loopback) with `127.0.0.1:9` configured as outside.
    #[test]
    fn outbound_requests() {
        let cases: Vec<Case> = vec![
            ("none", vec![], vec![]),
            (
                "reads: hosts each once, every request outside",
                vec![
                    ("GET", "api.example.com", Some(443)),
                    ("HEAD", "api.example.com", None),
                    ("OPTIONS", "cdn.example.com", Some(80)),
                ],
                vec![
                    "host: api.example.com",
                    "host: cdn.example.com",
                    "outside: outbound GET to api.example.com:443",
                    "outside: outbound HEAD to api.example.com",
                    "outside: outbound OPTIONS to cdn.example.com:80",
                ],
            ),
            (
                "mutating methods outside: confirmed writes",
                vec![
                    ("POST", "mail.example.com", None),
                    ("DELETE", "::2", Some(8)),
                ],
                vec![
                    "writes: outbound POST to mail.example.com (confirmed)",
                    "writes: outbound DELETE to [::2]:8 (confirmed)",
                    "host: ::2",
                    "host: mail.example.com",
                    "outside: outbound POST to mail.example.com",
                    "outside: outbound DELETE to [::2]:8",
                    "outside_changes: outbound POST to mail.example.com",
                    "outside_changes: outbound DELETE to [::2]:8",
                ],
            ),
            (
                "inside the closed world: hosts only, even a POST",
                vec![
                    ("POST", "127.0.0.1", Some(8080)),
                    ("PUT", "localhost", None),
                ],
                vec!["host: 127.0.0.1", "host: localhost"],
            ),
            (
                "an HTTPS tunnel (CONNECT, verify's proxy): interaction, method unknown",
                vec![("CONNECT", "api.example.com", Some(443))],
                vec![
                    "host: api.example.com",
                    "outside: outbound CONNECT to api.example.com:443",
                ],
            ),
            (
                "loopback configured as outside",
                vec![("PATCH", "127.0.0.1", Some(9))],
                vec![
                    "writes: outbound PATCH to 127.0.0.1:9 (confirmed)",
                    "host: 127.0.0.1",
                    "outside: outbound PATCH to 127.0.0.1:9",
                    "outside_changes: outbound PATCH to 127.0.0.1:9",
                ],
            ),
        ];
        let world = crate::ClosedWorld::default()
            .with_outside("127.0.0.1:9")
            .unwrap();
        let policy = Policy::default().with_closed_world(world);
        for (name, requests, want) in cases {
            let effect = Effect {
                outbound: requests
                    .into_iter()
                    .map(|(method, host, port)| OutboundReach::new(method, host, port))
                    .collect(),
                ..Default::default()
            };
            let mut c = Collector::facts(Wanted::ALL);
            record_outbound(&effect, &policy, &mut c);
            assert_eq!(lines(&c.finish()), want, "{name}");
        }
    }

    /// One row per request whose path is known (the egress proxy's): the facts it gives
    /// under the default policy (loopback closed, the built-in read-only requests).
    #[test]
    fn judged_requests() {
        use crate::outbound::{GraphqlKind, GraphqlOperation, OutboundAnswer};
        let r = |method: &str, path: &str, status: u16| {
            OutboundReach::new(method, "api.example.com", Some(443))
                .with_path(path)
                .with_answer(OutboundAnswer::Status(status))
        };
        let gql =
            |kind| r("POST", "/graphql", 200).with_graphql(GraphqlOperation::new(kind, Some("Op")));
        let cases: Vec<(&str, OutboundReach, Vec<&str>)> = vec![
            (
                "a GET reads: outside only",
                r("GET", "/v1/items/7", 200),
                vec![
                    "host: api.example.com",
                    "outside: outbound GET to api.example.com:443/v1/items/{id} (200)",
                ],
            ),
            (
                "a POST adds: a write and a net change, likely",
                r("POST", "/v1/comments", 201),
                vec![
                    "writes: outbound POST to api.example.com:443/v1/comments (201) (likely)",
                    "net_changes: outbound POST to api.example.com:443/v1/comments (201) (likely)",
                    "host: api.example.com",
                    "outside: outbound POST to api.example.com:443/v1/comments (201)",
                    "outside_changes: outbound POST to api.example.com:443/v1/comments (201)",
                ],
            ),
            (
                "a PUT replaces: destructive, no net change",
                r("PUT", "/v1/items/7", 200),
                vec![
                    "writes: outbound PUT to api.example.com:443/v1/items/{id} (200) (likely)",
                    "destructive: outbound PUT to api.example.com:443/v1/items/{id} (200) (likely)",
                    "host: api.example.com",
                    "outside: outbound PUT to api.example.com:443/v1/items/{id} (200)",
                    "outside_changes: outbound PUT to api.example.com:443/v1/items/{id} (200)",
                ],
            ),
            (
                "a PATCH modifies: destructive and a net change",
                r("PATCH", "/v1/items/7", 200),
                vec![
                    "writes: outbound PATCH to api.example.com:443/v1/items/{id} (200) (likely)",
                    "destructive: outbound PATCH to api.example.com:443/v1/items/{id} (200) (likely)",
                    "net_changes: outbound PATCH to api.example.com:443/v1/items/{id} (200) (likely)",
                    "host: api.example.com",
                    "outside: outbound PATCH to api.example.com:443/v1/items/{id} (200)",
                    "outside_changes: outbound PATCH to api.example.com:443/v1/items/{id} (200)",
                ],
            ),
            (
                "a DELETE refused (404): an attempt, nothing destroyed",
                r("DELETE", "/v1/items/7", 404),
                vec![
                    "attempts: outbound DELETE to api.example.com:443/v1/items/{id} (404) (likely)",
                    "host: api.example.com",
                    "outside: outbound DELETE to api.example.com:443/v1/items/{id} (404)",
                ],
            ),
            (
                "a POST not forwarded: an attempt",
                r("POST", "/v1/x", 200).with_answer(OutboundAnswer::NotForwarded),
                vec![
                    "attempts: outbound POST to api.example.com:443/v1/x (not forwarded) (likely)",
                    "host: api.example.com",
                    "outside: outbound POST to api.example.com:443/v1/x (not forwarded)",
                ],
            ),
            (
                "a DELETE with no answer by the call's end: it was sent, destructive",
                r("DELETE", "/v1/x", 200).with_answer(OutboundAnswer::Unanswered),
                vec![
                    "writes: outbound DELETE to api.example.com:443/v1/x (no answer by the call's end) (likely)",
                    "destructive: outbound DELETE to api.example.com:443/v1/x (no answer by the call's end) (likely)",
                    "host: api.example.com",
                    "outside: outbound DELETE to api.example.com:443/v1/x (no answer by the call's end)",
                    "outside_changes: outbound DELETE to api.example.com:443/v1/x (no answer by the call's end)",
                ],
            ),
            (
                "Notion's search by POST: a built-in read",
                OutboundReach::new("POST", "api.notion.com", Some(443))
                    .with_path("/v1/search")
                    .with_answer(OutboundAnswer::Status(200)),
                vec![
                    "host: api.notion.com",
                    "outside: outbound POST to api.notion.com:443/v1/search (200)",
                ],
            ),
            (
                "a GraphQL query by POST reads",
                gql(GraphqlKind::Query),
                vec![
                    "host: api.example.com",
                    "outside: outbound POST to api.example.com:443/graphql (200): graphql query Op",
                ],
            ),
            (
                "a GraphQL mutation adds",
                gql(GraphqlKind::Mutation),
                vec![
                    "writes: outbound POST to api.example.com:443/graphql (200): graphql mutation Op (likely)",
                    "net_changes: outbound POST to api.example.com:443/graphql (200): graphql mutation Op (likely)",
                    "host: api.example.com",
                    "outside: outbound POST to api.example.com:443/graphql (200): graphql mutation Op",
                    "outside_changes: outbound POST to api.example.com:443/graphql (200): graphql mutation Op",
                ],
            ),
            (
                "a persisted GraphQL query (operation unknown): a possible write, never a read",
                gql(GraphqlKind::Unknown),
                vec![
                    "writes: outbound POST to api.example.com:443/graphql (200): graphql unknown operation (likely)",
                    "host: api.example.com",
                    "outside: outbound POST to api.example.com:443/graphql (200): graphql unknown operation",
                    "outside_changes: outbound POST to api.example.com:443/graphql (200): graphql unknown operation",
                ],
            ),
            (
                "inside the closed world: the host only",
                OutboundReach::new("DELETE", "localhost", Some(8080)).with_path("/x"),
                vec!["host: localhost"],
            ),
        ];
        for (name, reach, want) in cases {
            let effect = Effect {
                outbound: vec![reach],
                ..Default::default()
            };
            let mut c = Collector::facts(Wanted::ALL);
            record_outbound(&effect, &Policy::default(), &mut c);
            assert_eq!(lines(&c.finish()), want, "{name}");
        }
    }
}
