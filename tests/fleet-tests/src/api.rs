//! fleet-api as a real process against the test fleet, principals with tokens, and
//! `fleetctl` run as a real process (what an operator types).

use std::process::Output;

use fleet_core::Role;
use serde_json::Value;

use crate::{bin_dir, eventually, TestFleet, WorkerProcess};

/// A running fleet-api process.
pub struct ApiProcess {
    /// `http://127.0.0.1:<port>`
    pub base_url: String,
    /// `http://127.0.0.1:<port>` of its /metrics, /livez, /readyz.
    pub admin_url: String,
    pub process: WorkerProcess,
}

impl ApiProcess {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// The value of an unlabelled gauge on `/metrics`.
    pub async fn gauge(&self, http: &reqwest::Client, name: &str) -> Option<f64> {
        scrape_gauge(http, &self.admin_url, name).await
    }

    /// POSTs a JSON body as the bearer of `token`.
    pub async fn post(
        &self,
        http: &reqwest::Client,
        token: &str,
        path: &str,
        body: &Value,
    ) -> reqwest::Response {
        http.post(self.url(path))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .unwrap()
    }
}

/// The value of an unlabelled gauge on the `/metrics` of the admin server at `admin_url`.
pub async fn scrape_gauge(http: &reqwest::Client, admin_url: &str, name: &str) -> Option<f64> {
    let text = http
        .get(format!("{admin_url}/metrics"))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// `http://` + the address a worker process logged for its admin server, once it did.
pub async fn admin_url_of(process: &WorkerProcess) -> String {
    eventually(
        &format!("{} to log its admin address", process.name),
        || async {
            Some(format!(
                "http://{}",
                logged_addr(&process.log_text(), "admin server listening")?
            ))
        },
    )
    .await
}

/// The `addr` field of the first JSON log line whose message is `message`.
fn logged_addr(log: &str, message: &str) -> Option<String> {
    log.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["message"] == message)
        .and_then(|v| v["addr"].as_str().map(str::to_owned))
}

impl TestFleet {
    /// Starts fleet-api on free ports with `env` on top, and waits until `/readyz` is 200.
    pub async fn spawn_api(&self, env: &[(&str, &str)]) -> ApiProcess {
        let mut all = vec![("API_ADDR", "127.0.0.1:0"), ("API_WAIT_POLL_MS", "50")];
        all.extend_from_slice(env);
        let process = self.spawn_process("fleet-api", &all);
        let (base_url, admin_url) = eventually("fleet-api to listen", || async {
            let log = process.log_text();
            Some((
                format!("http://{}", logged_addr(&log, "api listening")?),
                format!("http://{}", logged_addr(&log, "admin server listening")?),
            ))
        })
        .await;
        let (http, ready) = (self.http.clone(), format!("{admin_url}/readyz"));
        eventually("fleet-api to be ready", || {
            let (http, ready) = (http.clone(), ready.clone());
            async move {
                http.get(ready)
                    .send()
                    .await
                    .ok()?
                    .status()
                    .is_success()
                    .then_some(())
            }
        })
        .await;
        ApiProcess {
            base_url,
            admin_url,
            process,
        }
    }

    /// A new token for `principal` (an agent unless `role` says otherwise).
    pub async fn token(&self, principal: &str, role: Role, tenants: &[&str]) -> String {
        let tenants: Vec<String> = tenants.iter().map(|t| t.to_string()).collect();
        let (token, _, _) = fleetctl::token::issue(&self.store, principal, role, &tenants)
            .await
            .expect("issue a token");
        token.expose().to_owned()
    }

    /// Runs the `fleetctl` binary against this fleet's database and namespace, with `env`
    /// on top, whatever its exit status.
    pub async fn fleetctl_with(&self, env: &[(&str, &str)], args: &[&str]) -> Output {
        tokio::process::Command::new(bin_dir().join("fleetctl"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("DATABASE_URL", &self.database_url)
            .env("AMQP_URL", &self.broker.amqp_url)
            .env("AMQP_NAMESPACE", &self.broker.namespace)
            .envs(env.iter().copied())
            .args(args)
            .output()
            .await
            .expect("run fleetctl")
    }

    /// Runs the `fleetctl` binary against this fleet's database and namespace; it must
    /// succeed.
    pub async fn fleetctl(&self, args: &[&str]) -> Output {
        let output = self.fleetctl_with(&[], args).await;
        assert!(
            output.status.success(),
            "fleetctl {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// `SELECT operation_view(o)` for one operation, straight from the database.
    pub async fn view_in_db(&self, op: &str) -> Value {
        self.sql()
            .await
            .query_one(
                "SELECT operation_view(o) FROM operations o WHERE operation_id = $1",
                &[&op],
            )
            .await
            .unwrap()
            .get(0)
    }
}
