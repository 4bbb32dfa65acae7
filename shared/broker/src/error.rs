//! The broker's error type. Each variant says what went wrong in terms a caller can act
//! on; none carries the AMQP URL (it holds a password).

use lapin::protocol::{AMQPErrorKind, AMQPSoftError};

/// Why a broker operation failed.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    /// The configuration can never work; retrying will not help.
    #[error("invalid broker configuration: {0}")]
    Config(String),
    /// No connection within `connect_timeout_ms`.
    #[error("no connection to the broker at {target} within {timeout_ms} ms")]
    ConnectTimeout {
        /// `host:port` only.
        target: String,
        /// The bound that elapsed.
        timeout_ms: u64,
    },
    /// An AMQP call failed (connection lost, channel closed by the broker, refused, ...).
    #[error("AMQP {op} failed: {source}")]
    Amqp {
        /// The AMQP method or step that failed.
        op: &'static str,
        /// lapin's error.
        #[source]
        source: lapin::Error,
    },
    /// A queue or exchange exists with different arguments (PRECONDITION_FAILED on
    /// declare). An operator must reconcile the broker with the code; retrying is futile.
    #[error("broker topology does not match the code ({op}): {source}")]
    TopologyMismatch {
        /// The declaration that was refused.
        op: &'static str,
        /// lapin's error, naming the inequivalent argument.
        #[source]
        source: lapin::Error,
    },
    /// The broker negatively confirmed the publish: it did not take responsibility.
    #[error("the broker nacked the message published to {target}")]
    Nacked {
        /// The queue or exchange published to.
        target: String,
    },
    /// The message was returned unroutable (`mandatory`): nothing was enqueued.
    #[error("the message to {target} was returned unroutable: {reply_code} {reply_text}")]
    Unroutable {
        /// The queue or exchange published to.
        target: String,
        /// AMQP reply code (312 NO_ROUTE).
        reply_code: u16,
        /// AMQP reply text.
        reply_text: String,
    },
    /// An ack was not sent: its channel closed, so the broker will redeliver.
    #[error("the ack of a message from {target} was not sent; it will be redelivered")]
    AckNotSent {
        /// The queue the message came from.
        target: String,
    },
    /// No confirm within the bound: the message may or may not be enqueued.
    #[error("no publisher confirm for {target} within {timeout_ms} ms")]
    ConfirmTimeout {
        /// The queue or exchange published to.
        target: String,
        /// The bound that elapsed.
        timeout_ms: u64,
    },
}

impl BrokerError {
    pub(crate) fn amqp(op: &'static str) -> impl FnOnce(lapin::Error) -> BrokerError {
        move |source| BrokerError::Amqp { op, source }
    }

    /// A declare error: PRECONDITION_FAILED means the broker holds a different shape.
    pub(crate) fn declare(op: &'static str) -> impl FnOnce(lapin::Error) -> BrokerError {
        move |source| {
            if is_precondition_failed(&source) {
                BrokerError::TopologyMismatch { op, source }
            } else {
                BrokerError::Amqp { op, source }
            }
        }
    }

    /// True when retrying cannot help (bad config, topology owned by someone else).
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            BrokerError::Config(_) | BrokerError::TopologyMismatch { .. }
        )
    }

    /// True when the connection or channel that produced this error must be replaced.
    pub(crate) fn breaks_channel(&self) -> bool {
        matches!(
            self,
            BrokerError::Amqp { .. }
                | BrokerError::ConnectTimeout { .. }
                | BrokerError::ConfirmTimeout { .. }
        )
    }
}

fn is_precondition_failed(err: &lapin::Error) -> bool {
    matches!(
        err.kind(),
        lapin::ErrorKind::ProtocolError(e)
            if matches!(e.kind(), AMQPErrorKind::Soft(AMQPSoftError::PRECONDITIONFAILED))
    )
}
