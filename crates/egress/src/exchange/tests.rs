use super::*;

#[test]
fn hop_by_hop_headers_are_removed() {
    let mut h = HeaderMap::new();
    for (name, value) in [
        ("connection", "keep-alive, x-hop"),
        ("x-hop", "1"),
        ("proxy-connection", "keep-alive"),
        ("proxy-authorization", "Basic x"),
        ("keep-alive", "timeout=5"),
        ("te", "trailers"),
        ("transfer-encoding", "chunked"),
        ("upgrade", "websocket"),
        ("authorization", "Bearer kept"),
        ("content-type", "application/json"),
    ] {
        h.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    strip_hop_by_hop(&mut h);
    let mut left: Vec<&str> = h.keys().map(|k| k.as_str()).collect();
    left.sort();
    assert_eq!(left, ["authorization", "content-type"]);
}
