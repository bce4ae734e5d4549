//! Outbound requests, from HTTP client instrumentation: every host reached; each request
//! outside the closed world; and, for each mutating request outside it, a confirmed write.

use crate::effect::Effect;
use crate::facts::collect::Collector;
use crate::finding::Confidence;
use crate::policy::Policy;

/// Adds the hosts `effect` reached, its requests outside `policy`'s closed world, and its
/// mutating requests outside it as writes, to `c`. A request inside the closed world (a
/// database's HTTP API, a sidecar on loopback) is part of the tool's own environment: its
/// writes are not the outside world's.
pub(super) fn record_outbound<'e>(effect: &'e Effect, policy: &Policy, c: &mut Collector<'e>) {
    for o in &effect.outbound {
        c.host(&o.host);
        if policy.closed_world().contains(&o.host, o.port) {
            continue;
        }
        let text = || format!("outbound {} to {}", o.method, o.destination());
        c.outside(o.is_mutating(), text);
        if o.is_mutating() {
            c.write(Confidence::Confirmed, text);
        }
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
}
