//! Who published a message, as the broker vouches for it, carried through the fleet's own
//! re-publications.
//!
//! RabbitMQ refuses a publish whose `user_id` property is not the publishing connection's
//! user (unless that user is tagged `impersonator`), so a `user_id` on a delivery is a fact
//! the broker checked: it is the *sender*. A message the fleet moves on — parked in a
//! retry queue, filed as a dead letter — is re-published by the consumer's own user, which
//! may not carry another user's `user_id`. So the consumer strips it and writes the sender
//! into the [`SENDER_HEADER`] header instead. A header is something any publisher can
//! write, though; it is believed only on a message that came back from a retry queue,
//! which the broker itself dead-letters to the work queue through the default exchange —
//! an exchange no fleet user may publish to (see [`crate::permissions`]). A message that
//! came in through an entry exchange is judged by its `user_id` alone.

use lapin::types::{AMQPValue, FieldTable, LongString};
use lapin::BasicProperties;

/// The sender of a parked or dead-lettered message (its validated `user_id` when it was
/// first delivered).
pub const SENDER_HEADER: &str = "x-fleet-sender";

/// The default exchange: where the broker dead-letters an expired retry back to its work
/// queue, and where no fleet user may publish.
const RETURNED_FROM_RETRY: &str = "";

/// The sender of a delivery that was published to `exchange` with `props`.
pub(crate) fn sender_of(exchange: &str, props: &BasicProperties) -> Option<String> {
    if let Some(user) = props.user_id() {
        return Some(user.as_str().to_owned());
    }
    if exchange != RETURNED_FROM_RETRY {
        return None;
    }
    match props.headers().as_ref()?.inner().get(SENDER_HEADER)? {
        AMQPValue::LongString(s) => std::str::from_utf8(s.as_bytes()).ok().map(str::to_owned),
        _ => None,
    }
}

/// `props` as the consumer re-publishes them: without `user_id` (the broker would refuse
/// another user's), with [`SENDER_HEADER`] saying `sender` (and only that: a header the
/// publisher wrote itself is dropped).
pub(crate) fn carrying(props: &BasicProperties, sender: Option<&str>) -> BasicProperties {
    let mut headers = props
        .headers()
        .as_ref()
        .map(|h| h.inner().clone())
        .unwrap_or_default();
    headers.remove(SENDER_HEADER);
    if let Some(sender) = sender {
        headers.insert(
            SENDER_HEADER.into(),
            AMQPValue::LongString(LongString::from(sender.as_bytes().to_vec())),
        );
    }
    without_user_id(props).with_headers(FieldTable::from(headers))
}

/// Every property of `props` but `user_id` (lapin has no way to unset one).
fn without_user_id(props: &BasicProperties) -> BasicProperties {
    let mut out = BasicProperties::default();
    // Each property `props` has, set on `out` by its `with_` method.
    macro_rules! keep {
        ($($get:ident => $with:ident),+ $(,)?) => {
            $(
                if let Some(v) = props.$get() {
                    out = out.$with(v.to_owned());
                }
            )+
        };
    }
    keep!(
        content_type => with_content_type,
        content_encoding => with_content_encoding,
        delivery_mode => with_delivery_mode,
        priority => with_priority,
        correlation_id => with_correlation_id,
        reply_to => with_reply_to,
        expiration => with_expiration,
        message_id => with_message_id,
        timestamp => with_timestamp,
        kind => with_type,
        app_id => with_app_id,
        cluster_id => with_cluster_id,
        headers => with_headers,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_header(value: &str) -> BasicProperties {
        let mut h = FieldTable::default();
        h.insert(
            SENDER_HEADER.into(),
            AMQPValue::LongString(value.as_bytes().to_vec().into()),
        );
        BasicProperties::default().with_headers(h)
    }

    #[test]
    fn the_validated_user_id_is_the_sender_whatever_the_headers_say() {
        let props = with_header("victim").with_user_id("agent-a".into());
        assert_eq!(
            sender_of("fleet.to.intents.prepare", &props).as_deref(),
            Some("agent-a")
        );
        assert_eq!(sender_of("", &props).as_deref(), Some("agent-a"));
    }

    #[test]
    fn the_header_counts_only_on_a_message_back_from_its_retry_queue() {
        let forged = with_header("victim");
        assert_eq!(sender_of("fleet.to.intents.prepare", &forged), None);
        assert_eq!(sender_of("", &forged).as_deref(), Some("victim"));
        assert_eq!(sender_of("", &BasicProperties::default()), None);
    }

    #[test]
    fn a_republished_copy_has_no_user_id_and_only_the_sender_the_consumer_saw() {
        let original = with_header("forged")
            .with_user_id("agent-a".into())
            .with_message_id("m-1".into())
            .with_delivery_mode(2);
        let copy = carrying(&original, Some("agent-a"));
        assert_eq!(copy.user_id(), &None);
        assert_eq!(copy.message_id().as_ref().map(|m| m.as_str()), Some("m-1"));
        assert_eq!(copy.delivery_mode(), &Some(2));
        assert_eq!(sender_of("", &copy).as_deref(), Some("agent-a"));
        // A forged header on an anonymous message does not survive the move.
        let anonymous = carrying(&with_header("victim"), None);
        assert_eq!(sender_of("", &anonymous), None);
    }
}
