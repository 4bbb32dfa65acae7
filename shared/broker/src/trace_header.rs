//! The W3C `traceparent` as an AMQP message header: read from a delivery (the intake
//! queue's door, and the doorbells the fleet rings) and written on what the fleet
//! publishes. The value is read as text only; whether it is a trace context at all is
//! `fleet_core::trace_context`'s judgement, made by the handler.

use fleet_core::trace_context::HEADER;
use lapin::types::{AMQPValue, FieldTable, LongString};
use lapin::BasicProperties;

/// The `traceparent` header of a delivery, as text (a long or a short string).
pub(crate) fn traceparent_of(props: &BasicProperties) -> Option<String> {
    match props.headers().as_ref()?.inner().get(HEADER)? {
        AMQPValue::LongString(s) => std::str::from_utf8(s.as_bytes()).ok().map(str::to_owned),
        AMQPValue::ShortString(s) => Some(s.as_str().to_owned()),
        _ => None,
    }
}

/// `props` carrying `traceparent` (when there is one) among its headers.
pub(crate) fn with_traceparent(
    props: BasicProperties,
    traceparent: Option<&str>,
) -> BasicProperties {
    let Some(value) = traceparent else {
        return props;
    };
    let mut headers = props
        .headers()
        .as_ref()
        .map(|h| h.inner().clone())
        .unwrap_or_default();
    headers.insert(
        HEADER.into(),
        AMQPValue::LongString(LongString::from(value.as_bytes().to_vec())),
    );
    props.with_headers(FieldTable::from(headers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_traceparent_reads_back() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let props = with_traceparent(BasicProperties::default(), Some(tp));
        assert_eq!(traceparent_of(&props).as_deref(), Some(tp));
        assert_eq!(traceparent_of(&BasicProperties::default()), None);
        let none = with_traceparent(BasicProperties::default(), None);
        assert_eq!(traceparent_of(&none), None);
    }
}
