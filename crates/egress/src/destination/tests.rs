use super::*;

/// One row per request sent to the proxy itself: where it is bound.
#[test]
fn destinations_of_plain_requests() {
    for (target, host, want) in [
        (
            "http://Notify.Example/reminders?token=x",
            None,
            Some(("http", "notify.example", 80)),
        ),
        (
            "https://api.notion.com/v1/users",
            None,
            Some(("https", "api.notion.com", 443)),
        ),
        (
            "http://127.0.0.1:8080/",
            None,
            Some(("http", "127.0.0.1", 8080)),
        ),
        ("http://[::1]:81/", None, Some(("http", "::1", 81))),
        (
            "/items/1",
            Some("svc.example:81"),
            Some(("http", "svc.example", 81)),
        ),
        ("/", Some("[::1]"), Some(("http", "::1", 80))),
        ("/", None, None),
        ("ftp://files.example/x", None, None),
    ] {
        let mut b = Request::builder().uri(target);
        if let Some(h) = host {
            b = b.header("host", h);
        }
        let req = b.body(()).unwrap();
        let got = Destination::of_request(&req).map(|d| (d.scheme.to_string(), d.host, d.port));
        let want = want.map(|(s, h, p)| (s.to_owned(), h.to_owned(), p));
        assert_eq!(got, want, "{target} {host:?}");
    }
}

#[test]
fn host_headers_leave_default_ports_out() {
    let d = |scheme: Scheme, host: &str, port| Destination {
        scheme,
        host: host.into(),
        port,
    };
    for (dest, want) in [
        (d(Scheme::HTTPS, "api.example", 443), "api.example"),
        (d(Scheme::HTTPS, "api.example", 8443), "api.example:8443"),
        (d(Scheme::HTTP, "api.example", 80), "api.example"),
        (d(Scheme::HTTP, "::1", 8080), "[::1]:8080"),
    ] {
        assert_eq!(dest.host_header().unwrap(), want);
    }
}
