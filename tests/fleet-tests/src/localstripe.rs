//! localstripe (a third-party double of Stripe's API, pinned, from PyPI) for the Stripe
//! tests: installed into a venv under target/ by `tests/fleet-tests/localstripe.sh` the
//! first time a test needs it, one `localstripe --from-scratch` process per test on a free
//! port, ended when the test drops it. What it is asked over its API (a customer, a card,
//! a confirmed PaymentIntent, the refunds) is asked as Stripe's clients ask: form-encoded,
//! with a bearer key.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use fleetctl::stripe_forms;
use serde_json::Value;

use crate::eventually;

/// Any `sk_…` key: localstripe checks the prefix only.
pub const LOCALSTRIPE_KEY: &str = "sk_test_fleet";

/// The `localstripe` command, installed once per test process (the script's lock keeps
/// concurrent test processes from installing twice).
fn command() -> &'static PathBuf {
    static COMMAND: OnceLock<PathBuf> = OnceLock::new();
    COMMAND.get_or_init(|| {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("localstripe.sh");
        let out = Command::new("bash")
            .arg(&script)
            .stderr(Stdio::inherit())
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "LOCALSTRIPE NOT INSTALLED: running {}: {e}",
                    script.display()
                )
            });
        assert!(
            out.status.success(),
            "LOCALSTRIPE NOT INSTALLED: {} failed ({}); it needs python3 with venv and PyPI \
             (run `bash tests/fleet-tests/localstripe.sh` to see why)",
            script.display(),
            out.status
        );
        let path = String::from_utf8(out.stdout).expect("a path");
        PathBuf::from(path.trim())
    })
}

/// A running localstripe, empty at start.
pub struct Localstripe {
    pub base_url: String,
    child: Child,
    http: reqwest::Client,
}

impl Drop for Localstripe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Localstripe {
    /// Starts one and waits until it answers.
    pub async fn start() -> Localstripe {
        let command = command().clone();
        // A free port: bound, then released for localstripe to take.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(&command)
            .args(["--port", &port.to_string(), "--from-scratch"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", command.display()));
        let stripe = Localstripe {
            base_url: format!("http://127.0.0.1:{port}"),
            child,
            http: reqwest::Client::new(),
        };
        eventually("localstripe to answer", || async {
            let answer = stripe
                .http
                .get(format!("{}/v1/customers", stripe.base_url))
                .bearer_auth(LOCALSTRIPE_KEY)
                .send()
                .await
                .ok()?;
            answer.status().is_success().then_some(())
        })
        .await;
        stripe
    }

    /// `POST path` form-encoded; the answer's JSON, asserted 200.
    pub async fn post(&self, path: &str, form: &[(&str, &str)]) -> Value {
        let answer = self
            .http
            .post(format!("{}{path}", self.base_url))
            .bearer_auth(LOCALSTRIPE_KEY)
            .form(form)
            .send()
            .await
            .expect("localstripe answers");
        let status = answer.status();
        let body: Value = answer.json().await.expect("JSON");
        assert!(status.is_success(), "POST {path}: {status} {body}");
        body
    }

    pub async fn get(&self, path: &str) -> Value {
        let answer = self
            .http
            .get(format!("{}{path}", self.base_url))
            .bearer_auth(LOCALSTRIPE_KEY)
            .send()
            .await
            .expect("localstripe answers");
        let status = answer.status();
        let body: Value = answer.json().await.expect("JSON");
        assert!(status.is_success(), "GET {path}: {status} {body}");
        body
    }

    /// A new customer (`buyer@example.com`): its id.
    pub async fn customer(&self) -> String {
        let customer = self
            .post("/v1/customers", &[("email", "buyer@example.com")])
            .await;
        customer["id"].as_str().expect("a customer id").to_owned()
    }

    /// A customer paid `amount_minor` of `currency` with the test card: the id of the
    /// confirmed, succeeded PaymentIntent (something to refund).
    pub async fn paid_intent(&self, amount_minor: i64, currency: &str) -> String {
        let intent = self.paid_intent_with(amount_minor, currency, &[]).await;
        intent["id"]
            .as_str()
            .expect("a PaymentIntent id")
            .to_owned()
    }

    /// [`Localstripe::paid_intent`] with `metadata` (`metadata[…]` fields) too: the
    /// PaymentIntent.
    pub async fn paid_intent_with(
        &self,
        amount_minor: i64,
        currency: &str,
        metadata: &[(&str, &str)],
    ) -> Value {
        let customer = self.customer().await;
        let amount = amount_minor.to_string();
        let mut form =
            stripe_forms::paid_intent(&amount, currency, &customer, "pm_card_visa").to_vec();
        form.extend_from_slice(metadata);
        let intent = self.post("/v1/payment_intents", &form).await;
        assert_eq!(intent["status"], "succeeded", "{intent}");
        intent
    }

    /// A new customer's PaymentIntent of `amount_minor` of `currency` that was never
    /// confirmed (nothing paid): its id.
    pub async fn unpaid_intent(&self, amount_minor: i64, currency: &str) -> String {
        let customer = self.customer().await;
        let amount = amount_minor.to_string();
        let form = [
            ("amount", amount.as_str()),
            ("currency", currency),
            ("customer", &customer),
        ];
        let intent = self.post("/v1/payment_intents", &form).await;
        intent["id"]
            .as_str()
            .expect("a PaymentIntent id")
            .to_owned()
    }

    /// Every refund of the PaymentIntent `intent`.
    pub async fn refunds_of(&self, intent: &str) -> Vec<Value> {
        let list = self
            .get(&format!("/v1/refunds?limit=100&payment_intent={intent}"))
            .await;
        assert_eq!(list["has_more"], false, "one page holds them: {list}");
        list["data"].as_array().expect("a data array").clone()
    }

    /// Every refund localstripe holds.
    pub async fn all_refunds(&self) -> Vec<Value> {
        let list = self.get("/v1/refunds?limit=100").await;
        assert_eq!(list["has_more"], false, "one page holds them: {list}");
        list["data"].as_array().expect("a data array").clone()
    }

    /// The refunds of `intent` whose `metadata[fleet_operation]` is `key`.
    pub async fn refunds_carrying(&self, intent: &str, key: &str) -> Vec<Value> {
        self.refunds_of(intent)
            .await
            .into_iter()
            .filter(|r| fleet_core::stripe::operation_of(r) == Some(key))
            .collect()
    }

    /// A customer (`name`, `email`) with the card `number` saved to it: the customer's and
    /// the PaymentMethod's ids. `4242424242424242` pays; `4000000000000341` is saved but
    /// declined when charged (`card_declined`).
    pub async fn customer_with_card(&self, number: &str) -> (String, String) {
        let customer = self
            .post(
                "/v1/customers",
                &[("name", "Jane Doe"), ("email", "jane@example.com")],
            )
            .await;
        let customer = customer["id"].as_str().expect("a customer id").to_owned();
        let pm = self.card(number).await;
        self.post(
            &format!("/v1/payment_methods/{pm}/attach"),
            &[("customer", &customer)],
        )
        .await;
        (customer, pm)
    }

    /// A PaymentMethod for the card `number`, saved to nobody.
    pub async fn card(&self, number: &str) -> String {
        let pm = self
            .post("/v1/payment_methods", &stripe_forms::card(number))
            .await;
        pm["id"].as_str().expect("a PaymentMethod id").to_owned()
    }

    /// Every PaymentIntent localstripe holds whose `metadata[fleet_operation]` is `key`.
    pub async fn payment_intents_carrying(&self, key: &str) -> Vec<Value> {
        let list = self.get("/v1/payment_intents?limit=100").await;
        assert_eq!(list["has_more"], false, "one page holds them: {list}");
        list["data"]
            .as_array()
            .expect("a data array")
            .iter()
            .filter(|pi| fleet_core::stripe::operation_of(pi) == Some(key))
            .cloned()
            .collect()
    }
}
