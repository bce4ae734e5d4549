use super::*;
use hintaudit_core::GraphqlKind::{Mutation as M, Query as Q, Unknown as X};

/// A request head and a body sent in `chunks`.
fn request(method: &str, uri: &str, headers: &[(&str, &str)], chunks: &[&str]) -> (Parts, Body) {
    let mut b = http::Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let (parts, ()) = b.body(()).unwrap().into_parts();
    let frames: Vec<Result<Frame<Bytes>, BoxError>> = chunks
        .iter()
        .map(|c| Ok(Frame::data(Bytes::copy_from_slice(c.as_bytes()))))
        .collect();
    (
        parts,
        BodyExt::boxed(StreamBody::new(futures_util::stream::iter(frames))),
    )
}

async fn bytes(body: Body) -> String {
    String::from_utf8(body.collect().await.unwrap().to_bytes().to_vec()).unwrap()
}

const JSON: (&str, &str) = ("content-type", "application/json; charset=utf-8");

/// One row per request: the operation read, and the body forwarded unchanged.
#[tokio::test]
async fn operations_are_read_and_bodies_forwarded_unchanged() {
    let mutation =
        r#"{"query":"mutation AddComment { addComment { id } }","variables":{"body":"secret"}}"#;
    let (half_a, half_b) = mutation.split_at(20);
    for (method, uri, headers, chunks, limit, want) in [
        (
            "POST",
            "/graphql",
            vec![JSON],
            vec![mutation],
            1024,
            Some((M, Some("AddComment"))),
        ),
        (
            "POST",
            "/graphql",
            vec![JSON],
            vec![half_a, half_b],
            1024,
            Some((M, Some("AddComment"))),
        ),
        (
            "POST",
            "/graphql",
            vec![],
            vec![r#"{"query":"{ viewer { login } }"}"#],
            1024,
            Some((Q, None)),
        ),
        (
            "POST",
            "/graphql",
            vec![JSON],
            vec![half_a, half_b],
            16,
            Some((X, None)),
        ),
        (
            "POST",
            "/v1/search",
            vec![JSON],
            vec![half_a, half_b],
            16,
            None,
        ),
        (
            "POST",
            "/v1/search",
            vec![JSON],
            vec![r#"{"query":"meeting notes"}"#],
            1024,
            None,
        ),
        (
            "POST",
            "/api",
            vec![JSON],
            vec![mutation],
            1024,
            Some((M, Some("AddComment"))),
        ),
        (
            "POST",
            "/graphql?operationName=B",
            vec![("content-type", "application/graphql")],
            vec!["query A { a } mutation B { b }"],
            1024,
            Some((M, Some("B"))),
        ),
        (
            "POST",
            "/graphql",
            vec![JSON, ("content-encoding", "gzip")],
            vec![mutation],
            1024,
            Some((X, None)),
        ),
        (
            "POST",
            "/graphql",
            vec![("content-type", "multipart/form-data; boundary=x")],
            vec!["--x--"],
            1024,
            Some((X, None)),
        ),
        (
            "POST",
            "/graphql",
            vec![JSON, ("content-length", "5000")],
            vec![mutation],
            1024,
            Some((X, None)),
        ),
        (
            "POST",
            "/upload",
            vec![("content-type", "text/plain")],
            vec!["hello"],
            1024,
            None,
        ),
        ("PUT", "/graphql", vec![JSON], vec![mutation], 1024, None),
        (
            "GET",
            "/graphql?query=%7B%20a%20%7D",
            vec![],
            vec![],
            1024,
            Some((Q, None)),
        ),
    ] {
        let sent: String = chunks.concat();
        let (parts, body) = request(method, uri, &headers, &chunks);
        let (body, op) = inspect(&parts, body, limit).await;
        let want = want.map(|(k, n)| GraphqlOperation::new(k, n));
        assert_eq!(op, want, "{method} {uri} {headers:?} limit {limit}");
        assert_eq!(
            bytes(body).await,
            sent,
            "{method} {uri}: forwarded unchanged"
        );
    }
}

/// A body that breaks off while it is read is forwarded as far as it came, then the error.
#[tokio::test]
async fn a_broken_body_forwards_its_error() {
    let frames: Vec<Result<Frame<Bytes>, BoxError>> = vec![
        Ok(Frame::data(Bytes::from_static(b"{\"query\":"))),
        Err("the client hung up".into()),
    ];
    let body = BodyExt::boxed(StreamBody::new(futures_util::stream::iter(frames)));
    let (parts, ()) = http::Request::builder()
        .method("POST")
        .uri("/graphql")
        .header("content-type", "application/json")
        .body(())
        .unwrap()
        .into_parts();
    let (body, op) = inspect(&parts, body, 1024).await;
    assert_eq!(op, Some(GraphqlOperation::new(X, None)));
    assert!(body.collect().await.is_err());
}
