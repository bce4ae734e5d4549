//! Outbound requests whose path is known (the egress proxy's), judged against the hints: one
//! row per (requests, hints) case.

use serde_json::json;

use super::*;

/// A request of `method` to api.example.com's `path`, answered `status`.
fn req(method: &str, path: &str, status: u16) -> OutboundReach {
    OutboundReach::new(method, "api.example.com", Some(443))
        .with_path(path)
        .with_answer(OutboundAnswer::Status(status))
}

fn sent(requests: Vec<OutboundReach>) -> Effect {
    Effect {
        outbound: requests,
        ..Default::default()
    }
}

fn graphql(kind: GraphqlKind) -> OutboundReach {
    req("POST", "/graphql", 200).with_graphql(GraphqlOperation::new(kind, Some("Op")))
}

/// One row per (requests, hints): the rules one call gives, and the first finding's
/// confidence.
#[test]
fn one_call_of_requests() {
    let lookup = Policy::default().with_read_only_requests(
        ReadOnlyRequests::default()
            .with_pattern("POST api.example.com/v1/lookup")
            .unwrap(),
    );
    let search = OutboundReach::new("POST", "api.notion.com", Some(443))
        .with_path("/v1/search")
        .with_answer(OutboundAnswer::Status(200));
    let cases: Vec<Case> = vec![
        (
            "read-only GETs",
            Policy::default(),
            hints(T, U, U, T),
            sent(vec![req("GET", "/v1/items", 200)]),
            vec![],
            None,
        ),
        (
            "read-only POSTs",
            Policy::default(),
            hints(T, U, U, T),
            sent(vec![req("POST", "/v1/comments", 201)]),
            vec!["read_only_write"],
            Some(Confidence::Likely),
        ),
        (
            "read-only POST refused by the API: an attempt",
            Policy::default(),
            hints(T, U, U, T),
            sent(vec![req("POST", "/v1/comments", 403)]),
            vec!["read_only_write_attempt"],
            Some(Confidence::Likely),
        ),
        (
            "read-only search by POST (built-in read)",
            Policy::default(),
            hints(T, U, U, T),
            sent(vec![search]),
            vec![],
            None,
        ),
        (
            "read-only lookup by POST, named in read_only_requests",
            lookup.clone(),
            hints(T, U, U, T),
            sent(vec![req("POST", "/v1/lookup", 200)]),
            vec![],
            None,
        ),
        (
            "the same lookup without the entry",
            Policy::default(),
            hints(T, U, U, T),
            sent(vec![req("POST", "/v1/lookup", 200)]),
            vec!["read_only_write"],
            Some(Confidence::Likely),
        ),
        (
            "read-only GraphQL query",
            Policy::default(),
            hints(T, U, U, T),
            sent(vec![graphql(GraphqlKind::Query)]),
            vec![],
            None,
        ),
        (
            "read-only GraphQL mutation",
            Policy::default(),
            hints(T, U, U, T),
            sent(vec![graphql(GraphqlKind::Mutation)]),
            vec!["read_only_write"],
            Some(Confidence::Likely),
        ),
        (
            "read-only persisted GraphQL query: never a read",
            Policy::default(),
            hints(T, U, U, T),
            sent(vec![graphql(GraphqlKind::Unknown)]),
            vec!["read_only_write"],
            Some(Confidence::Likely),
        ),
        (
            "additive tool DELETEs",
            Policy::default(),
            hints(F, F, U, T),
            sent(vec![req("DELETE", "/v1/items/7", 204)]),
            vec!["undeclared_destructive"],
            Some(Confidence::Likely),
        ),
        (
            "additive tool PUTs",
            Policy::default(),
            hints(F, F, U, T),
            sent(vec![req("PUT", "/v1/items/7", 200)]),
            vec!["undeclared_destructive"],
            Some(Confidence::Likely),
        ),
        (
            "additive tool POSTs",
            Policy::default(),
            hints(F, F, U, T),
            sent(vec![req("POST", "/v1/items", 201)]),
            vec![],
            None,
        ),
        (
            "additive tool DELETE refused: nothing destroyed",
            Policy::default(),
            hints(F, F, U, T),
            sent(vec![req("DELETE", "/v1/items/7", 404)]),
            vec![],
            None,
        ),
        (
            "closed-world tool GETs an outside API",
            Policy::default(),
            hints(T, U, U, F),
            sent(vec![req("GET", "/v1/items", 200)]),
            vec!["undeclared_open_world"],
            Some(Confidence::Confirmed),
        ),
        (
            "a request inside the closed world",
            Policy::default(),
            hints(T, F, U, F),
            sent(vec![
                OutboundReach::new("DELETE", "127.0.0.1", Some(9)).with_path("/x"),
            ]),
            vec![],
            None,
        ),
        (
            "without a path, as before: a confirmed write by method",
            Policy::default(),
            hints(T, U, U, T),
            sent(vec![OutboundReach::new(
                "POST",
                "api.example.com",
                Some(443),
            )]),
            vec!["read_only_write"],
            Some(Confidence::Confirmed),
        ),
    ];
    judge_cases(cases);
}

/// One row per (request, idempotentHint): whether the clean repeat of the call is
/// `idempotency_broken`. A POST, a PATCH and a GraphQL mutation sent again change again; a
/// PUT, a DELETE and a read do not.
#[test]
fn repeats_of_requests() {
    for (name, request, want) in [
        (
            "POST again",
            req("POST", "/v1/comments", 201),
            vec!["idempotency_broken"],
        ),
        (
            "PATCH again",
            req("PATCH", "/v1/items/7", 200),
            vec!["idempotency_broken"],
        ),
        (
            "mutation again",
            graphql(GraphqlKind::Mutation),
            vec!["idempotency_broken"],
        ),
        ("PUT again", req("PUT", "/v1/items/7", 200), vec![]),
        ("DELETE again", req("DELETE", "/v1/items/7", 204), vec![]),
        ("GET again", req("GET", "/v1/items/7", 200), vec![]),
        (
            "POST refused again",
            req("POST", "/v1/comments", 400),
            vec![],
        ),
    ] {
        let judge = Judge::new(Policy::default());
        let effect = sent(vec![request]);
        let args = json!({"text": "hi"});
        let call = ToolCall {
            tool: "comment",
            hints: hints(F, T, T, T),
            arguments: Some(&args),
            effect: &effect,
        };
        assert!(
            judge.judge(&call).findings.is_empty(),
            "{name}: the first call"
        );
        let v = judge.judge(&call);
        assert_eq!(rules(&v), want, "{name}");
        if let Some(f) = v.findings.first() {
            assert_eq!(f.confidence, Confidence::Likely, "{name}");
            assert!(
                f.evidence
                    .starts_with("repeat with the same arguments: outbound"),
                "{}",
                f.evidence
            );
        }
    }
}

/// A tool declared destructive whose only requests are Notion searches reads: after the
/// advice threshold it could be read-only.
#[test]
fn searches_by_post_earn_read_only_advice() {
    let judge = Judge::new(Policy::default().with_advice_after_calls(2));
    let effect = sent(vec![
        OutboundReach::new("POST", "api.notion.com", Some(443))
            .with_path("/v1/search")
            .with_answer(OutboundAnswer::Status(200)),
    ]);
    let h = hints(F, T, U, T);
    for _ in 0..2 {
        judge.judge(&ToolCall {
            tool: "search",
            hints: h,
            arguments: None,
            effect: &effect,
        });
    }
    assert_eq!(judge.advice("search", h), vec![Advice::CouldBeReadOnly]);
}
