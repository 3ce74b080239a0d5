//! A commit writes the entries a view created since its last confirmed commit without
//! reading what the store holds under their keys (`Changes::fresh`), and the entries it
//! changed after storing them as replacements: the store stays whole either way (its
//! entry count, checked on every load, matches what it holds).

use orchestrata::projection::ViewStore;
use orchestrata_projections::{PacketIndex, ThreadView};
use orchestrata_schemas::cxp::DeliveryStatus;
use orchestrata_schemas::events::cxp_traffic::PacketDelivered;
use orchestrata_schemas::events::{Event, EventRecord, Stream};

mod projection_support;

use projection_support::{catch_up_and_commit, fill, json, rebuilt_json, sled_log};

// ISSUE-15: new entries are written without a read; an entry stored earlier and changed
// since is replaced, not counted again
#[tokio::test]
async fn a_commit_of_new_and_changed_entries_leaves_the_store_whole() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = sled_log(&dir.path().join("log")).await;
    fill(&log, 5, 600).await;
    let store = ViewStore::open(dir.path().join("views")).expect("open store");
    let mut threads = ThreadView::default();
    let mut packets = PacketIndex::default();
    catch_up_and_commit(log.as_ref(), &store, &mut threads).await;
    catch_up_and_commit(log.as_ref(), &store, &mut packets).await;

    // A packet stored by that commit is delivered; new threads and packets follow.
    let sent = log
        .read(Stream::CxpTraffic, 0, None, 1_000)
        .await
        .expect("read")
        .into_iter()
        .find_map(|e| match e.record.event {
            Event::PacketSent(s) => Some(s.packet),
            _ => None,
        })
        .expect("a packet was sent");
    let delivered = EventRecord::new(
        "test",
        sent.thread_id.clone(),
        PacketDelivered {
            message_id: sent.message_id,
            thread_id: sent.thread_id.clone(),
            to_agent: sent.to_agent.clone(),
        },
        chrono::Utc::now(),
    );
    log.append(&delivered).await.expect("append");
    fill(&log, 9, 200).await;
    catch_up_and_commit(log.as_ref(), &store, &mut threads).await;
    catch_up_and_commit(log.as_ref(), &store, &mut packets).await;

    // Loading checks the stored entry count against the entries read.
    let (loaded, _) = store
        .load::<ThreadView>()
        .expect("the thread view loads")
        .expect("stored");
    assert_eq!(json(&loaded), rebuilt_json::<ThreadView>(&log).await);
    let packet = loaded.packet(&sent.message_id).expect("kept");
    assert_eq!(packet.delivery_status, DeliveryStatus::Delivered);
    let (index, _) = store
        .load::<PacketIndex>()
        .expect("the packet index loads")
        .expect("stored");
    assert_eq!(json(&index), rebuilt_json::<PacketIndex>(&log).await);
}
