//! fleet-broker: everything the fleet does with RabbitMQ, over lapin 4.
//!
//! Messages are doorbells, Postgres rows are truth: this crate only has to make sure a
//! bell is rung reliably (publisher confirms, persistent messages, `mandatory`) and that
//! a delivery is settled only after its handler returned (manual acks, bounded
//! prefetch and concurrency, retries parked outside the consumer and bounded,
//! dead-letter with a reason, the broker's delivery limit as a backstop). Losing or duplicating a bell is survivable by design; acking one whose
//! work was not committed is not.
//!
//! - [`topology`]: the one declaration of queues, exchanges and bindings (or, for a
//!   least-privilege user, the check that they exist).
//! - [`permissions`]: what each component's broker user may do, as the broker's
//!   configure / write / read patterns.
//! - [`Publisher`]: publish with confirm, reconnecting on the next call after a failure;
//!   [`Publisher::publish_events`] puts a batch of outcome events on `fleet.events`.
//! - [`consume`] / [`consume_with_health`]: the consumer loop; a [`Handler`] returns a
//!   [`Disposition`] that is mapped to ack / park for a later retry / dead-letter in one
//!   place.
//! - [`BrokerHealth`]: readiness for `/readyz`.
//! - Test helpers: [`delete_namespace`], [`dead_letters`], [`message_count`].

mod config;
mod connection;
mod consumer;
mod dead_letter;
mod disposition;
mod error;
mod health;
mod metric_names;
pub mod permissions;
mod publisher;
mod sender;
mod series;
pub mod topology;
mod trace_header;

pub use config::{
    BrokerConfig, Queue, TopologyMode, CLOSE_TIMEOUT_MS, DEAD_LETTERS_MAX_BATCH,
    DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_DELIVERY_LIMIT, DEFAULT_HEARTBEAT_S, DEFAULT_PREFETCH,
    DEFAULT_RETRY_LIMIT, DRAIN_TIMEOUT_MS, MAX_NAMESPACE_LEN, PUBLISHER_WATCH_INTERVAL_MS,
    PUBLISH_CONFIRM_TIMEOUT_MS, PUBLISH_RECONNECT_ATTEMPTS, RECONNECT_BACKOFF_MAX_MS,
    RECONNECT_BACKOFF_MIN_MS, RETRY_BACKOFF_MAX_MS, RETRY_BACKOFF_MIN_MS,
};
pub use consumer::{consume, consume_with_health};
pub use dead_letter::{
    dead_letters, QUEUE_HEADER, REASON_HEADER, RETRIES_HEADER, WAITING_SINCE_HEADER,
};
pub use disposition::{Delivery, Disposition, Handler, RETRIES_EXHAUSTED};
pub use error::BrokerError;
pub use health::BrokerHealth;
pub use publisher::{DeadLetterReader, EventMessage, EventsPublished, Publisher, TakenDeadLetter};
pub use sender::SENDER_HEADER;
pub use series::{consumer_series_at_zero, publisher_series_at_zero};
pub use topology::{
    dead_letter_count, declare_topology, delete_namespace, ensure_topology, message_count,
    retry_queue_arguments, work_queue_arguments,
};

/// The lapin version this crate is built on, for callers that need its types
/// (for example a `lapin::Channel` for [`declare_topology`]).
pub use lapin;
