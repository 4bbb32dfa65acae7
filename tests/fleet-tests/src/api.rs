//! fleet-api as a real process against the test fleet, principals with tokens, and
//! `fleetctl` run as a real process (what an operator types).

use std::process::Output;

use fleet_core::Role;
use reqwest::StatusCode;
use serde_json::Value;

use crate::{bin_dir, eventually, intent_bytes, TestFleet, WorkerProcess};

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

    /// Submits `intent` to `POST /v1/intents` as the bearer of `token`.
    pub async fn submit(
        &self,
        http: &reqwest::Client,
        token: &str,
        intent: &Value,
    ) -> reqwest::Response {
        self.submit_bytes(http, token, intent_bytes(intent)).await
    }

    /// Asserts that the secret part of `token` (after `fleet_`) is nowhere in the API's
    /// log.
    pub fn never_logged(&self, token: &str) {
        assert!(
            !self.process.log_text().contains(&token[6..]),
            "the token reached the API's log"
        );
    }

    /// Sends `body`, as it is, to `POST /v1/intents` as the bearer of `token`.
    pub async fn submit_bytes(
        &self,
        http: &reqwest::Client,
        token: &str,
        body: Vec<u8>,
    ) -> reqwest::Response {
        http.post(self.url("/v1/intents"))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap()
    }

    /// Submits `intent` as the bearer of `token`; it must be stored (202): the view of
    /// its operation.
    pub async fn submitted(&self, http: &reqwest::Client, token: &str, intent: &Value) -> Value {
        let response = self.submit(http, token, intent).await;
        let status = response.status();
        let body = response.text().await.unwrap();
        assert_eq!(status, StatusCode::ACCEPTED, "intent refused: {body}");
        serde_json::from_str(&body).expect("the operation's view")
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

/// Where a person's `fleetctl` is told the database and the broker are: a port nothing
/// listens on, so a command that reached for either would fail.
pub const DEAD_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:9/fleet";
pub const DEAD_AMQP_URL: &str = "amqp://guest:guest@127.0.0.1:9/%2f";

/// The arguments of `fleetctl principal add` for `name` with `role` in `tenant`, then
/// `more`.
pub fn principal_add<'a>(
    name: &'a str,
    role: &'a str,
    tenant: &'a str,
    more: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![
        "principal",
        "add",
        "--name",
        name,
        "--role",
        role,
        "--tenant",
        tenant,
    ];
    args.extend_from_slice(more);
    args
}

/// The `fleetctl` binary with nothing in its environment but PATH (no config file, no
/// connection settings): add what the test means it to see.
pub fn bare_fleetctl() -> tokio::process::Command {
    let mut command = tokio::process::Command::new(bin_dir().join("fleetctl"));
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .kill_on_drop(true);
    command
}

impl ApiProcess {
    /// `fleetctl` as a person runs it: this API's URL and `token` and nothing else (no
    /// config file, the database and broker unreachable), with `env` on top. Not yet run:
    /// `.output()` it, or spawn it to run beside the test.
    pub fn person_fleetctl(
        &self,
        token: &str,
        env: &[(&str, &str)],
        args: &[&str],
    ) -> tokio::process::Command {
        let mut command = bare_fleetctl();
        command
            .env("DATABASE_URL", DEAD_DATABASE_URL)
            .env("AMQP_URL", DEAD_AMQP_URL)
            .env("FLEET_API_URL", &self.base_url)
            .env("FLEET_TOKEN", token)
            .envs(env.iter().copied())
            .args(args);
        command
    }

    /// Runs [`ApiProcess::person_fleetctl`], whatever its exit status.
    pub async fn fleetctl_as(&self, token: &str, env: &[(&str, &str)], args: &[&str]) -> Output {
        self.person_fleetctl(token, env, args)
            .output()
            .await
            .expect("run fleetctl")
    }

    /// `GET path` as the bearer of `token`: (status, JSON body).
    pub async fn get(
        &self,
        http: &reqwest::Client,
        token: &str,
        path: &str,
    ) -> (StatusCode, Value) {
        let response = self.get_response(http, token, path).await;
        (response.status(), response.json().await.unwrap())
    }

    /// `GET path` as the bearer of `token`: the answer as it came.
    pub async fn get_response(
        &self,
        http: &reqwest::Client,
        token: &str,
        path: &str,
    ) -> reqwest::Response {
        http.get(self.url(path))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
    }
}

/// The `/metrics` text of the admin server at `admin_url`, if it answers.
pub async fn scrape(http: &reqwest::Client, admin_url: &str) -> Option<String> {
    let response = http.get(format!("{admin_url}/metrics")).send().await.ok()?;
    response.text().await.ok()
}

/// The value of an unlabelled gauge on the `/metrics` of the admin server at `admin_url`.
pub async fn scrape_gauge(http: &reqwest::Client, admin_url: &str, name: &str) -> Option<f64> {
    let text = scrape(http, admin_url).await?;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// Waits until the admin server at `admin_url` (`http://…`) of `what` answers `/readyz`
/// with 200.
pub async fn ready(http: &reqwest::Client, admin_url: &str, what: &str) {
    let url = format!("{admin_url}/readyz");
    eventually(&format!("{what} to be ready"), || async {
        http.get(&url)
            .send()
            .await
            .ok()?
            .status()
            .is_success()
            .then_some(())
    })
    .await;
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
        ready(&self.http, &admin_url, "fleet-api").await;
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
    /// A key registration (`key add`, `key accept`) is signed with the tests'
    /// administrator's key unless `env` or `args` name another.
    pub async fn fleetctl_with(&self, env: &[(&str, &str)], args: &[&str]) -> Output {
        let registers = args
            .windows(2)
            .any(|w| w[0] == "key" && matches!(w[1], "add" | "accept"))
            && !args
                .iter()
                .any(|a| matches!(*a, "--signing-key" | "--evidence-key"));
        let registrar = if registers && !env.iter().any(|(k, _)| *k == "FLEET_ADMIN_KEY_FILE") {
            Some(self.test_registrar_file().await)
        } else {
            None
        };
        tokio::process::Command::new(bin_dir().join("fleetctl"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("DATABASE_URL", &self.database_url)
            .env("AMQP_URL", &self.broker.amqp_url)
            .env("AMQP_NAMESPACE", &self.broker.namespace)
            .envs(
                registrar
                    .iter()
                    .map(|p| ("FLEET_ADMIN_KEY_FILE", p.as_os_str())),
            )
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

    /// `fleetctl token create` with `args`: the token (the first line it printed) on
    /// success, the error it printed otherwise.
    pub async fn token_create(&self, args: &[&str]) -> Result<String, String> {
        let mut all = vec!["token", "create"];
        all.extend_from_slice(args);
        let output = self.fleetctl_with(&[], &all).await;
        if output.status.success() {
            let stdout = String::from_utf8(output.stdout).unwrap();
            Ok(stdout.lines().next().unwrap().trim().to_owned())
        } else {
            Err(String::from_utf8(output.stderr).unwrap())
        }
    }

    /// A token made with `fleetctl token create` for `principal`, with `role`, acting for
    /// `tenants` (all of the principal's when none is named).
    pub async fn token_for(&self, principal: &str, role: &str, tenants: &[&str]) -> String {
        let mut args = vec!["--principal", principal, "--role", role];
        for tenant in tenants {
            args.extend(["--tenant", tenant]);
        }
        self.token_create(&args).await.unwrap()
    }

    /// `SELECT operation_view(o)` for one operation (of whichever tenant holds the id,
    /// [`TestFleet::row`]), straight from the database.
    pub async fn view_in_db(&self, op: &str) -> Value {
        let tenant = self.row(op).await.tenant_id;
        self.sql()
            .await
            .query_one(
                "SELECT operation_view(o) FROM operations o WHERE operation_id = $1 AND tenant_id = $2",
                &[&op, &tenant],
            )
            .await
            .unwrap()
            .get(0)
    }
}
