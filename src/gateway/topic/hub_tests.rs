//! The hub passes over events nobody can take, without losing them for later subscribers.

use std::sync::Arc;

use orchestrata_schemas::events::Stream;
use serde_json::json;

use super::{Facts, Hub};
use crate::gateway::client::ClientHandle;
use crate::gateway::metrics::Metrics;
use crate::gateway::topic::filter::Filter;

fn hub() -> Hub {
    let metrics = Arc::new(Metrics::new().expect("metrics"));
    Hub::new(Stream::CxpTraffic, "epoch".into(), 10, 16, metrics)
}

fn about(volk: &str) -> Facts {
    Facts {
        volks: vec![volk.to_owned()],
        thread_id: None,
        subject: None,
        delivery_status: Some("queued"),
        event_type: "packet_sent",
        key: "t-1".into(),
        session_id: None,
    }
}

fn subscribe(hub: &Hub, client: &str, filters: serde_json::Value) -> u64 {
    let (handle, _close) = ClientHandle::new(client.into(), 16);
    let filter = Filter::parse(Some(&filters)).expect("filter");
    hub.add(
        Arc::new(handle),
        hub.origin(format!("sub-{client}")),
        Arc::new(filter),
        None,
        0,
    )
}

// ISSUE-15: a topic nobody subscribes to costs no render and no index wait
#[test]
fn an_event_nobody_can_take_is_passed_over_and_a_later_subscription_starts_after_it() {
    let hub = hub();
    assert!(hub.pass_unwanted(10, None), "no subscription at all");
    assert_eq!(hub.next(), 11);
    // A subscription added now is told that sequence 10 is behind the hub: it reads it
    // from the log, as it does every event published before it came.
    assert_eq!(subscribe(&hub, "c1", json!({"volk_id": "U:Vz"})), 11);

    assert!(
        !hub.pass_unwanted(11, None),
        "someone might take it: compute its facts"
    );
    assert!(
        !hub.pass_unwanted(11, Some(&about("U:Vz"))),
        "the filter matches"
    );
    assert_eq!(hub.next(), 11, "not moved past an event to publish");
    assert!(
        hub.pass_unwanted(11, Some(&about("U:Ox"))),
        "no filter matches"
    );
    assert_eq!(hub.next(), 12);

    // A subscription that skips below a sequence does not want what lies below it.
    let (handle, _close) = ClientHandle::new("c2".into(), 16);
    hub.add(
        Arc::new(handle),
        hub.origin("sub-c2".into()),
        Arc::new(Filter::default()),
        None,
        20,
    );
    assert!(hub.pass_unwanted(12, Some(&about("U:Ox"))));
    assert!(!hub.pass_unwanted(20, Some(&about("U:Ox"))));
}
