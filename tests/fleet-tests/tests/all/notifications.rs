//! Approvers notified where they work, through the real parts: fleet-relay as a process
//! with a channels file, a real SMTP server on loopback (aiosmtpd, from PyPI, installed by
//! tests/fleet-tests/aiosmtpd.sh and run with tests/fleet-tests/smtp_sink.py), and a
//! webhook receiver served by this test (axum) that records every delivery and checks its
//! Standard Webhooks signature. Intents go through the real prepare worker and Postgres;
//! the notices come from the `prepared` outbox rows.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use base64::Engine;
use fleet_tests::{
    admin_url_of, eventually, eventually_within, fixed_port, hash_of, intent, op_of, scrape,
    TestFleet,
};
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;
use tokio::io::{AsyncBufReadExt, BufReader};

const TENANT: &str = "org_482";
/// A tenant with no channel in the file.
const QUIET_TENANT: &str = "org_quiet";
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const PAYEE: &str = "acme_1";
const PAYEE_NAME: &str = "Acme Supplies Ltd";
const ACCOUNT: &str = "DE89 3704 0044 0532 0130 00";
const CONSOLE: &str = "https://fleet.example.com";

/// One request the webhook receiver took.
#[derive(Debug, Clone)]
struct Delivery {
    id: String,
    text: String,
    signature_valid: bool,
    /// Answered 200 (else 500).
    accepted: bool,
}

/// What the receiver's handler shares: the deliveries, and how many more to refuse.
#[derive(Default)]
struct Hook {
    got: Mutex<Vec<Delivery>>,
    refuse: AtomicUsize,
}

/// A Slack-compatible incoming webhook on loopback: records each delivery, answers 200
/// (500 to the first `refuse` ones).
struct Receiver {
    url: String,
    hook: Arc<Hook>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Receiver {
    async fn start() -> Receiver {
        Receiver::refusing(0).await
    }

    async fn refusing(first: usize) -> Receiver {
        let hook = Arc::new(Hook {
            refuse: AtomicUsize::new(first),
            ..Hook::default()
        });
        let app = Router::new()
            .route("/hook", post(take))
            .with_state(hook.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Receiver { url, hook, server }
    }

    /// Every delivery, refused ones too.
    fn attempts(&self) -> Vec<Delivery> {
        self.hook.got.lock().unwrap().clone()
    }

    fn deliveries(&self) -> Vec<Delivery> {
        self.attempts().into_iter().filter(|d| d.accepted).collect()
    }

    /// The accepted deliveries whose text names `op`.
    fn of(&self, op: &str) -> Vec<Delivery> {
        self.deliveries()
            .into_iter()
            .filter(|d| d.text.contains(op))
            .collect()
    }
}

async fn take(
    State(hook): State<Arc<Hook>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> StatusCode {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let (id, timestamp) = (header("webhook-id"), header("webhook-timestamp"));
    // Checked here as a receiver would, from the secret and the spec, not with the
    // fleet's own function.
    let key = base64::engine::general_purpose::STANDARD
        .decode(SECRET.trim_start_matches("whsec_"))
        .unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(&body);
    let expected = format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    );
    let signature_valid = header("webhook-signature")
        .split(' ')
        .any(|s| s == expected);
    let text = serde_json::from_slice::<Value>(&body).unwrap_or_default()["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let accepted = hook
        .refuse
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_err();
    hook.got.lock().unwrap().push(Delivery {
        id,
        text,
        signature_valid,
        accepted,
    });
    if accepted {
        StatusCode::OK
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    }
}

/// aiosmtpd on a loopback port, writing each message it accepts as JSON into a directory.
struct MailSink {
    port: u16,
    dir: PathBuf,
    child: tokio::process::Child,
}

impl Drop for MailSink {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl MailSink {
    async fn start(name: &str) -> MailSink {
        let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let out = tokio::process::Command::new("bash")
            .arg(here.join("aiosmtpd.sh"))
            .stderr(Stdio::inherit())
            .output()
            .await
            .expect("running aiosmtpd.sh");
        assert!(
            out.status.success(),
            "AIOSMTPD NOT INSTALLED: tests/fleet-tests/aiosmtpd.sh failed; it needs python3 with venv and PyPI"
        );
        let python = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        let dir = fleet_tests::bin_dir()
            .join("test-logs")
            .join(name)
            .join("mail");
        std::fs::create_dir_all(&dir).unwrap();
        let port = fixed_port();
        let mut child = tokio::process::Command::new(python)
            .arg(here.join("smtp_sink.py"))
            .arg(port.to_string())
            .arg(&dir)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the mail sink");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("the mail sink listening within 20 s")
            .unwrap();
        assert_eq!(first.as_deref(), Some("listening"));
        MailSink { port, dir, child }
    }

    fn messages(&self) -> Vec<Value> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.dir).unwrap().flatten() {
            if entry.path().extension().is_some_and(|e| e == "json") {
                let text = std::fs::read_to_string(entry.path()).unwrap();
                out.push(serde_json::from_str(&text).unwrap());
            }
        }
        out
    }

    fn of(&self, op: &str) -> Vec<Value> {
        self.messages()
            .into_iter()
            .filter(|m| m["body"].as_str().unwrap_or_default().contains(op))
            .collect()
    }
}

/// A channels file for `TENANT`: the receiver (signed) and, given a sink, e-mail to two
/// approvers through it; nothing for `QUIET_TENANT`.
fn channels_file(fleet: &TestFleet, receiver: &Receiver, mail: Option<&MailSink>) -> PathBuf {
    let dir = fleet_tests::bin_dir()
        .join("test-logs")
        .join(fleet.name())
        .join("notify");
    std::fs::create_dir_all(&dir).unwrap();
    let secret = dir.join("chat.secret");
    std::fs::write(&secret, format!("{SECRET}\n")).unwrap();
    let mut text = format!(
        "[[channel]]\ntenant = \"{TENANT}\"\nname = \"chat\"\nkind = \"webhook\"\nurl = \"{}\"\nsecret_file = \"{}\"\n",
        receiver.url,
        secret.display()
    );
    if let Some(mail) = mail {
        text = format!(
            "[smtp]\nhost = \"127.0.0.1\"\nport = {}\nsecurity = \"none\"\nfrom = \"Fleet <fleet@example.com>\"\n\n{text}\n\
             [[channel]]\ntenant = \"{TENANT}\"\nname = \"approvers-mail\"\nkind = \"email\"\nto = [\"cfo@example.com\", \"ann@example.com\"]\n",
            mail.port
        );
    }
    let path = dir.join("channels.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A payment of 12,500.00 KZT to the test's payee in `tenant`, deciding within `ttl_s`.
fn payment(tenant: &str, ttl_s: i64) -> Value {
    let mut i = intent();
    i["tenant_id"] = json!(tenant);
    i["payload"]["beneficiary_id"] = json!(PAYEE);
    i["approval_ttl_seconds"] = json!(ttl_s);
    i
}

/// Submits a payment of `tenant` deciding within the hour; its operation id.
async fn submitted(fleet: &TestFleet, tenant: &str) -> String {
    let i = payment(tenant, 3600);
    fleet.submit(&i).await;
    op_of(&i)
}

async fn fleet_with_payee() -> TestFleet {
    let fleet = TestFleet::with_prepare().await;
    fleet.sim_payee(PAYEE, PAYEE_NAME, ACCOUNT).await;
    fleet
}

fn relay_env<'a>(channels: &'a Path, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, String)> {
    let mut env = vec![
        ("RELAY_POLL_INTERVAL_MS", "25".to_owned()),
        ("NOTIFY_CHANNELS_FILE", channels.display().to_string()),
        ("NOTIFY_CONSOLE_URL", CONSOLE.to_owned()),
    ];
    env.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
    env
}

fn spawn_relay(fleet: &TestFleet, env: &[(&str, String)]) -> fleet_tests::WorkerProcess {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    fleet.spawn_process("fleet-relay", &env)
}

/// The tenants the database writes notices for (set by the relay from its channels file).
async fn notice_tenants(fleet: &TestFleet) -> Vec<String> {
    fleet_tests::first_column(
        &fleet.sql().await,
        "SELECT tenant_id FROM approval_notice_tenants ORDER BY tenant_id",
        &[],
    )
    .await
}

/// A relay started as [`spawn_relay`], once it has named its channels' tenants to the
/// database: an operation that starts waiting from then on is noted for them.
async fn notifying_relay(fleet: &TestFleet, env: &[(&str, String)]) -> fleet_tests::WorkerProcess {
    let relay = spawn_relay(fleet, env);
    eventually("the relay to name its channels' tenants", || async {
        (notice_tenants(fleet).await == [TENANT]).then_some(())
    })
    .await;
    relay
}

/// The notification rows of `op`: (channel, kind, sent, dropped reason, attempts).
async fn rows_of(fleet: &TestFleet, op: &str) -> Vec<(String, String, bool, Option<String>, i32)> {
    fleet
        .sql()
        .await
        .query(
            "SELECT channel, kind, sent_at IS NOT NULL, drop_reason, attempts
             FROM approval_notifications WHERE operation_id = $1 ORDER BY channel, kind",
            &[&op],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
        .collect()
}

/// The notices the database wrote for `op`.
async fn notices_of(fleet: &TestFleet, op: &str) -> i64 {
    fleet
        .sql()
        .await
        .query_one(
            "SELECT count(*) FROM approval_notices WHERE operation_id = $1",
            &[&op],
        )
        .await
        .unwrap()
        .get(0)
}

/// Every message says who is paid (the directory's name and the masked account), how
/// much, by when, and links the console page; never the full account number.
fn says_what_a_person_needs(text: &str, op: &str, masked: &str) {
    for needed in [
        PAYEE_NAME,
        masked,
        "12,500.00 KZT",
        "Decide by ",
        &format!("{CONSOLE}/console/operations/{op}"),
    ] {
        assert!(text.contains(needed), "{needed:?} missing from {text:?}");
    }
    let digits: String = ACCOUNT.chars().filter(|c| !c.is_whitespace()).collect();
    assert!(
        !text.contains(ACCOUNT),
        "the full account number in {text:?}"
    );
    assert!(
        !text.replace(' ', "").contains(&digits),
        "the full account number in {text:?}"
    );
}

/// One message per operation per channel, with what a person needs to decide and no full
/// account number, signed for the webhook and with the same idempotency id in the e-mail's
/// Message-ID; a tenant with no channel gets nothing.
#[tokio::test]
async fn an_operation_waiting_is_announced_once_per_channel_naming_payee_amount_and_link() {
    let fleet = fleet_with_payee().await;
    let receiver = Receiver::start().await;
    let mail = MailSink::start(fleet.name()).await;
    let channels = channels_file(&fleet, &receiver, Some(&mail));
    let _relay = notifying_relay(&fleet, &relay_env(&channels, &[])).await;

    let op = submitted(&fleet, TENANT).await;
    let quiet_op = submitted(&fleet, QUIET_TENANT).await;
    fleet.prepared(&op).await;
    let view = fleet.view_in_db(&op).await;
    let masked = view["payee"]["account"]["masked"]
        .as_str()
        .expect("the payee found, its account masked")
        .to_owned();

    eventually("both channels' waiting notifications sent", || async {
        let rows = rows_of(&fleet, &op).await;
        let sent = rows
            .iter()
            .filter(|(_, kind, sent, _, _)| kind == "waiting" && *sent)
            .count();
        (sent == 2).then_some(())
    })
    .await;
    // The notice, if any, is written with the operation's row.
    fleet.prepared(&quiet_op).await;
    assert!(
        rows_of(&fleet, &quiet_op).await.is_empty(),
        "no channel, no notification"
    );

    let hooks = receiver.of(&op);
    assert_eq!(hooks.len(), 1, "one webhook delivery: {hooks:?}");
    let hook = &hooks[0];
    assert!(hook.signature_valid, "signed with the channel's secret");
    assert!(hook.id.starts_with("ntf_"), "{}", hook.id);
    assert!(hook
        .text
        .starts_with("Waiting for your approval in org_482"));
    says_what_a_person_needs(&hook.text, &op, &masked);

    let mails = eventually("the e-mail in the sink", || async {
        let m = mail.of(&op);
        (!m.is_empty()).then_some(m)
    })
    .await;
    assert_eq!(mails.len(), 1, "one e-mail to both approvers: {mails:?}");
    let m = &mails[0];
    says_what_a_person_needs(m["body"].as_str().unwrap(), &op, &masked);
    assert!(m["subject"]
        .as_str()
        .unwrap()
        .starts_with("Approval needed: Pay 12,500.00 KZT to \"Acme Supplies Ltd\""));
    let mut to: Vec<&str> = m["to"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    to.sort_unstable();
    assert_eq!(to, ["ann@example.com", "cfo@example.com"]);
    let message_id = m["message_id"].as_str().unwrap();
    assert!(
        message_id.starts_with("<ntf_") && message_id.ends_with("@example.com>"),
        "{message_id}"
    );
    assert_ne!(
        message_id
            .trim_start_matches('<')
            .split('@')
            .next()
            .unwrap(),
        hook.id,
        "each channel's notification has its own id"
    );
    let raw = m["raw"].as_str().unwrap();
    assert!(!raw.contains(ACCOUNT));

    assert!(receiver.of(&quiet_op).is_empty() && mail.of(&quiet_op).is_empty());
    // No second message appeared for either channel.
    assert_eq!(receiver.deliveries().len(), 1);
    assert_eq!(mail.messages().len(), 1);
    fleet.stop().await;
}

/// The database writes a notice only for a tenant the channels file names: an operation of
/// a tenant without a channel writes its `prepared` event and no notice, and nothing is
/// planned for it; a relay started with another file sets the list to that file's tenants.
#[tokio::test]
async fn a_tenant_without_a_channel_gets_no_notice_rows() {
    let fleet = fleet_with_payee().await;
    let receiver = Receiver::start().await;
    let channels = channels_file(&fleet, &receiver, None);
    let relay = notifying_relay(&fleet, &relay_env(&channels, &[])).await;

    let told_op = submitted(&fleet, TENANT).await;
    let quiet_op = submitted(&fleet, QUIET_TENANT).await;
    fleet.prepared(&told_op).await;
    fleet.prepared(&quiet_op).await;
    let prepared_events: i64 = fleet
        .sql()
        .await
        .query_one(
            "SELECT count(*) FROM operation_outbox WHERE operation_id = $1 AND event_type = 'prepared'",
            &[&quiet_op],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        prepared_events, 1,
        "the quiet tenant's operation waits all the same"
    );
    assert_eq!(
        notices_of(&fleet, &told_op).await,
        1,
        "a channel's tenant is noted"
    );
    assert_eq!(
        notices_of(&fleet, &quiet_op).await,
        0,
        "no channel, no notice"
    );
    eventually("the told tenant's message", || async {
        (!receiver.of(&told_op).is_empty()).then_some(())
    })
    .await;
    assert!(rows_of(&fleet, &quiet_op).await.is_empty());
    drop(relay);

    // The file now names only the quiet tenant: the list follows it at the next start.
    let dir = channels.parent().unwrap();
    let quiet_file = dir.join("quiet.toml");
    std::fs::write(
        &quiet_file,
        format!(
            "[[channel]]\ntenant = \"{QUIET_TENANT}\"\nname = \"chat\"\nkind = \"webhook\"\nurl = \"{}\"\n",
            receiver.url
        ),
    )
    .unwrap();
    let _relay = spawn_relay(&fleet, &relay_env(&quiet_file, &[]));
    eventually("the list to follow the new file", || async {
        (notice_tenants(&fleet).await == [QUIET_TENANT]).then_some(())
    })
    .await;
    let later_op = submitted(&fleet, TENANT).await;
    fleet.prepared(&later_op).await;
    assert_eq!(
        notices_of(&fleet, &later_op).await,
        0,
        "its channel left the file"
    );
    fleet.stop().await;
}

/// A reminder goes out before the approval expires while the operation still waits; an
/// operation approved before its reminder is due gets none (the claim drops it).
#[tokio::test]
async fn a_reminder_comes_before_expiry_while_waiting_and_none_after_approval() {
    let fleet = fleet_with_payee().await;
    let receiver = Receiver::start().await;
    let channels = channels_file(&fleet, &receiver, None);
    // Reminders 30 s before expiry of a 40 s window: due about 10 s after the start.
    let _relay = notifying_relay(
        &fleet,
        &relay_env(&channels, &[("NOTIFY_REMINDER_BEFORE_S", "30")]),
    )
    .await;
    let still = payment(TENANT, 40);
    let still_op = op_of(&still);
    let approved = payment(TENANT, 40);
    let approved_op = op_of(&approved);
    fleet.submit(&still).await;
    fleet.submit(&approved).await;
    eventually("the approved one's first message", || async {
        (!receiver.of(&approved_op).is_empty()).then_some(())
    })
    .await;
    assert!(fleet
        .approve(&approved_op, &hash_of(&approved))
        .await
        .unwrap());

    let expires_at: chrono::DateTime<chrono::Utc> = fleet.view_in_db(&still_op).await
        ["approval_expires_at"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let reminder = eventually_within(Duration::from_secs(40), "the reminder", || async {
        receiver.of(&still_op).into_iter().find(|d| {
            d.text
                .starts_with("Reminder: still waiting for your approval")
        })
    })
    .await;
    let arrived = chrono::Utc::now();
    assert!(
        arrived < expires_at,
        "the reminder came at {arrived}, after the expiry {expires_at}"
    );
    assert!(reminder.signature_valid);
    assert!(reminder.text.contains(PAYEE_NAME));

    eventually_within(
        Duration::from_secs(40),
        "the approved one's reminder dropped",
        || async {
            rows_of(&fleet, &approved_op)
                .await
                .into_iter()
                .find(|(_, kind, sent, dropped, _)| {
                    kind == "reminder" && !sent && dropped.as_deref() == Some("not_waiting")
                })
        },
    )
    .await;
    let to_approved = receiver.of(&approved_op);
    assert_eq!(
        to_approved.len(),
        1,
        "only the first message: {to_approved:?}"
    );
    assert!(to_approved[0].text.starts_with("Waiting for your approval"));
    assert_eq!(
        receiver.of(&still_op).len(),
        2,
        "the first message and one reminder"
    );
    fleet.stop().await;
}

/// A notifier SIGKILLed after a delivery and before marking it sent: the next one sends
/// it once more, with the same webhook-id (the documented resend a receiver drops), and
/// then never again.
#[tokio::test]
async fn a_notifier_killed_between_send_and_mark_resends_once_with_the_same_id() {
    let fleet = fleet_with_payee().await;
    let receiver = Receiver::start().await;
    let channels = channels_file(&fleet, &receiver, None);
    let quick = [("NOTIFY_REMINDER_BEFORE_S", "0"), ("NOTIFY_LEASE_S", "4")];
    let mut paused = quick.to_vec();
    paused.push(("FLEET_PAUSE_AT", "after_notify_send"));
    let mut doomed = notifying_relay(&fleet, &relay_env(&channels, &paused)).await;
    let i = payment(TENANT, 3600);
    let op = op_of(&i);
    fleet.submit(&i).await;
    doomed.wait_for_log("FLEET_PAUSE_AT reached").await;
    let first = eventually("the first delivery", || async {
        receiver.of(&op).into_iter().next()
    })
    .await;
    doomed.kill9();
    let unmarked = rows_of(&fleet, &op).await;
    assert_eq!(unmarked.len(), 1);
    assert!(!unmarked[0].2, "not marked sent before the kill");

    let _healthy = spawn_relay(&fleet, &relay_env(&channels, &quick));
    eventually("the notification marked sent", || async {
        rows_of(&fleet, &op).await.first().filter(|r| r.2).cloned()
    })
    .await;
    let all = receiver.of(&op);
    assert_eq!(all.len(), 2, "sent once more after the lease: {all:?}");
    assert!(all.iter().all(|d| d.id == first.id && d.signature_valid));
    assert_eq!(all[0].text, all[1].text, "the same message");
    assert_eq!(rows_of(&fleet, &op).await[0].4, 2, "two attempts recorded");
    fleet.stop().await;
}

/// A receiver that answers 500 gets the same notification again after the pause, with the
/// same id; the failure and the delivery are counted by channel kind, and the relay's log
/// holds neither the webhook's URL nor its secret nor an address.
#[tokio::test]
async fn a_refused_delivery_is_retried_with_the_same_id_and_counted() {
    let fleet = fleet_with_payee().await;
    let receiver = Receiver::refusing(1).await;
    let mail = MailSink::start(fleet.name()).await;
    let channels = channels_file(&fleet, &receiver, Some(&mail));
    let relay = notifying_relay(
        &fleet,
        &relay_env(&channels, &[("NOTIFY_REMINDER_BEFORE_S", "0")]),
    )
    .await;
    let i = payment(TENANT, 3600);
    let op = op_of(&i);
    fleet.submit(&i).await;
    let delivered = eventually("the delivery after the refusal", || async {
        receiver.of(&op).into_iter().next()
    })
    .await;
    let attempts: Vec<Delivery> = receiver
        .attempts()
        .into_iter()
        .filter(|d| d.text.contains(&op))
        .collect();
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert!(!attempts[0].accepted && attempts[1].accepted);
    assert_eq!(attempts[0].id, delivered.id, "the same id on the retry");
    eventually("both channels marked sent", || async {
        let rows = rows_of(&fleet, &op).await;
        rows.iter().all(|r| r.2).then_some(())
    })
    .await;
    let rows = rows_of(&fleet, &op).await;
    let chat = rows.iter().find(|r| r.0 == "chat").unwrap();
    assert_eq!(chat.4, 2, "two attempts on the webhook");

    let admin = admin_url_of(&relay).await;
    let metrics = eventually("the counters", || async {
        let text = scrape(&fleet.http, &admin).await?;
        text.contains("fleet_notifications_sent_total{channel_kind=\"email\"} 1")
            .then_some(text)
    })
    .await;
    for line in [
        "fleet_notifications_failed_total{channel_kind=\"webhook\"} 1",
        "fleet_notifications_sent_total{channel_kind=\"webhook\"} 1",
        "fleet_notifications_failed_total{channel_kind=\"email\"} 0",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} missing");
    }
    let log = relay.log_text();
    assert!(log.contains("notification not delivered; retried later"));
    for secret in [
        receiver.url.as_str(),
        "/hook",
        SECRET,
        SECRET.trim_start_matches("whsec_"),
        "cfo@example.com",
        "ann@example.com",
        PAYEE_NAME,
    ] {
        assert!(!log.contains(secret), "{secret:?} in the relay's log");
    }
    fleet.stop().await;
}

/// A channels file that cannot be used stops the relay at start, naming the setting and
/// what is wrong, without repeating a URL that may be a credential.
#[tokio::test]
async fn a_channels_file_that_cannot_be_used_stops_the_start_naming_what_is_wrong() {
    let fleet = TestFleet::start().await;
    let dir = fleet_tests::bin_dir()
        .join("test-logs")
        .join(fleet.name())
        .join("notify");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("channels.toml");
    std::fs::write(
        &file,
        "[[channel]]\ntenant = \"org_482\"\nname = \"chat\"\nkind = \"webhook\"\nurl = \"http://hooks.example.com/services/T0/B0/tok3n\"\n",
    )
    .unwrap();
    let mut relay = spawn_relay(&fleet, &relay_env(&file, &[]));
    let status = eventually("the relay to stop", || std::future::ready(relay.exited())).await;
    assert!(!status.success());
    let log = relay.log_text();
    assert!(
        log.contains("NOTIFY_CHANNELS_FILE")
            && log.contains("channel \"chat\" of tenant \"org_482\"")
            && log.contains("must be https"),
        "{log}"
    );
    assert!(!log.contains("tok3n"), "{log}");
    fleet.stop().await;
}
