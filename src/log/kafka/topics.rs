//! How the Kafka backend creates its topics, and what it accepts of existing ones.
//!
//! A topic is the system of record of its stream, so it is created to keep everything
//! (`retention.ms=-1`, `retention.bytes=-1`) with the cluster's replication unless
//! [`TopicSettings`] say otherwise. A topic that already exists is read back
//! (DescribeConfigs): if the broker would delete its old records (finite retention, or
//! compaction), opening it is refused with the fix named, unless the operator set a
//! finite `retention_ms` or `accept_deleting_history` (then it is a warning). Once the
//! broker deletes a topic's first record, its epoch marker, the log cannot open at all.

use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::error::RDKafkaErrorCode;

use super::quiet::Quiet;
use crate::log::config::TopicSettings;
use crate::log::LogError;

/// Creates `topic` (one partition) with `settings`; an existing topic is left as it is.
/// `true` when this call created it: its caller then writes the epoch marker, and
/// every other process opening the topic at the same moment waits for that marker
/// instead of writing one of its own.
pub(super) async fn create(
    admin: &AdminClient<Quiet>,
    topic: &str,
    settings: &TopicSettings,
    timeout: Duration,
) -> Result<bool, LogError> {
    let replication = settings.replication_factor.map_or(-1, i32::from);
    let retention_ms = settings.retention_ms.unwrap_or(-1).to_string();
    let min_insync = settings.min_insync_replicas.map(|n| n.to_string());
    let mut new_topic = NewTopic::new(topic, 1, TopicReplication::Fixed(replication))
        .set("retention.ms", &retention_ms)
        .set("retention.bytes", "-1")
        .set("cleanup.policy", "delete");
    if let Some(min_insync) = &min_insync {
        new_topic = new_topic.set("min.insync.replicas", min_insync);
    }
    let options = AdminOptions::new().operation_timeout(Some(timeout));
    let failed = |reason: String| LogError::Kafka {
        operation: "create topic",
        topic: topic.to_owned(),
        reason,
    };
    let results = admin
        .create_topics([&new_topic], &options)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let mut created = false;
    for result in results {
        match result {
            Ok(_) => created = true,
            Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((_, code)) => return Err(failed(code.to_string())),
        }
    }
    Ok(created)
}

/// Reads `topic`'s settings back and refuses (or warns about) one that deletes history.
pub(super) async fn check(
    admin: &AdminClient<Quiet>,
    brokers: &str,
    topic: &str,
    settings: &TopicSettings,
    timeout: Duration,
) -> Result<(), LogError> {
    let options = AdminOptions::new().request_timeout(Some(timeout));
    let described = admin
        .describe_configs(&[ResourceSpecifier::Topic(topic)], &options)
        .await;
    let entries: Vec<(String, String)> = match described.as_deref() {
        Ok([Ok(resource)]) => resource
            .entries
            .iter()
            .filter_map(|e| Some((e.name.clone(), e.value.clone()?)))
            .collect(),
        other => {
            let reason = match other {
                Err(e) => e.to_string(),
                Ok([Err(code)]) => code.to_string(),
                Ok(_) => "no answer for the topic".into(),
            };
            tracing::warn!(%topic, %reason, "cannot read the topic's settings; whether the broker deletes its history is not checked");
            return Ok(());
        }
    };
    let deleting = deleting_settings(&entries);
    if deleting.is_empty() {
        return Ok(());
    }
    let found = deleting.join(", ");
    if settings.deletes_history() || settings.accept_deleting_history {
        tracing::warn!(%topic, settings = %found, "the broker deletes this topic's old records; once its first record (the epoch marker) is deleted the log cannot open");
        return Ok(());
    }
    Err(LogError::DeletesHistory {
        topic: topic.to_owned(),
        settings: found,
        brokers: brokers.to_owned(),
    })
}

/// The settings among `entries` under which a broker deletes old records.
pub(super) fn deleting_settings(entries: &[(String, String)]) -> Vec<String> {
    entries
        .iter()
        .filter(|(name, value)| match name.as_str() {
            "retention.ms" | "retention.bytes" => value.trim() != "-1",
            "cleanup.policy" => value.split(',').any(|p| p.trim() == "compact"),
            _ => false,
        })
        .map(|(name, value)| format!("{name}={value}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::deleting_settings;

    fn entries(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn finite_retention_and_compaction_delete_history() {
        assert!(deleting_settings(&entries(&[
            ("retention.ms", "-1"),
            ("retention.bytes", "-1"),
            ("cleanup.policy", "delete"),
            ("segment.ms", "604800000"),
        ]))
        .is_empty());
        assert_eq!(
            deleting_settings(&entries(&[
                ("retention.ms", "604800000"),
                ("retention.bytes", "-1"),
                ("cleanup.policy", "compact,delete"),
            ])),
            ["retention.ms=604800000", "cleanup.policy=compact,delete"]
        );
    }
}
