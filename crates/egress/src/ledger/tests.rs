use super::*;

fn req(method: &str) -> OutboundReach {
    OutboundReach::new(method, "api.example.com", Some(443))
        .with_path("/v1/x")
        .with_answer(OutboundAnswer::Unanswered)
}

fn answered(method: &str, status: u16) -> OutboundReach {
    req(method).with_answer(OutboundAnswer::Status(status))
}

#[test]
fn requests_between_calls_are_unattributed() {
    let mut l = Ledger::default();
    let early = l.arrive(req("GET")).unwrap();
    l.answer(early, OutboundAnswer::Status(200));
    let a = l.begin("a");
    let sent = l.arrive(req("POST")).unwrap();
    l.answer(sent, OutboundAnswer::Status(201));
    let share = l.end(a);
    assert_eq!(share.requests, [answered("POST", 201)]);
    assert!(share.ambiguous.is_empty() && share.gaps.is_empty());
    let late = l.arrive(req("PUT")).unwrap();
    l.answer(late, OutboundAnswer::Status(204));
    assert_eq!(l.end(a), EgressShare::default(), "ended already");
    assert_eq!(
        l.take_unattributed(),
        [
            UnattributedRequest {
                request: answered("GET", 200),
                after: None
            },
            UnattributedRequest {
                request: answered("PUT", 204),
                after: Some("a".into())
            },
        ]
    );
    assert!(l.take_unattributed().is_empty(), "taken");
}

#[test]
fn a_request_not_answered_by_the_end_stays_unanswered() {
    let mut l = Ledger::default();
    let a = l.begin("a");
    let id = l.arrive(req("DELETE")).unwrap();
    let share = l.end(a);
    assert_eq!(share.requests, [req("DELETE")]);
    l.answer(id, OutboundAnswer::Status(204));
    assert!(l.take_unattributed().is_empty(), "the call took it");
}

/// Calls of one tool in flight together: the one that ends first takes the requests sent
/// while both were.
#[test]
fn concurrent_calls_of_one_tool_the_first_to_end_takes_it() {
    let mut l = Ledger::default();
    let first = l.begin("search");
    let second = l.begin("search");
    l.arrive(answered("POST", 200)).unwrap();
    let share = l.end(second);
    assert_eq!(share.requests, [answered("POST", 200)]);
    assert_eq!(l.end(first), EgressShare::default());
}

/// Calls of two tools in flight: a request sent meanwhile is each one's ambiguous request,
/// neither's own; one sent after the first ended is the other's.
#[test]
fn concurrent_calls_of_two_tools_are_ambiguous() {
    let mut l = Ledger::default();
    let a = l.begin("read");
    let b = l.begin("write");
    l.arrive(answered("POST", 201)).unwrap();
    let share_a = l.end(a);
    assert!(share_a.requests.is_empty());
    let both = AmbiguousRequest {
        request: answered("POST", 201),
        tools: vec!["read".into(), "write".into()],
    };
    assert_eq!(share_a.ambiguous, std::slice::from_ref(&both));
    l.arrive(answered("DELETE", 204)).unwrap();
    let share_b = l.end(b);
    assert_eq!(share_b.ambiguous, [both]);
    assert_eq!(share_b.requests, [answered("DELETE", 204)]);
    assert!(l.pending.is_empty(), "nothing left behind");
}

#[test]
fn gaps_go_to_every_call_in_flight_once() {
    let mut l = Ledger::default();
    l.gap(EgressGap::Dropped);
    let a = l.begin("a");
    let b = l.begin("b");
    let refused = EgressGap::TlsRefused {
        host: "pinned.example".into(),
    };
    l.gap(refused.clone());
    l.gap(refused.clone());
    assert!(l.busy());
    assert_eq!(l.end(a).gaps, std::slice::from_ref(&refused));
    assert_eq!(l.end(b).gaps, [refused]);
    assert!(!l.busy());
    let c = l.begin("c");
    assert!(l.end(c).gaps.is_empty(), "a gap before a call is not its");
}

/// Past the bound, unattributed requests make room first; with none left, a new request is
/// not kept and every call in flight has a gap.
#[test]
fn the_pending_requests_are_bounded() {
    let mut l = Ledger::default();
    for _ in 0..PENDING_MAX {
        l.arrive(req("GET")).unwrap();
    }
    let a = l.begin("a");
    for _ in 0..PENDING_MAX {
        assert!(l.arrive(req("POST")).is_some());
    }
    assert_eq!(l.take_unattributed().len(), UNATTRIBUTED_MAX);
    assert_eq!(l.arrive(req("POST")), None);
    let share = l.end(a);
    assert_eq!(share.requests.len(), PENDING_MAX);
    assert_eq!(share.gaps, [EgressGap::Dropped]);
}
