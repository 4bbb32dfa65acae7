//! An agent principal's own broker user (`fleetctl principal add … --broker`): the queue
//! door's identity. The user may publish intents — RabbitMQ checks each message's
//! `user_id` against it, and prepare maps that user to the principal — and follow its
//! tenants' outcome events on queues of its own (`fleet_broker::permissions::
//! agent_principal_permissions`). It is created (or its permissions brought in line with
//! the principal's tenants) through the management API as the broker admin of AMQP_URL,
//! and deleted when the principal is removed.

use clap::Args;
use fleet_broker::permissions::{agent_principal_permissions, agent_queue_prefix};
use fleet_broker::BrokerConfig;
use fleet_core::Role;
use fleet_runtime::Secret;
use fleet_store::{BrokerUserSet, Store};

use crate::broker_setup::{ManagementApi, ManagementArgs};

#[derive(Args, Debug)]
pub struct BrokerUserArgs {
    /// Give this agent a broker user of its own (`<prefix>agent.<name>`) that publishes
    /// intents as this principal and binds only its tenants' outcome events; run again
    /// after granting tenants. Needs AMQP_URL to be the broker's admin.
    #[arg(long)]
    pub broker: bool,
    #[command(flatten)]
    pub management: ManagementArgs,
    /// The broker user's password; without it a new user gets a random one, printed once,
    /// and an existing user keeps its own.
    #[arg(long, env = "BROKER_PRINCIPAL_PASSWORD", hide_env_values = true)]
    pub broker_password: Option<Secret<String>>,
}

/// The broker user an agent principal speaks as.
pub fn broker_user_name(prefix: &str, principal: &str) -> String {
    format!("{prefix}agent.{principal}")
}

/// Creates or updates `principal`'s broker user for `tenants` (all it has now), records it,
/// and prints what it may do.
pub async fn give(
    store: &Store,
    broker: &BrokerConfig,
    args: &BrokerUserArgs,
    principal: &str,
    role: Role,
    tenants: &[String],
) -> anyhow::Result<BrokerUserGiven> {
    anyhow::ensure!(
        role == Role::Agent,
        "refused: only agents publish intents; {principal} is a {role}"
    );
    let user = broker_user_name(&args.management.user_prefix, principal);
    match store.set_broker_user(principal, &user).await? {
        BrokerUserSet::Set => {}
        BrokerUserSet::NoPrincipal => anyhow::bail!("no live principal is named {principal}"),
        BrokerUserSet::Taken { by } => {
            anyhow::bail!("refused: {by} already speaks as broker user {user}")
        }
    }
    let api = ManagementApi::new(broker, &args.management.management_url)?;
    let new_password = match (&args.broker_password, api.user_exists(&user).await?) {
        (Some(given), _) => {
            api.put_user(&user, given.expose()).await?;
            None
        }
        (None, true) => None,
        (None, false) => {
            let password = random_password()?;
            api.put_user(&user, &password).await?;
            Some(password)
        }
    };
    let (permissions, topic) = agent_principal_permissions(broker, principal, tenants);
    api.put_permissions(&user, &permissions).await?;
    api.put_topic_permissions(&user, &topic).await?;
    Ok(BrokerUserGiven {
        words: format!(
            "broker user {user}: publishes intents as {principal}; binds {} events of {} on queues named {}…",
            topic.exchange,
            tenants.join(", "),
            agent_queue_prefix(broker, principal)
        ),
        json: serde_json::json!({
            "user": user,
            "exchange": topic.exchange,
            "queue_prefix": agent_queue_prefix(broker, principal),
            "password": new_password,
        }),
        password: new_password,
    })
}

/// What `give` did, for the caller to print: in words, or as JSON (`password` only when
/// a new one was made: it is shown once).
pub struct BrokerUserGiven {
    pub words: String,
    pub json: serde_json::Value,
    pub password: Option<String>,
}

impl BrokerUserGiven {
    pub fn lines(&self) -> String {
        match &self.password {
            Some(password) => format!("{}\nbroker password (shown once): {password}", self.words),
            None => self.words.clone(),
        }
    }
}

/// Deletes a removed principal's broker user, if it had one.
pub async fn take_away(
    broker: &BrokerConfig,
    management_url: &str,
    user: &str,
) -> anyhow::Result<()> {
    ManagementApi::new(broker, management_url)?
        .delete_user(user)
        .await?;
    Ok(())
}

/// 24 random bytes, hex: a password nobody chose.
fn random_password() -> anyhow::Result<String> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes)
        .map_err(|e| anyhow::anyhow!("no randomness from the operating system: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
