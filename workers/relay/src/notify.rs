//! The approvers' notifier, a task of fleet-relay beside publishing: tells the people who
//! approve where they work (chat webhooks, e-mail) that an operation waits for them, and
//! reminds them before the approval expires if it still does (docs/notifications.md).
//!
//! It adds no second delivery path beside the outbox: the notice of an operation that
//! starts waiting is written by the database in the transaction of its `prepared` event,
//! for the tenants that have a channel (the notifier names them to the database first);
//! each look plans unplanned notices into one row per (operation, channel, kind), unique
//! in the table, then claims due rows with a lease (`FOR UPDATE SKIP LOCKED`), sends, and
//! marks each sent. A notifier that dies between a send and its mark leaves the row to be
//! sent once more after the lease, with the same idempotency id (`webhook-id`,
//! `Message-ID`). A failure is retried with a growing pause; it never holds the relay.

mod channels;
mod email;
mod webhook;

use std::sync::Arc;
use std::time::Duration;

use fleet_core::approval_notice::{approval_notice, NoticeKind};
use fleet_runtime::metric_names as m;
use fleet_runtime::Ticker;
use fleet_store::{ClaimedNotification, RelayStore};
use futures_util::future::join_all;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

pub use channels::Channels;
use channels::Target;

use crate::pause;

/// How often the notifier looks for notices to plan and notifications that are due.
pub const LOOK_EVERY: Duration = Duration::from_millis(500);
/// Notices planned and notifications claimed per look.
const PLAN_BATCH: i32 = 100;
const CLAIM_BATCH: i32 = 20;
/// The pause after a failed attempt: 5 s, doubled per attempt, at most 5 min.
fn retry_after_s(attempts: i32) -> f64 {
    (5.0 * 2f64.powi(attempts.clamp(1, 7) - 1)).min(300.0)
}

/// What the notifier was configured with.
pub struct Notifier {
    pub channels: Channels,
    pub reminder_before_s: u64,
    /// The console's public URL, without a trailing slash.
    pub console_url: Option<String>,
    pub lease_s: u64,
}

struct Senders {
    http: reqwest::Client,
    mailer: Option<email::Mailer>,
}

/// The console URL as messages link with it: http(s), a host, no credentials, query or
/// fragment.
pub fn console_url(text: &str) -> Result<String, String> {
    let url = reqwest::Url::parse(text).map_err(|_| {
        "NOTIFY_CONSOLE_URL is not a URL (expected e.g. https://fleet.example.com)".to_owned()
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err("NOTIFY_CONSOLE_URL must be http(s) and name a host".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("NOTIFY_CONSOLE_URL must not carry a user name or password".into());
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err("NOTIFY_CONSOLE_URL must not carry a query or a fragment".into());
    }
    Ok(text.trim_end_matches('/').to_owned())
}

pub fn series_at_zero() {
    for kind in ["webhook", "email"] {
        metrics::counter!(m::NOTIFICATIONS_SENT_TOTAL, "channel_kind" => kind).increment(0);
        metrics::counter!(m::NOTIFICATIONS_FAILED_TOTAL, "channel_kind" => kind).increment(0);
    }
}

/// Runs until `shutdown`.
pub async fn run(store: RelayStore, notifier: Notifier, shutdown: CancellationToken) {
    let timeout = Duration::from_secs(notifier.lease_s) / 2;
    let mailer = match notifier
        .channels
        .smtp
        .as_ref()
        .map(|s| email::mailer(s, timeout))
    {
        Some(Ok(m)) => Some(m),
        Some(Err(e)) => {
            warn!(error = %e, "the SMTP transport could not be set up; e-mail channels fail until a restart");
            None
        }
        None => None,
    };
    let senders = Arc::new(Senders {
        http: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default(),
        mailer,
    });
    let plan = notifier.channels.names_by_tenant();
    info!(
        channels = notifier.channels.count(),
        reminder_before_s = notifier.reminder_before_s,
        console_links = notifier.console_url.is_some(),
        "notifying approvers"
    );
    let tenants = notifier.channels.tenants();
    let mut tenants_set = false;
    let mut ticker = Ticker::new(LOOK_EVERY, shutdown);
    while ticker.tick().await {
        // The database writes notices only for the tenants named here (the first tick is
        // at once); until the list is set, the one left by the last start holds.
        if !tenants_set {
            match store.set_notice_tenants(&tenants).await {
                Ok(held) => {
                    tenants_set = true;
                    info!(tenants = held, "tenants with a channel set for notices");
                }
                Err(e) => {
                    warn!(error = %e, "could not set the tenants with a channel; the next look retries")
                }
            }
        }
        if let Err(e) = store
            .plan_notifications(PLAN_BATCH, &plan, notifier.reminder_before_s)
            .await
        {
            warn!(error = %e, "could not plan notifications; the next look retries");
        }
        let claimed = match store
            .claim_notifications(CLAIM_BATCH, notifier.lease_s)
            .await
        {
            Ok(c) => c,
            Err(e) => {
                warn!(error = %e, "could not claim notifications; the next look retries");
                continue;
            }
        };
        join_all(
            claimed
                .into_iter()
                .map(|n| deliver(&store, &notifier, &senders, n, timeout)),
        )
        .await;
    }
}

async fn deliver(
    store: &RelayStore,
    notifier: &Notifier,
    senders: &Senders,
    n: ClaimedNotification,
    timeout: Duration,
) {
    let (Some(target), Some(kind)) = (
        notifier.channels.get(&n.tenant_id, &n.channel),
        NoticeKind::parse(&n.kind),
    ) else {
        // Planned under an earlier channels file.
        info!(
            notification_id = n.idempotency_id,
            channel = n.channel,
            "channel no longer configured; notification dropped"
        );
        if let Err(e) = store
            .notification_drop(n.id, "channel_not_configured")
            .await
        {
            warn!(error = %e, "could not drop a notification");
        }
        return;
    };
    let link = notifier
        .console_url
        .as_ref()
        .map(|u| format!("{u}/console/operations/{}", n.operation_id));
    let notice = approval_notice(kind, &n.view, n.seconds_left as i64, link.as_deref());
    let sent = match target {
        Target::Webhook { url, key } => {
            webhook::send(
                &senders.http,
                url,
                key.as_deref(),
                &n.idempotency_id,
                &notice,
                timeout,
            )
            .await
        }
        Target::Email { to } => match (&senders.mailer, &notifier.channels.smtp) {
            (Some(mailer), Some(smtp)) => {
                email::send(mailer, &smtp.from, to, &n.idempotency_id, &notice).await
            }
            _ => Err("no SMTP transport".to_owned()),
        },
    };
    pause::point(pause::AFTER_NOTIFY_SEND).await;
    let channel_kind = target.kind();
    match sent {
        Ok(()) => {
            metrics::counter!(m::NOTIFICATIONS_SENT_TOTAL, "channel_kind" => channel_kind)
                .increment(1);
            info!(
                notification_id = n.idempotency_id,
                operation_id = n.operation_id,
                channel = n.channel,
                kind = n.kind,
                "approver notified"
            );
            if let Err(e) = store.notification_sent(n.id).await {
                // Sent but not marked: the lease runs out and it goes once more, same id.
                warn!(error = %e, notification_id = n.idempotency_id, "could not mark a notification sent");
            }
        }
        Err(error) => {
            metrics::counter!(m::NOTIFICATIONS_FAILED_TOTAL, "channel_kind" => channel_kind)
                .increment(1);
            let after = retry_after_s(n.attempts);
            warn!(%error, notification_id = n.idempotency_id, channel = n.channel, attempts = n.attempts, retry_after_s = after, "notification not delivered; retried later");
            if let Err(e) = store.notification_retry(n.id, after, &error).await {
                warn!(error = %e, "could not record a failed notification");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_to_five_minutes() {
        assert_eq!(retry_after_s(1), 5.0);
        assert_eq!(retry_after_s(2), 10.0);
        assert_eq!(retry_after_s(4), 40.0);
        assert_eq!(retry_after_s(7), 300.0);
        assert_eq!(retry_after_s(70), 300.0);
    }

    #[test]
    fn the_console_url_is_checked() {
        assert_eq!(
            console_url("https://fleet.example.com/").unwrap(),
            "https://fleet.example.com"
        );
        assert!(console_url("ftp://x").is_err());
        assert!(console_url("https://u:p@fleet.example.com").is_err());
        assert!(console_url("https://fleet.example.com/?a=1").is_err());
        assert!(console_url("fleet.example.com").is_err());
    }
}
