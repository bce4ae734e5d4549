use super::*;

use GraphqlKind::{Mutation as M, Query as Q, Subscription as S, Unknown as X};

fn op(kind: GraphqlKind, name: Option<&str>) -> Option<GraphqlOperation> {
    Some(GraphqlOperation::new(kind, name))
}

/// One row per (document, operationName, at a /graphql path): the operation.
#[test]
fn documents() {
    let two = "query A { a } mutation B { b }";
    for (document, name, at_endpoint, want) in [
        ("{ viewer { login } }", None, true, op(Q, None)),
        (
            "query Viewer { viewer { login } }",
            None,
            false,
            op(Q, Some("Viewer")),
        ),
        (
            "mutation AddComment($b: String!) { addComment(body: $b) { id } }",
            None,
            true,
            op(M, Some("AddComment")),
        ),
        (
            "subscription OnIssue { issue { id } }",
            None,
            true,
            op(S, Some("OnIssue")),
        ),
        (two, Some("B"), true, op(M, Some("B"))),
        (two, Some("A"), true, op(Q, Some("A"))),
        (two, None, true, op(X, None)),
        (two, Some("C"), true, op(X, None)),
        ("fragment F on User { id }", None, true, op(X, None)),
        ("meeting notes", None, false, None),
        ("meeting notes", None, true, op(X, None)),
        ("query", None, false, None),
        ("{ unclosed", None, true, op(X, None)),
    ] {
        assert_eq!(
            operation(document, name, at_endpoint),
            want,
            "{document} {name:?} {at_endpoint}"
        );
    }
}

/// One row per JSON body: the operation (a persisted query is never a read).
#[test]
fn json_bodies() {
    for (body, at_endpoint, want) in [
        (
            r#"{"query":"query Q { a }","variables":{"token":"s3cret"}}"#,
            true,
            op(Q, Some("Q")),
        ),
        (
            r#"{"query":"query A { a } mutation B { b }","operationName":"B"}"#,
            false,
            op(M, Some("B")),
        ),
        (
            r#"{"query":"meeting notes","filter":{"value":"page"}}"#,
            false,
            None,
        ),
        (r#"{"filter":{}}"#, false, None),
        (r#"{"filter":{}}"#, true, op(X, None)),
        (
            r#"{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"ecf4"}}}"#,
            false,
            op(X, None),
        ),
        (
            r#"[{"query":"{ a }"},{"query":"mutation M { m }"}]"#,
            true,
            op(M, Some("M")),
        ),
        (
            r#"[{"query":"{ a }"},{"extensions":{"persistedQuery":{}}}]"#,
            true,
            op(X, None),
        ),
        (
            r#"[{"query":"query A { a }"},{"query":"{ b }"}]"#,
            true,
            op(Q, Some("A")),
        ),
        ("[]", true, op(X, None)),
        ("not json", true, op(X, None)),
        ("not json", false, None),
        ("42", false, None),
    ] {
        assert_eq!(of_json(body.as_bytes(), at_endpoint), want, "{body}");
    }
}

/// One row per GET query string: the operation.
#[test]
fn query_strings() {
    for (query, at_endpoint, want) in [
        (
            "query=%7B%20viewer%20%7B%20login%20%7D%20%7D",
            true,
            op(Q, None),
        ),
        (
            "query=mutation+M+%7B+m+%7D&operationName=M",
            true,
            op(M, Some("M")),
        ),
        (
            "extensions=%7B%22persistedQuery%22%3A%7B%22sha256Hash%22%3A%22ab%22%7D%7D",
            true,
            op(X, None),
        ),
        ("page=2", true, None),
        ("q=meeting", false, None),
    ] {
        assert_eq!(of_query_string(query, at_endpoint), want, "{query}");
    }
}

#[test]
fn endpoints() {
    for (path, want) in [
        ("/graphql", true),
        ("/api/graphql/", true),
        ("/v1/graphqlx", false),
        ("/", false),
    ] {
        assert_eq!(is_endpoint(path), want, "{path}");
    }
}
