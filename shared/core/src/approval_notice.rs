//! What an approver is told where they work (a chat channel, an e-mail) when an operation
//! starts waiting for their approval, and again shortly before the approval expires: the
//! operation's headline as the console words it (action, amount in words, the payee's
//! name and masked account), the deadline, and the console's link when the deployment
//! has one. Built from the operation's view, which holds no full account number and no
//! secret; pure (the seconds left, read with the database clock, are an input).
//!
//! Also the signature of a webhook delivery, Standard Webhooks style: HMAC-SHA256 over
//! `<id>.<timestamp>.<body>` with the channel's secret, sent as `v1,<base64>`.

use base64::Engine;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use crate::catalogue::Action;
use crate::wording::{expiry_in_words, headline_naming_payee, instant_in_words};

/// Which message: the first, or the reminder before the approval expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    Waiting,
    Reminder,
}

impl NoticeKind {
    pub fn parse(s: &str) -> Option<NoticeKind> {
        match s {
            "waiting" => Some(NoticeKind::Waiting),
            "reminder" => Some(NoticeKind::Reminder),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            NoticeKind::Waiting => "waiting",
            NoticeKind::Reminder => "reminder",
        }
    }
}

/// One message: a subject line (the e-mail's) and the text (the chat message, the
/// e-mail's body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub subject: String,
    pub text: String,
}

/// The message for the operation whose view is `view`, with `seconds_left` to decide and
/// `console_link` its page in the console (none where the deployment has no console).
pub fn approval_notice(
    kind: NoticeKind,
    view: &Value,
    seconds_left: i64,
    console_link: Option<&str>,
) -> Notice {
    let text = |member: &str| view.get(member).and_then(Value::as_str);
    let operation = text("operation_id").unwrap_or("(unknown operation)");
    let tenant = text("tenant_id").unwrap_or("(unknown tenant)");
    let what = match text("action").and_then(Action::parse) {
        Some(action) => headline_naming_payee(
            action,
            text("target"),
            view.get("payload").unwrap_or(&Value::Null),
            view.get("payee"),
        )
        .plain(),
        None => format!(
            "{} (an action this build cannot word)",
            text("action").unwrap_or("?")
        ),
    };
    let deadline = text("approval_expires_at")
        .and_then(|t| t.parse::<DateTime<Utc>>().ok())
        .map(|at| format!("Decide by {}", instant_in_words(at)))
        .unwrap_or_else(|| "Decide".to_owned());
    let (subject, opening) = match kind {
        NoticeKind::Waiting => ("Approval needed", "Waiting for your approval"),
        NoticeKind::Reminder => (
            "Reminder: approval needed",
            "Reminder: still waiting for your approval",
        ),
    };
    let mut lines = vec![
        format!("{opening} in {tenant}: {what}"),
        format!("{deadline} ({}).", expiry_in_words(seconds_left)),
    ];
    match console_link {
        Some(link) => lines.push(format!("Approve or reject: {link}")),
        None => lines.push(format!(
            "Approve or reject operation {operation} with fleetctl or the API."
        )),
    }
    Notice {
        subject: one_line(&format!("{subject}: {what}"), 200),
        text: lines.join("\n"),
    }
}

/// `text` on one line of at most `max` characters (an e-mail subject must not break).
fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

/// Text as a Slack-compatible receiver reads it literally: `&`, `<` and `>` escaped, so
/// that nothing in a payee's name can become a mention (`<!channel>`) or a link.
pub fn chat_escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The `webhook-signature` header's value: `v1,` and the base64 of HMAC-SHA256 with
/// `secret` over `<id>.<timestamp>.<body>` (Standard Webhooks).
pub fn webhook_signature(secret: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes a key of any length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    )
}

/// The key a channel's secret file holds: after `whsec_`, base64 (as Standard Webhooks
/// writes secrets); otherwise the file's text itself. Surrounding blanks are not part of
/// it. `None` for an empty secret or bad base64.
pub fn webhook_key(secret_text: &str) -> Option<Vec<u8>> {
    let t = secret_text.trim();
    let key = match t.strip_prefix("whsec_") {
        Some(b64) => base64::engine::general_purpose::STANDARD.decode(b64).ok()?,
        None => t.as_bytes().to_vec(),
    };
    (!key.is_empty()).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn view() -> Value {
        json!({
            "operation_id": "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8", "tenant_id": "org_482",
            "action": "payment.create", "target": null,
            "payload": {"invoice_id": "inv_9182", "beneficiary_id": "vendor_77", "amount_minor": 1250000, "currency": "KZT"},
            "payee": {"status": "found", "id": "vendor_77", "name": "Vendor 77 LLP", "country": "KZ",
                      "account": {"scheme": "iban", "masked": "KZ•• •••• •••• 4130", "fingerprint": format!("sha256:{}", "a".repeat(64))},
                      "verified": true, "version": 1, "looked_up_at": "2026-11-29T21:59:58Z"},
            "approval_expires_at": "2026-11-29T23:00:00.000000Z"
        })
    }

    #[test]
    fn the_first_message_names_payee_amount_deadline_and_link() {
        let n = approval_notice(
            NoticeKind::Waiting,
            &view(),
            54 * 60,
            Some("https://fleet.example.com/console/operations/op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8"),
        );
        assert_eq!(
            n.text,
            "Waiting for your approval in org_482: Pay 12,500.00 KZT to \"Vendor 77 LLP\" \
             (vendor_77, account KZ•• •••• •••• 4130, for invoice inv_9182)\n\
             Decide by 23:00 UTC on 29 Nov 2026 (expires in 54 min).\n\
             Approve or reject: https://fleet.example.com/console/operations/op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8"
        );
        assert!(n
            .subject
            .starts_with("Approval needed: Pay 12,500.00 KZT to \"Vendor 77 LLP\""));
    }

    #[test]
    fn a_reminder_says_so_and_without_a_console_names_the_operation() {
        let n = approval_notice(NoticeKind::Reminder, &view(), 300, None);
        assert!(n
            .text
            .starts_with("Reminder: still waiting for your approval in org_482"));
        assert!(n.text.contains("(expires in 5 min)"));
        assert!(n.text.ends_with(
            "Approve or reject operation op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8 with fleetctl or the API."
        ));
        assert!(n.subject.starts_with("Reminder: approval needed"));
    }

    #[test]
    fn a_name_cannot_break_the_subject_or_mention_a_channel() {
        let mut v = view();
        v["payee"]["name"] = json!("Acme\r\nBcc: x@y <!channel>");
        let n = approval_notice(NoticeKind::Waiting, &v, 60, None);
        assert!(!n.subject.contains('\n') && !n.subject.contains('\r'));
        assert!(!chat_escaped(&n.text).contains("<!channel>"));
        assert_eq!(NoticeKind::parse("reminder"), Some(NoticeKind::Reminder));
        assert_eq!(
            NoticeKind::parse(NoticeKind::Waiting.as_str()),
            Some(NoticeKind::Waiting)
        );
    }

    #[test]
    fn signatures_follow_standard_webhooks() {
        // The Standard Webhooks specification's example.
        let key = webhook_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            webhook_signature(&key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        assert_eq!(webhook_key("  plain secret\n").unwrap(), b"plain secret");
        assert!(webhook_key("   ").is_none());
        assert!(webhook_key("whsec_***").is_none());
    }
}
