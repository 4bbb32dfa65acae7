//! Stripe under chaos: `charge.create` (some with a card Stripe declines) and
//! `refund.create` operations through the real `fleet-execute`, `fleet-reconcile` and
//! `fleet-webhook-ingest` processes, each SIGKILLed at random and restarted while the
//! operations run, against localstripe behind the harness's fault proxy (answers dropped
//! after localstripe committed, 502s before forwarding, answers held past the timeout).
//! Meanwhile the objects localstripe holds are announced to the webhook receiver as Stripe
//! would, each event twice, in shuffled order, with a stale `processing` event after a
//! charge's final one. localstripe ignores `Idempotency-Key`, so the fleet runs with a key
//! retention of 0: any second request on a key would leave a second object.
//!
//! At the end, read from localstripe directly: every operation has at most one
//! PaymentIntent or Refund whose `metadata[fleet_operation]` is its key; one that is final
//! has exactly one and ends in that object's status (a declined card failed with Stripe's
//! code), with its id; one that has none is waiting for a person (`unknown`, escalated),
//! never final, since nothing in the fleet's records proves the request never arrived.
//! `STRIPE_CHAOS_SEED` replays a schedule.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fleet_core::Status;
use fleet_tests::{
    charge_intent, free_addr, now_s, op_of, refund_intent, Fault, Localstripe, StripeProxy,
    TestFleet, WorkerProcess, LOCALSTRIPE_KEY, WEBHOOK_SECRET,
};
use fleet_webhook_ingest::stripe_signature::sign;
use fleet_webhook_ingest::StripeSecret;
use serde_json::{json, Value};
use tokio::time::{sleep, Instant};

const VISA: &str = "4242424242424242";
/// Saved, then declined when charged (`card_declined`).
const DECLINED_WHEN_CHARGED: &str = "4000000000000341";
/// The endpoint's signing secret, as the Stripe dashboard shows it.
const STRIPE_SECRET: &str = "whsec_9kXq2LmT7vR4nB8cW1zY5pJ3hF6dG0sA";

/// The mix, one letter an operation: `c` a charge that pays, `d` a declined charge, `r` a
/// refund of a payment made before the run.
const MIX: &str = "crdcrcrdcrrcdcrc";

/// xorshift64*: a seeded schedule that replays exactly.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

const WORKERS: [&str; 3] = ["fleet-execute", "fleet-reconcile", "fleet-webhook-ingest"];

fn settings<'a>(proxy: &'a str, webhook_addr: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("PAYMENTS_PROVIDER", "stripe"),
        ("PAYMENTS_URL", proxy),
        ("PAYMENTS_API_KEY", LOCALSTRIPE_KEY),
        ("PAYMENTS_KEY_RETENTION_S", "0"),
        ("PAYMENTS_STRIPE_SEARCH", "off"),
        ("PAYMENTS_SEARCH_LAG_MS", "0"),
        ("PAYMENTS_TIMEOUT_MS", "1500"),
        ("PAYMENTS_WEBHOOK_SECRET", STRIPE_SECRET),
        ("WEBHOOK_SECRETS", WEBHOOK_SECRET),
        ("WEBHOOK_ADDR", webhook_addr),
        ("LEASE_TTL_MS", "1500"),
        ("SWEEP_INTERVAL_MS", "100"),
        ("LOOKUP_RECHECK_MS", "200"),
        ("UNSTARTED_REDRIVE_MS", "500"),
        ("RUST_LOG", "warn"),
    ]
}

/// One event as Stripe sends it: `event_type` about `object`, signed now.
async fn deliver(
    http: &reqwest::Client,
    url: &str,
    id: &str,
    event_type: &str,
    object: &Value,
) -> bool {
    let body = serde_json::to_vec(&json!({"id": id, "object": "event", "type": event_type,
        "created": now_s(), "data": {"object": object}}))
    .expect("json");
    let secret = StripeSecret::parse(STRIPE_SECRET).expect("a secret");
    // The receiver may be dead this moment: Stripe would send it again, and so does the
    // next round.
    http.post(url)
        .header("content-type", "application/json")
        .header("Stripe-Signature", sign(&secret, now_s(), &body))
        .body(body)
        .timeout(Duration::from_secs(2))
        .send()
        .await
        .is_ok_and(|answer| answer.status() == reqwest::StatusCode::NO_CONTENT)
}

/// The events Stripe would send about the fleet's objects localstripe holds now: each
/// final one, and after a charge's final one a stale `processing` that must change nothing.
async fn events_now(http: &reqwest::Client, stripe_url: &str) -> Vec<(String, String, Value)> {
    let mut events = Vec::new();
    for (path, kind) in [("/v1/payment_intents", "pi"), ("/v1/refunds", "re")] {
        let Ok(answer) = http
            .get(format!("{stripe_url}{path}?limit=100"))
            .bearer_auth(LOCALSTRIPE_KEY)
            .send()
            .await
        else {
            continue;
        };
        let list: Value = answer.json().await.unwrap_or_default();
        for object in list["data"].as_array().into_iter().flatten() {
            if fleet_core::stripe::operation_of(object).is_none() {
                continue;
            }
            let id = object["id"].as_str().unwrap_or_default();
            let status = object["status"].as_str().unwrap_or_default();
            let event_type = match (kind, status) {
                ("pi", "succeeded") => "payment_intent.succeeded",
                ("pi", "requires_payment_method") => "payment_intent.payment_failed",
                ("pi", _) => "payment_intent.processing",
                _ => "refund.updated",
            };
            events.push((
                format!("evt_{id}_{status}"),
                event_type.to_owned(),
                object.clone(),
            ));
            if kind == "pi" {
                let mut stale = object.clone();
                stale["status"] = json!("processing");
                events.push((
                    format!("evt_{id}_stale"),
                    "payment_intent.processing".to_owned(),
                    stale,
                ));
            }
        }
    }
    events
}

/// Until aborted: every 700 ms, the fleet's objects announced to `url`, each event twice,
/// the round shuffled.
fn announce(
    stripe_url: String,
    url: String,
    seed: u64,
    accepted: Arc<AtomicUsize>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let http = reqwest::Client::new();
        let mut rng = Rng(seed | 1);
        loop {
            let mut round = events_now(&http, &stripe_url).await;
            round.extend(round.clone());
            // Fisher–Yates.
            for i in (1..round.len()).rev() {
                round.swap(i, rng.below(i as u64 + 1) as usize);
            }
            // A charge's stale `processing` goes after its final event at least once.
            round.sort_by_key(|(id, _, _)| id.ends_with("_stale"));
            for (id, event_type, object) in &round {
                if deliver(&http, &url, id, event_type, object).await {
                    accepted.fetch_add(1, Ordering::Relaxed);
                }
            }
            sleep(Duration::from_millis(700)).await;
        }
    })
}

/// The fleet's state a Stripe object's status means (a declined charge's PaymentIntent
/// asks for another payment method: the charge failed).
fn status_of(object: &Value) -> Option<Status> {
    match object["status"].as_str()? {
        "succeeded" => Some(Status::Succeeded),
        "requires_payment_method" | "canceled" | "failed" => Some(Status::Failed),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kills_and_faults_leave_one_stripe_object_per_operation_in_its_state() {
    let seed = std::env::var("STRIPE_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x057A_19E5_u64);
    let mut rng = Rng(seed | 1);
    let stripe = Localstripe::start().await;
    let proxy = StripeProxy::start(&stripe.base_url).await;
    let mut fleet = TestFleet::start().await;
    fleet.spawn_prepare_at_stripe(&proxy.base_url, LOCALSTRIPE_KEY);
    let webhook_addr = free_addr();
    let env = settings(&proxy.base_url, &webhook_addr);

    // What the operations need at Stripe, made before the run.
    let (payer, visa) = stripe.customer_with_card(VISA).await;
    let (decliner, declined) = stripe.customer_with_card(DECLINED_WHEN_CHARGED).await;
    let mut intents = Vec::new();
    let mut declining = Vec::new();
    for (n, kind) in MIX.chars().enumerate() {
        let amount = 1_000 + 100 * n as i64;
        intents.push(match kind {
            'c' => charge_intent(&payer, &visa, amount),
            'd' => charge_intent(&decliner, &declined, amount),
            _ => refund_intent(&stripe.paid_intent(5_000, "kzt").await, amount),
        });
        if kind == 'd' {
            declining.push(op_of(intents.last().unwrap()));
        }
    }

    let mut procs: Vec<(&str, WorkerProcess)> = WORKERS
        .iter()
        .map(|name| (*name, fleet.spawn_process(name, &env)))
        .collect();
    let accepted = Arc::new(AtomicUsize::new(0));
    let announcer = announce(
        stripe.base_url.clone(),
        format!("http://{webhook_addr}/webhooks/stripe"),
        seed,
        accepted.clone(),
    );

    // Two operations approved at a time, a fault armed now and then for the next create,
    // and a worker SIGKILLed and restarted every 0.3–1.2 s, until a few seconds after the
    // last approval.
    let faults = [
        Fault::DropAnswer,
        Fault::BadGatewayBeforeForwarding,
        Fault::HoldAnswer(Duration::from_secs(3)),
    ];
    let mut armed: HashMap<String, usize> = HashMap::new();
    let mut kills = 0;
    let mut ops = Vec::new();
    let mut pending = intents.iter();
    let mut chaos_until = None;
    while chaos_until.is_none_or(|until| Instant::now() < until) {
        for intent in pending.by_ref().take(2) {
            if rng.below(2) == 0 {
                let fault = faults[rng.below(faults.len() as u64) as usize];
                proxy.arm(fault);
                *armed.entry(format!("{fault:?}")).or_default() += 1;
            }
            ops.push(fleet.submit_and_approve(intent).await);
        }
        if ops.len() == intents.len() && chaos_until.is_none() {
            chaos_until = Some(Instant::now() + Duration::from_secs(4));
        }
        sleep(Duration::from_millis(300 + rng.below(900))).await;
        let (name, process) = &mut procs[rng.below(WORKERS.len() as u64) as usize];
        process.kill9();
        *process = fleet.spawn_process(name, &env);
        kills += 1;
    }

    // No more kills: every operation final, or waiting for a person.
    fleet.settles(Duration::from_secs(30)).await;
    announcer.abort();

    let intents_at_stripe = stripe.get("/v1/payment_intents?limit=100").await;
    assert_eq!(intents_at_stripe["has_more"], false);
    let mut objects = intents_at_stripe["data"].as_array().unwrap().clone();
    objects.extend(stripe.all_refunds().await);
    let mut by_status: HashMap<String, usize> = HashMap::new();
    let mut waiting = 0;
    for op in &ops {
        let row = fleet.row(op).await;
        let key = row.idempotency_key.as_str();
        let carrying: Vec<&Value> = objects
            .iter()
            .filter(|o| fleet_core::stripe::operation_of(o) == Some(key))
            .collect();
        assert!(
            carrying.len() <= 1,
            "{op}: more than one object: {carrying:?}"
        );
        *by_status.entry(row.status.to_string()).or_default() += 1;
        match carrying.first() {
            Some(object) => {
                assert!(
                    row.status.is_final(),
                    "{op} is {} with {object}",
                    row.status
                );
                assert_eq!(Some(row.status), status_of(object), "{op}: {object}");
                if row.status == Status::Succeeded {
                    assert_eq!(row.external_id.as_deref(), object["id"].as_str(), "{op}");
                }
                if declining.contains(op) {
                    assert_eq!(row.status, Status::Failed, "{op}: {object}");
                    let error = &object["last_payment_error"];
                    let codes = [error["code"].as_str(), error["decline_code"].as_str()];
                    assert_eq!(error["code"], "card_declined", "{object}");
                    assert!(codes.contains(&row.error_code.as_deref()), "{op}: {row:?}");
                } else {
                    assert_eq!(row.status, Status::Succeeded, "{op}: {object}");
                }
            }
            None => {
                // Nothing sent that the fleet knows of, and nothing proves it: a person.
                assert_eq!(row.status, Status::Unknown, "{op} final with no object");
                assert!(row.escalated_at.is_some(), "{op}");
                waiting += 1;
            }
        }
    }
    let webhook_events = fleet.count("SELECT count(*) FROM webhook_events").await;
    println!(
        "stripe chaos: seed={seed:#x} operations={} kills={kills} faults={armed:?} creates={} objects={} deliveries_accepted={} webhook_events={webhook_events} final={by_status:?} waiting_for_a_person={waiting}",
        ops.len(),
        proxy.creates().len(),
        objects.len(),
        accepted.load(Ordering::Relaxed),
    );
    // Never a second request on a key: each create the proxy saw carries its own key.
    let mut keys: Vec<Option<String>> = proxy
        .creates()
        .into_iter()
        .map(|c| c.idempotency_key)
        .collect();
    let sent = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), sent, "a key sent twice: {keys:?}");
    assert!(keys.iter().all(Option::is_some), "a create without a key");
    assert!(kills > 0);
    assert!(
        waiting < ops.len() / 2,
        "most operations must settle at Stripe: {waiting} of {}",
        ops.len()
    );
    drop(procs);
    fleet.stop().await;
}
