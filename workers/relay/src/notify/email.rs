//! A delivery by e-mail over SMTP (lettre): plain text, UTF-8, its `Message-ID` made of
//! the notification's idempotency id, so that a resend after a crash can be recognised.
//! STARTTLS or TLS with Mozilla's roots; plain text only to a loopback server (the file's
//! check).

use std::time::Duration;

use fleet_core::approval_notice::Notice;
use lettre::message::{header::ContentType, Mailbox};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use super::channels::{Security, Smtp};

pub type Mailer = AsyncSmtpTransport<Tokio1Executor>;

/// The transport for the file's SMTP server; nothing is connected until the first send.
pub fn mailer(smtp: &Smtp, timeout: Duration) -> Result<Mailer, String> {
    let builder = match smtp.security {
        Security::Tls => Mailer::relay(&smtp.host).map_err(|e| format!("[smtp]: {e}"))?,
        Security::Starttls => {
            Mailer::starttls_relay(&smtp.host).map_err(|e| format!("[smtp]: {e}"))?
        }
        Security::None => Mailer::builder_dangerous(&smtp.host),
    };
    let mut builder = builder.port(smtp.port).timeout(Some(timeout));
    if let Some((user, password)) = &smtp.credentials {
        builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
    }
    Ok(builder.build())
}

/// The `Message-ID` of notification `id`: `<id@domain of the sender>`.
pub fn message_id(id: &str, from: &Mailbox) -> String {
    format!("<{id}@{}>", from.email.domain())
}

pub async fn send(
    mailer: &Mailer,
    from: &Mailbox,
    to: &[Mailbox],
    id: &str,
    notice: &Notice,
) -> Result<(), String> {
    let mut message = Message::builder()
        .from(from.clone())
        .subject(notice.subject.clone())
        .message_id(Some(message_id(id, from)))
        .header(ContentType::TEXT_PLAIN);
    for t in to {
        message = message.to(t.clone());
    }
    let message = message
        .body(notice.text.clone())
        .map_err(|e| format!("the message could not be built: {e}"))?;
    mailer
        .send(message)
        .await
        .map(|_| ())
        .map_err(|e| smtp_failure(&e))
}

/// What went wrong, by kind and reply code only: a server's reply text may repeat an
/// address, which logs must not hold.
fn smtp_failure(e: &lettre::transport::smtp::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_tls() {
        "TLS failed"
    } else if e.is_permanent() {
        "refused it (permanent)"
    } else if e.is_transient() {
        "refused it for now (transient)"
    } else if e.is_client() {
        "was not understood"
    } else {
        "could not be reached or dropped the connection"
    };
    match e.status() {
        Some(code) => format!("the SMTP server {kind}, reply {code}"),
        None => format!("the SMTP server {kind}"),
    }
}
