//! Reading counters from a worker's `/metrics` (Prometheus text format): enough of the
//! format for summing a counter's samples over their labels.

use std::net::SocketAddr;

use fleet_runtime::metric_names as m;

/// The broker counters of one worker process.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct MessageCounts {
    /// Publishes the broker confirmed.
    pub published: f64,
    /// Publishes that failed (not confirmed).
    pub publish_failed: f64,
    /// Deliveries settled (ack, retry or dead letter).
    pub consumed: f64,
}

impl MessageCounts {
    pub fn since(&self, before: &MessageCounts) -> MessageCounts {
        MessageCounts {
            published: self.published - before.published,
            publish_failed: self.publish_failed - before.publish_failed,
            consumed: self.consumed - before.consumed,
        }
    }

    pub fn add(&mut self, other: &MessageCounts) {
        self.published += other.published;
        self.publish_failed += other.publish_failed;
        self.consumed += other.consumed;
    }
}

/// Sum of the samples of `name` whose labels contain `label` (e.g. `outcome="confirmed"`).
fn sum(text: &str, name: &str, label: Option<&str>) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let bare = series.split('{').next()?;
            (bare == name && label.is_none_or(|lb| series.contains(lb)))
                .then(|| value.parse::<f64>().ok())?
        })
        .sum()
}

pub fn message_counts(text: &str) -> MessageCounts {
    MessageCounts {
        // Doorbells and intents, and the relay's outcome events.
        published: sum(
            text,
            m::MESSAGES_PUBLISHED_TOTAL,
            Some("outcome=\"confirmed\""),
        ) + sum(text, m::EVENTS_PUBLISHED_TOTAL, None),
        publish_failed: sum(
            text,
            m::MESSAGES_PUBLISHED_TOTAL,
            Some("outcome=\"failed\""),
        ),
        consumed: sum(text, m::MESSAGES_CONSUMED_TOTAL, None),
    }
}

pub async fn metrics_text(client: &reqwest::Client, admin: SocketAddr) -> anyhow::Result<String> {
    Ok(client
        .get(format!("http://{admin}/metrics"))
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_a_counter_over_its_labels() {
        let text = "# HELP fleet_messages_published_total x\n\
                    fleet_messages_published_total{queue=\"operations.execute\",outcome=\"confirmed\"} 3\n\
                    fleet_messages_published_total{queue=\"operations.reconcile\",outcome=\"confirmed\"} 2\n\
                    fleet_messages_published_total{queue=\"operations.reconcile\",outcome=\"failed\"} 1\n\
                    fleet_messages_consumed_total{queue=\"operations.execute\",outcome=\"ack\"} 7\n\
                    fleet_messages_consumed_totals 100\n";
        let c = message_counts(text);
        assert_eq!((c.published, c.publish_failed, c.consumed), (5.0, 1.0, 7.0));
    }
}
