//! Outbound requests, from HTTP client instrumentation: every host reached, and a confirmed
//! write for each request whose method may change the remote side.

use std::borrow::Cow;

use crate::effect::Effect;
use crate::facts::collect::Collector;
use crate::finding::Confidence;

/// Adds the hosts `effect` reached, and its mutating requests as writes, to `c`.
pub(super) fn record_outbound<'e>(effect: &'e Effect, c: &mut Collector<'e>) {
    for o in &effect.outbound {
        c.facts.hosts.insert(Cow::Borrowed(&o.host));
        if o.is_mutating() {
            c.write(Confidence::Confirmed, || {
                format!("outbound {} to {}", o.method, o.host)
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effect::OutboundReach;
    use crate::facts::collect::lines;
    use crate::facts::evidence::Wanted;

    /// A case: its name, the requests as `(method, host)`, the facts as [`lines`].
    type Case = (
        &'static str,
        Vec<(&'static str, &'static str)>,
        Vec<&'static str>,
    );

    /// One row per set of requests, `(method, host)`: the facts they give.
    #[test]
    fn outbound_requests() {
        let cases: Vec<Case> = vec![
            ("none", vec![], vec![]),
            (
                "reads: hosts only, each once",
                vec![
                    ("GET", "api.example.com"),
                    ("HEAD", "api.example.com"),
                    ("OPTIONS", "cdn.example.com"),
                    ("TRACE", "cdn.example.com"),
                ],
                vec!["host: api.example.com", "host: cdn.example.com"],
            ),
            (
                "mutating methods: confirmed writes",
                vec![("POST", "mail.example.com"), ("DELETE", "api.example.com")],
                vec![
                    "writes: outbound POST to mail.example.com (confirmed)",
                    "writes: outbound DELETE to api.example.com (confirmed)",
                    "host: api.example.com",
                    "host: mail.example.com",
                ],
            ),
        ];
        for (name, requests, want) in cases {
            let effect = Effect {
                outbound: requests
                    .into_iter()
                    .map(|(method, host)| OutboundReach {
                        host: host.into(),
                        method: method.into(),
                    })
                    .collect(),
                ..Default::default()
            };
            let mut c = Collector::new(Wanted::ALL);
            record_outbound(&effect, &mut c);
            assert_eq!(lines(&c.finish()), want, "{name}");
        }
    }
}
