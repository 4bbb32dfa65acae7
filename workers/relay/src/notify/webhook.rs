//! A delivery to a Slack-compatible incoming webhook: `POST` of `{"text": …}` (what Slack,
//! Mattermost, Rocket.Chat and Teams' incoming webhooks read), with the Standard Webhooks
//! headers: `webhook-id` (the notification's idempotency id, the same on every attempt,
//! so a receiver can drop a resend), `webhook-timestamp` (Unix seconds) and, when the
//! channel has a secret, `webhook-signature` (`v1,<base64 HMAC-SHA256>` over
//! `<id>.<timestamp>.<body>`).

use std::time::Duration;

use fleet_core::approval_notice::{chat_escaped, webhook_signature, Notice};

/// Sends `notice`; the error says what went wrong without the URL (it may be a credential).
pub async fn send(
    http: &reqwest::Client,
    url: &reqwest::Url,
    key: Option<&[u8]>,
    id: &str,
    notice: &Notice,
    timeout: Duration,
) -> Result<(), String> {
    let body = serde_json::to_vec(&serde_json::json!({ "text": chat_escaped(&notice.text) }))
        .map_err(|e| format!("the message could not be written: {e}"))?;
    let timestamp = chrono::Utc::now().timestamp();
    let mut request = http
        .post(url.clone())
        .timeout(timeout)
        .header("content-type", "application/json")
        .header("webhook-id", id)
        .header("webhook-timestamp", timestamp.to_string());
    if let Some(key) = key {
        request = request.header(
            "webhook-signature",
            webhook_signature(key, id, timestamp, &body),
        );
    }
    let answer = request
        .body(body)
        .send()
        .await
        .map_err(|e| format!("the webhook could not be reached: {}", e.without_url()))?;
    let status = answer.status();
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("the webhook answered {}", status.as_u16()))
    }
}
