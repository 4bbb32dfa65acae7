//! The Stripe double the demo's Stripe mode talks to: localstripe (a third-party double of
//! Stripe's API), installed into a venv under target/ by `tests/fleet-tests/localstripe.sh`
//! when it is missing and started on a free port for the run, or a Stripe-compatible API
//! the caller names (`--stripe-url`). The demo asks it as Stripe's clients ask:
//! form-encoded, with a secret `sk_` key.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::Context;
use serde_json::Value;

use crate::stripe_forms;

/// localstripe checks the prefix of a key only.
pub const KEY: &str = "sk_test_fleet_demo";

pub struct StripeDouble {
    pub url: String,
    /// The localstripe the demo started (none for `--stripe-url`): ended when dropped.
    child: Option<Child>,
    http: reqwest::Client,
}

impl Drop for StripeDouble {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The repository's root, found upwards from the working directory and from fleetctl's
/// own: where the install script lives.
fn repo_root() -> anyhow::Result<PathBuf> {
    let script = Path::new("tests/fleet-tests/localstripe.sh");
    let starts = [std::env::current_dir().ok(), std::env::current_exe().ok()];
    starts
        .into_iter()
        .flatten()
        .flat_map(|start| start.ancestors().map(Path::to_path_buf).collect::<Vec<_>>())
        .find(|dir| dir.join(script).is_file())
        .context("tests/fleet-tests/localstripe.sh is not found above the working directory: run the demo from the repository, or give --stripe-url")
}

/// The `localstripe` command, installed first when missing (the script reinstalls only
/// when the pinned version changed).
fn localstripe_command() -> anyhow::Result<PathBuf> {
    let script = repo_root()?.join("tests/fleet-tests/localstripe.sh");
    let out = Command::new("bash")
        .arg(&script)
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    anyhow::ensure!(
        out.status.success(),
        "{} failed ({}): localstripe needs python3 with venv and PyPI",
        script.display(),
        out.status
    );
    Ok(PathBuf::from(String::from_utf8(out.stdout)?.trim()))
}

impl StripeDouble {
    /// The double at `given`, or a localstripe started here (its log in `log_dir`); either
    /// way answering before this returns.
    pub async fn start(given: Option<&str>, log_dir: &Path) -> anyhow::Result<StripeDouble> {
        let mut double = StripeDouble {
            url: given.unwrap_or_default().trim_end_matches('/').to_owned(),
            child: None,
            http: reqwest::Client::new(),
        };
        if given.is_none() {
            let command = localstripe_command()?;
            // A free port: bound, then released for localstripe to take.
            let port = std::net::TcpListener::bind("127.0.0.1:0")?
                .local_addr()?
                .port();
            std::fs::create_dir_all(log_dir)?;
            let log = std::fs::File::create(log_dir.join("localstripe.log"))?;
            double.child = Some(
                Command::new(&command)
                    .args(["--port", &port.to_string(), "--from-scratch"])
                    .stdin(Stdio::null())
                    .stdout(log.try_clone()?)
                    .stderr(log)
                    .spawn()
                    .with_context(|| format!("starting {}", command.display()))?,
            );
            double.url = format!("http://127.0.0.1:{port}");
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while double.list_page("/v1/customers?limit=1").await.is_err() {
            anyhow::ensure!(
                tokio::time::Instant::now() < deadline,
                "the Stripe double at {} does not answer",
                double.url
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(double)
    }

    pub async fn post(&self, path: &str, form: &[(&str, &str)]) -> anyhow::Result<Value> {
        let answer = self
            .http
            .post(format!("{}{path}", self.url))
            .bearer_auth(KEY)
            .form(form)
            .send()
            .await?;
        let status = answer.status();
        let body: Value = answer.json().await?;
        anyhow::ensure!(status.is_success(), "POST {path}: {status} {body}");
        Ok(body)
    }

    async fn list_page(&self, path_and_query: &str) -> anyhow::Result<Value> {
        Ok(self
            .http
            .get(format!("{}{path_and_query}", self.url))
            .bearer_auth(KEY)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?)
    }

    /// Every object of the list at `path` (`/v1/payment_intents`, `/v1/refunds`), paged.
    async fn list(&self, path: &str) -> anyhow::Result<Vec<Value>> {
        let mut all = Vec::new();
        let mut after = String::new();
        loop {
            let page = self.list_page(&format!("{path}?limit=100{after}")).await?;
            let data = page["data"].as_array().cloned().unwrap_or_default();
            let last = data
                .last()
                .and_then(|o| o["id"].as_str())
                .map(str::to_owned);
            all.extend(data);
            match last {
                Some(id) if page["has_more"] == true => after = format!("&starting_after={id}"),
                _ => return Ok(all),
            }
        }
    }

    /// The PaymentIntents and Refunds whose `metadata[fleet_operation]` is `key`.
    pub async fn carrying(&self, key: &str) -> anyhow::Result<Vec<Value>> {
        let mut objects = self.list("/v1/payment_intents").await?;
        objects.extend(self.list("/v1/refunds").await?);
        objects.retain(|o| fleet_core::stripe::operation_of(o) == Some(key));
        Ok(objects)
    }

    /// A customer with the card `number` saved to it: the customer's and the
    /// PaymentMethod's ids.
    pub async fn customer_with_card(
        &self,
        name: &str,
        email: &str,
        number: &str,
    ) -> anyhow::Result<(String, String)> {
        let customer = self
            .post("/v1/customers", &[("name", name), ("email", email)])
            .await?;
        let customer = id_of(&customer)?;
        let pm = self
            .post("/v1/payment_methods", &stripe_forms::card(number))
            .await?;
        let pm = id_of(&pm)?;
        self.post(
            &format!("/v1/payment_methods/{pm}/attach"),
            &[("customer", &customer)],
        )
        .await?;
        Ok((customer, pm))
    }

    /// An earlier sale the fleet did not make: `customer` paid `amount_minor` KZT with
    /// `payment_method`; the PaymentIntent's id.
    pub async fn earlier_sale(
        &self,
        customer: &str,
        payment_method: &str,
        amount_minor: i64,
    ) -> anyhow::Result<String> {
        let amount = amount_minor.to_string();
        let form = stripe_forms::paid_intent(&amount, "kzt", customer, payment_method);
        let intent = self.post("/v1/payment_intents", &form).await?;
        anyhow::ensure!(
            intent["status"] == "succeeded",
            "the earlier sale was not paid: {intent}"
        );
        id_of(&intent)
    }
}

fn id_of(object: &Value) -> anyhow::Result<String> {
    object["id"]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("an object without an id: {object}"))
}
