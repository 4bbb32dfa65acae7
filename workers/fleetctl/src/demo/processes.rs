//! The demo's processes: the provider simulator, the four workers, the HTTP API and the
//! outcome-event relay on their default admin addresses (started and stopped by
//! [`crate::processes`]).

use std::path::Path;

use fleet_runtime::admin_addrs;

use crate::args::Connection;
use crate::processes::{self, Proc};

/// A development-only webhook signing secret (base64 of "dev-only-webhook-secret!").
const DEMO_WEBHOOK_SECRET: &str = "whsec_ZGV2LW9ubHktd2ViaG9vay1zZWNyZXQh";
/// Where webhook-ingest's receiver listens unless WEBHOOK_ADDR says otherwise.
const DEFAULT_WEBHOOK_ADDR: &str = "127.0.0.1:8091";

pub struct Fleet {
    procs: Vec<Proc>,
    sim_url: String,
    api_url: String,
}

impl Fleet {
    pub async fn start(
        bin_dir: &Path,
        log_dir: &Path,
        conn: &Connection,
        sim_addr: &str,
        api_addr: &str,
        webhook_delay_ms: u64,
        payments: &[(&str, &str)],
    ) -> anyhow::Result<Fleet> {
        let client = reqwest::Client::new();
        let sim_url = format!("http://{sim_addr}");
        let sim = "fleet-provider-sim";
        let mut procs = vec![processes::spawn(
            bin_dir,
            log_dir,
            sim,
            sim,
            &[("SIM_ADDR", sim_addr)],
        )?];
        processes::wait_http_ok(
            &client,
            &format!("{sim_url}/_sim/effects"),
            "the provider simulator",
        )
        .await?;
        // The demo's webhook receiver needs a signing secret; a development one unless
        // the caller provides WEBHOOK_SECRETS.
        let webhook_secrets =
            std::env::var("WEBHOOK_SECRETS").unwrap_or_else(|_| DEMO_WEBHOOK_SECRET.to_owned());
        // The simulator signs its events with the newest secret and posts each provider's
        // to its own path of the receiver.
        let newest = webhook_secrets
            .split(',')
            .map(str::trim)
            .find(|s| !s.is_empty())
            .unwrap_or(DEMO_WEBHOOK_SECRET);
        // The receiver listens where WEBHOOK_ADDR says (the processes inherit it), else at
        // webhook-ingest's default.
        let receiver =
            std::env::var("WEBHOOK_ADDR").unwrap_or_else(|_| DEFAULT_WEBHOOK_ADDR.to_owned());
        let hooks = serde_json::json!({
            "url": format!("http://{receiver}/webhooks/{{provider}}"),
            "secret": newest,
            "delay_ms": webhook_delay_ms,
        });
        client
            .post(format!("{sim_url}/_sim/webhooks/config"))
            .json(&hooks)
            .send()
            .await?
            .error_for_status()?;
        let envs = [
            ("AMQP_URL", conn.amqp.amqp_url.expose()),
            ("AMQP_NAMESPACE", conn.amqp.amqp_namespace.as_str()),
            ("PAYMENTS_URL", sim_url.as_str()),
            ("CRM_URL", sim_url.as_str()),
            ("ORDERS_URL", sim_url.as_str()),
            ("ESIGN_URL", sim_url.as_str()),
            ("WEBHOOK_SECRETS", webhook_secrets.as_str()),
            ("API_ADDR", api_addr),
            ("LOG_FORMAT", "json"),
            // The demo's agent publishes as the broker user of AMQP_URL, which no principal
            // speaks as: a development door (docs/operations.md#identities).
            ("PREPARE_ANONYMOUS_INTENTS", "allow"),
            // The demo's report reads the refused intents from the broker's dead-letter
            // queue itself; the relay leaves them there.
            ("RELAY_KEEP_DEAD_LETTERS", "false"),
        ];
        let workers = [
            ("fleet-prepare", admin_addrs::PREPARE),
            ("fleet-execute", admin_addrs::EXECUTE),
            ("fleet-reconcile", admin_addrs::RECONCILE),
            ("fleet-webhook-ingest", admin_addrs::WEBHOOK_INGEST),
            ("fleet-api", admin_addrs::API),
            ("fleet-relay", admin_addrs::RELAY),
        ];
        for (name, _) in workers {
            // Each component connects as its own database role (created by the migrations).
            let database_url =
                processes::component_database_url(conn.db.database_url.expose(), name)?;
            // `payments` last: a later setting of the same name wins.
            let envs = [
                envs.as_slice(),
                payments,
                &[("DATABASE_URL", database_url.as_str())],
            ]
            .concat();
            procs.push(processes::spawn(bin_dir, log_dir, name, name, &envs)?);
        }
        let fleet = Fleet {
            procs,
            sim_url,
            api_url: format!("http://{api_addr}"),
        };
        for (name, admin) in workers {
            processes::wait_http_ok(&client, &format!("http://{admin}/readyz"), name).await?;
        }
        println!(
            "started the provider simulator, {} workers, the HTTP API and the event relay",
            workers.len() - 2
        );
        Ok(fleet)
    }

    pub fn sim_url(&self) -> &str {
        &self.sim_url
    }

    pub fn api_url(&self) -> &str {
        &self.api_url
    }

    /// SIGTERM every process (workers drain in-flight work), then wait; kill stragglers.
    pub async fn stop(&mut self) {
        processes::stop_all(&mut self.procs).await;
    }
}
