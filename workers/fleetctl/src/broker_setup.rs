//! `fleetctl broker setup`: run once per deploy, as the broker's admin (`AMQP_URL`), before
//! the components connect with users of their own. It declares the topology, then
//! creates or updates one broker user per component (`<prefix><role>`) with the least
//! permissions that component needs (`fleet_broker::permissions`), through the RabbitMQ
//! management HTTP API. Idempotent: users and permissions are PUT, so a changed password
//! or pattern is brought in line and nothing else is touched. The components then run
//! with `AMQP_TOPOLOGY=verify` and their own credentials in `AMQP_URL`.

use std::str::FromStr;

use clap::Args;
use fleet_broker::lapin::uri::AMQPUri;
use fleet_broker::permissions::{permissions, Permissions, Role, TopicPermissions};
use fleet_broker::{BrokerConfig, BrokerError, TopologyMode};
use fleet_runtime::Secret;
use serde_json::json;

#[derive(Args, Debug)]
pub struct BrokerSetupArgs {
    #[command(flatten)]
    pub management: ManagementArgs,
    #[command(flatten)]
    pub passwords: RolePasswords,
}

/// Where fleetctl makes broker users, and how it names them: `broker setup` one per
/// component, `principal add --broker` one per agent principal.
#[derive(Args, Debug)]
pub struct ManagementArgs {
    /// The RabbitMQ management API (plugin `rabbitmq_management`). The admin user and the
    /// vhost are those of AMQP_URL.
    #[arg(
        long,
        env = "RABBITMQ_MANAGEMENT_URL",
        default_value = "http://127.0.0.1:15672"
    )]
    pub management_url: String,
    /// Every broker user's name starts with this: a component's is `<prefix><role>`
    /// (fleet-agent, fleet-prepare, …), an agent principal's `<prefix>agent.<name>`.
    #[arg(long, env = "BROKER_USER_PREFIX", default_value = "fleet-")]
    pub user_prefix: String,
}

/// One password per component's user (never printed).
#[derive(Args, Debug)]
pub struct RolePasswords {
    /// Password of the user for agents (publish intents).
    #[arg(long, env = "BROKER_AGENT_PASSWORD", hide_env_values = true)]
    pub agent_password: Option<Secret<String>>,
    /// Password of the user for fleet-prepare.
    #[arg(long, env = "BROKER_PREPARE_PASSWORD", hide_env_values = true)]
    pub prepare_password: Option<Secret<String>>,
    /// Password of the user for fleet-execute.
    #[arg(long, env = "BROKER_EXECUTE_PASSWORD", hide_env_values = true)]
    pub execute_password: Option<Secret<String>>,
    /// Password of the user for fleet-reconcile.
    #[arg(long, env = "BROKER_RECONCILE_PASSWORD", hide_env_values = true)]
    pub reconcile_password: Option<Secret<String>>,
    /// Password of the user for fleet-webhook-ingest.
    #[arg(long, env = "BROKER_WEBHOOK_INGEST_PASSWORD", hide_env_values = true)]
    pub webhook_ingest_password: Option<Secret<String>>,
    /// Password of the user for fleet-api (rings execute when an approval completes a quorum).
    #[arg(long, env = "BROKER_API_PASSWORD", hide_env_values = true)]
    pub api_password: Option<Secret<String>>,
    /// Password of the user for operators (fleetctl reconcile).
    #[arg(long, env = "BROKER_OPERATOR_PASSWORD", hide_env_values = true)]
    pub operator_password: Option<Secret<String>>,
    /// Password of the user for fleet-relay (publishes outcome events).
    #[arg(long, env = "BROKER_RELAY_PASSWORD", hide_env_values = true)]
    pub relay_password: Option<Secret<String>>,
}

impl RolePasswords {
    fn of(&self, role: Role) -> Option<&Secret<String>> {
        match role {
            Role::Agent => self.agent_password.as_ref(),
            Role::Prepare => self.prepare_password.as_ref(),
            Role::Execute => self.execute_password.as_ref(),
            Role::Reconcile => self.reconcile_password.as_ref(),
            Role::WebhookIngest => self.webhook_ingest_password.as_ref(),
            Role::Api => self.api_password.as_ref(),
            Role::Operator => self.operator_password.as_ref(),
            Role::Relay => self.relay_password.as_ref(),
        }
    }
}

/// One user to create or update.
#[derive(Debug, Clone)]
pub struct BrokerUser {
    pub role: Role,
    pub name: String,
    pub password: Secret<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("no password for the {0} user: set BROKER_{1}_PASSWORD")]
    MissingPassword(Role, String),
    #[error("user prefix {0:?} may hold only letters, digits, '.', '_' and '-'")]
    BadPrefix(String),
    #[error("AMQP_URL is not a valid amqp:// URL")]
    BadAmqpUrl,
    #[error("the management URL is not a valid http(s) URL")]
    BadManagementUrl,
    #[error("declaring the topology: {0}")]
    Topology(#[from] BrokerError),
    #[error("management API unreachable (is the rabbitmq_management plugin enabled?): {0}")]
    Unreachable(reqwest::Error),
    #[error("management API refused {what}: HTTP {status}")]
    Refused { what: String, status: u16 },
}

/// The users `args` describe, every role's password required.
pub fn users(args: &BrokerSetupArgs) -> Result<Vec<BrokerUser>, SetupError> {
    let prefix = &args.management.user_prefix;
    if prefix.is_empty()
        || !prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        return Err(SetupError::BadPrefix(prefix.clone()));
    }
    Role::ALL
        .into_iter()
        .map(|role| {
            let password = args.passwords.of(role).ok_or_else(|| {
                SetupError::MissingPassword(role, role.name().to_uppercase().replace('-', "_"))
            })?;
            Ok(BrokerUser {
                role,
                name: format!("{prefix}{}", role.name()),
                password: password.clone(),
            })
        })
        .collect()
}

/// Declares the topology of `broker` (as its admin user), then puts every user and its
/// permissions on the vhost of `broker`. Returns each user's name and permissions.
pub async fn setup(
    broker: &BrokerConfig,
    management_url: &str,
    users: &[BrokerUser],
) -> Result<Vec<(String, Permissions)>, SetupError> {
    fleet_broker::ensure_topology(&broker.clone().with_topology(TopologyMode::Declare)).await?;
    let api = ManagementApi::new(broker, management_url)?;
    let mut applied = Vec::with_capacity(users.len());
    for user in users {
        let granted = permissions(broker, user.role);
        api.put_user(&user.name, user.password.expose()).await?;
        api.put_permissions(&user.name, &granted).await?;
        applied.push((user.name.clone(), granted));
    }
    Ok(applied)
}

/// Runs the command and prints what each user may do (never a password).
/// With `-o json`: `{"users": [{"user", "configure", "write", "read"}]}` (the permission
/// patterns each component's user was given).
pub async fn run(
    broker: &BrokerConfig,
    args: &BrokerSetupArgs,
    format: crate::args::Format,
) -> anyhow::Result<()> {
    let users = users(args)?;
    let done = setup(broker, &args.management.management_url, &users).await?;
    if format == crate::args::Format::Json {
        let rows: Vec<_> = done
            .iter()
            .map(|(name, p)| {
                serde_json::json!({"user": name, "configure": p.configure, "write": p.write, "read": p.read})
            })
            .collect();
        crate::output::json(&serde_json::json!({ "users": rows }));
        return Ok(());
    }
    for (name, p) in done {
        println!(
            "{name}: configure {} write {} read {}",
            p.configure, p.write, p.read
        );
    }
    Ok(())
}

/// The few calls of the RabbitMQ management API this needs, as the admin of AMQP_URL.
pub struct ManagementApi {
    http: reqwest::Client,
    base: reqwest::Url,
    admin: String,
    password: Secret<String>,
    vhost: String,
}

impl ManagementApi {
    /// Admin user, password and vhost are taken from `broker`'s URL (the first node's, for
    /// a cluster: users, permissions and the vhost are the cluster's, not a node's).
    pub fn new(broker: &BrokerConfig, management_url: &str) -> Result<ManagementApi, SetupError> {
        let first = broker.node_urls().first().copied().unwrap_or_default();
        // The parser's error would echo the URL, password included.
        let uri = AMQPUri::from_str(first).map_err(|_| SetupError::BadAmqpUrl)?;
        let base = reqwest::Url::parse(management_url).map_err(|_| SetupError::BadManagementUrl)?;
        if base.cannot_be_a_base() || !matches!(base.scheme(), "http" | "https") {
            return Err(SetupError::BadManagementUrl);
        }
        let http = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(10))
            .build()
            .map_err(SetupError::Unreachable)?;
        let info = uri.authority.userinfo;
        Ok(ManagementApi {
            http,
            base,
            admin: info.username,
            password: Secret::new(info.password),
            vhost: uri.vhost,
        })
    }

    pub(crate) async fn put_user(&self, name: &str, password: &str) -> Result<(), SetupError> {
        // No tags: the component users cannot use the management API or UI.
        self.put(
            &["users", name],
            json!({"password": password, "tags": ""}),
            format!("user {name}"),
        )
        .await
    }

    /// Whether the broker has a user of this name.
    pub(crate) async fn user_exists(&self, name: &str) -> Result<bool, SetupError> {
        let response = self
            .http
            .get(self.url(&["users", name]))
            .basic_auth(&self.admin, Some(self.password.expose()))
            .send()
            .await
            .map_err(SetupError::Unreachable)?;
        match response.status().as_u16() {
            200..=299 => Ok(true),
            404 => Ok(false),
            status => Err(SetupError::Refused {
                what: format!("reading user {name}"),
                status,
            }),
        }
    }

    /// Puts the user's topic permissions on one exchange of the vhost.
    pub(crate) async fn put_topic_permissions(
        &self,
        name: &str,
        t: &TopicPermissions,
    ) -> Result<(), SetupError> {
        let body = json!({"exchange": t.exchange, "write": t.write, "read": t.read});
        self.put(
            &["topic-permissions", &self.vhost, name],
            body,
            format!("the topic permissions of {name}"),
        )
        .await
    }

    pub(crate) async fn put_permissions(
        &self,
        name: &str,
        p: &Permissions,
    ) -> Result<(), SetupError> {
        let body = json!({"configure": p.configure, "write": p.write, "read": p.read});
        self.put(
            &["permissions", &self.vhost, name],
            body,
            format!("the permissions of {name}"),
        )
        .await
    }

    /// Deletes a user (and its permissions); a user that does not exist is not an error.
    pub async fn delete_user(&self, name: &str) -> Result<(), SetupError> {
        let response = self
            .http
            .delete(self.url(&["users", name]))
            .basic_auth(&self.admin, Some(self.password.expose()))
            .send()
            .await
            .map_err(SetupError::Unreachable)?;
        match response.status().as_u16() {
            200..=299 | 404 => Ok(()),
            status => Err(SetupError::Refused {
                what: format!("deleting user {name}"),
                status,
            }),
        }
    }

    async fn put(
        &self,
        path: &[&str],
        body: serde_json::Value,
        what: String,
    ) -> Result<(), SetupError> {
        let response = self
            .http
            .put(self.url(path))
            .basic_auth(&self.admin, Some(self.password.expose()))
            .json(&body)
            .send()
            .await
            .map_err(SetupError::Unreachable)?;
        match response.status() {
            s if s.is_success() => Ok(()),
            s => Err(SetupError::Refused {
                what,
                status: s.as_u16(),
            }),
        }
    }

    /// `/api/<segments…>`, each segment percent-encoded (the default vhost is `/`).
    fn url(&self, segments: &[&str]) -> reqwest::Url {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .expect("checked to be a base URL")
            .pop_if_empty()
            .push("api")
            .extend(segments);
        url
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: BrokerSetupArgs,
    }

    const ALL: [&str; 9] = [
        "bin",
        "--agent-password=a",
        "--prepare-password=p",
        "--execute-password=e",
        "--reconcile-password=r",
        "--webhook-ingest-password=w",
        "--api-password=i",
        "--operator-password=o",
        "--relay-password=l",
    ];

    #[test]
    fn one_user_per_role_named_with_the_prefix() {
        let cli = Cli::try_parse_from(ALL).unwrap();
        let names: Vec<String> = users(&cli.args)
            .unwrap()
            .into_iter()
            .map(|u| u.name)
            .collect();
        assert_eq!(
            names,
            [
                "fleet-agent",
                "fleet-prepare",
                "fleet-execute",
                "fleet-reconcile",
                "fleet-webhook-ingest",
                "fleet-api",
                "fleet-operator",
                "fleet-relay"
            ]
        );
    }

    #[test]
    fn every_password_is_required_and_none_is_shown() {
        let cli = Cli::try_parse_from(&ALL[..8]).unwrap();
        let error = users(&cli.args).unwrap_err().to_string();
        assert_eq!(
            error,
            "no password for the relay user: set BROKER_RELAY_PASSWORD"
        );
        let cli = Cli::try_parse_from(ALL).unwrap();
        assert!(!format!("{:?}", users(&cli.args).unwrap()).contains("password: \"a\""));
        let bad = Cli::try_parse_from([&ALL[..], &["--user-prefix=a b"]].concat()).unwrap();
        assert!(matches!(users(&bad.args), Err(SetupError::BadPrefix(_))));
    }

    #[test]
    fn api_paths_encode_the_vhost() {
        let broker = BrokerConfig::new("amqp://admin:s3cret@127.0.0.1:5672/%2f");
        let api = ManagementApi::new(&broker, "http://127.0.0.1:15672").unwrap();
        assert_eq!(
            api.url(&["permissions", &api.vhost, "fleet-agent"])
                .as_str(),
            "http://127.0.0.1:15672/api/permissions/%2F/fleet-agent"
        );
        assert!(matches!(
            ManagementApi::new(&BrokerConfig::new("amqp:s3cret"), "http://x"),
            Err(SetupError::BadAmqpUrl)
        ));
    }
}
