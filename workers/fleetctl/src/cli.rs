//! The command line. Connection settings are global flags with env, as in the workers.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use fleet_broker::BrokerConfig;
use fleet_core::Status;
use fleet_runtime::{AmqpTopology, RedactedUrl};

#[derive(Parser)]
#[command(
    name = "fleetctl",
    version,
    about = "Approve, inspect and operate the fleet"
)]
pub struct Cli {
    #[command(flatten)]
    pub conn: Connection,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Args, Clone, Debug)]
pub struct Connection {
    /// Postgres URL (the password is never printed).
    #[arg(
        long,
        global = true,
        env = "DATABASE_URL",
        hide_env_values = true,
        default_value = "postgres://postgres@127.0.0.1:5432/fleet"
    )]
    pub database_url: RedactedUrl,
    /// RabbitMQ URL (the password is never printed).
    #[arg(
        long,
        global = true,
        env = "AMQP_URL",
        hide_env_values = true,
        default_value = "amqp://guest:guest@127.0.0.1:5672/%2f"
    )]
    pub amqp_url: RedactedUrl,
    /// Prefix of every queue name (empty in production).
    #[arg(long, global = true, env = "AMQP_NAMESPACE", default_value = "")]
    pub amqp_namespace: String,
    /// `verify` with a least-privilege broker user (the agent's for submit, the
    /// operator's for approve and reconcile): check the topology, never declare it.
    #[arg(long, global = true, env = "AMQP_TOPOLOGY", value_enum, default_value_t = AmqpTopology::Declare)]
    pub amqp_topology: AmqpTopology,
}

/// How `show` and `list` print operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned text for people.
    Table,
    /// Objects keyed by the `operations` column names, with `attempts` and `events`.
    Json,
}

#[derive(Args, Clone, Copy, Debug)]
pub struct OutputArgs {
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Same as `-o json`.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
}

impl OutputArgs {
    pub fn format(self) -> Format {
        if self.json {
            Format::Json
        } else {
            self.format
        }
    }
}

/// `--status`: one of the status names, listed in `--help` and in the error for any other.
fn status_parser() -> impl TypedValueParser<Value = Status> {
    PossibleValuesParser::new(Status::ALL.map(Status::as_str))
        .map(|name| Status::parse(&name).expect("only the status names are possible values"))
}

impl Connection {
    pub fn broker(&self) -> BrokerConfig {
        BrokerConfig::new(self.amqp_url.expose())
            .with_namespace(self.amqp_namespace.clone())
            .with_topology(self.amqp_topology.into())
    }
}

#[derive(Subcommand)]
pub enum Command {
    /// Create the database if needed, apply every pending migration (which creates one
    /// login role per component: fleet_api, fleet_prepare, fleet_execute, fleet_reconcile,
    /// fleet_webhook_ingest, fleet_relay), and set the password of each role whose
    /// FLEET_DB_PASSWORD_<COMPONENT> is set (e.g. FLEET_DB_PASSWORD_EXECUTE).
    Migrate,
    /// Print the payload hash of an intent.v1 file (what an approver approves).
    Hash {
        /// The intent.v1 JSON file.
        file: PathBuf,
    },
    /// Validate an intent.v1 file and publish it to intents.prepare with a publisher confirm.
    Submit {
        /// The intent.v1 JSON file.
        file: PathBuf,
    },
    /// Submit a corrected intent that replaces OP (it needs a new approval).
    Supersede {
        /// The operation the correction replaces (op_…); it must not have started.
        operation_id: String,
        /// The corrected intent.v1 JSON file (a new operation id, `supersedes` set to OP).
        #[arg(long)]
        file: PathBuf,
    },
    /// Approve the exact snapshot hash of a pending operation, through the API as the
    /// principal of FLEET_TOKEN; it runs once its quorum of distinct approvers is reached.
    Approve {
        /// The operation to approve (op_…).
        operation_id: String,
        /// The payload hash you reviewed (sha256:…, from `fleetctl show` or `fleetctl hash`).
        #[arg(long)]
        hash: String,
        /// Sign the approval with this private key (`fleetctl key generate`): the
        /// statement is rebuilt from the snapshot here, shown, and signed on this machine.
        /// Needed where the operation's policy asks for signed approvals.
        #[arg(long, env = "FLEET_SIGNING_KEY")]
        key: Option<PathBuf>,
        #[command(flatten)]
        api: crate::decide::ApiConnection,
    },
    /// Reject an operation that has not started, through the API; it is cancelled.
    Reject {
        /// The operation to reject (op_…).
        operation_id: String,
        /// Why, in words (recorded with the decision).
        #[arg(long)]
        reason: String,
        #[command(flatten)]
        api: crate::decide::ApiConnection,
    },
    /// Show one operation with its attempts and events.
    Show {
        /// The operation to show (op_…).
        operation_id: String,
        /// Its tenant: needed only when two tenants hold the id (ids are unique per tenant).
        #[arg(long)]
        tenant: Option<String>,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// List operations, newest first, with their amount, reason, escalation and age.
    List {
        /// Only operations in this status.
        #[arg(long, value_parser = status_parser())]
        status: Option<Status>,
        /// Only operations escalated to an operator.
        #[arg(long)]
        escalated: bool,
        /// At most this many operations (1 to 10000).
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(i64).range(1..=10_000))]
        limit: i64,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Settle an unknown or accepted operation by hand, with evidence, through the API as
    /// the operator of FLEET_TOKEN.
    Resolve {
        /// The operation to settle (op_…).
        operation_id: String,
        /// succeeded, failed or cancelled.
        #[arg(long, value_parser = ["succeeded", "failed", "cancelled"])]
        outcome: String,
        /// The provider's id of the effect (required for succeeded unless already known).
        #[arg(long)]
        external_id: Option<String>,
        /// What you checked, in words (recorded with the decision).
        #[arg(long)]
        evidence: String,
        #[command(flatten)]
        api: crate::decide::ApiConnection,
    },
    /// Take an operation out of the workers' hands for investigation, through the API.
    Dispute {
        /// The operation to dispute (op_…).
        operation_id: String,
        /// Why, in words (recorded with the decision).
        #[arg(long)]
        reason: String,
        #[command(flatten)]
        api: crate::decide::ApiConnection,
    },
    /// Ring the reconcile doorbell for an operation now.
    Reconcile {
        /// The operation reconcile should look at (op_…); it must exist.
        operation_id: String,
        /// Its tenant: needed only when two tenants hold the id (ids are unique per tenant).
        #[arg(long)]
        tenant: Option<String>,
    },
    /// Bearer tokens for the HTTP API (create, revoke, list).
    Token {
        #[command(subcommand)]
        command: crate::token::TokenCommand,
    },
    /// Broker administration.
    Broker {
        #[command(subcommand)]
        command: BrokerCommand,
    },
    /// Approvers' signing keys: generate a pair locally; add, remove or list registered
    /// public keys (an administrator's, over the owner's database connection).
    Key {
        #[command(subcommand)]
        command: crate::key::KeyCommand,
    },
    /// People and bots who may act (add, list, remove); people sign in to the console
    /// by their OpenID Connect subject.
    Principal {
        #[command(subcommand)]
        command: crate::principal::PrincipalCommand,
    },
    /// Run the whole pipeline on this machine and print what happened.
    Demo(crate::demo::DemoArgs),
}

#[derive(Subcommand)]
pub enum BrokerCommand {
    /// As the broker admin of AMQP_URL: declare the topology, then create or update one
    /// least-privilege user per component (management API; idempotent).
    Setup(crate::broker_setup::BrokerSetupArgs),
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn every_command_and_argument_has_help_text() {
        assert_eq!(
            fleet_runtime::undocumented_arguments(&Cli::command()),
            Vec::<String>::new()
        );
    }

    #[test]
    fn status_lists_its_values_and_refuses_others() {
        let mut cmd = Cli::command();
        let help = cmd
            .find_subcommand_mut("list")
            .unwrap()
            .render_help()
            .to_string();
        for status in Status::ALL {
            assert!(
                help.contains(status.as_str()),
                "{status:?} missing from:\n{help}"
            );
        }
        let refused = Cli::try_parse_from(["fleetctl", "list", "--status", "pending"])
            .err()
            .expect("pending is not a status");
        assert!(refused.to_string().contains("not_started"), "{refused}");
        let Command::List { status, .. } =
            Cli::try_parse_from(["fleetctl", "list", "--status", "unknown"])
                .unwrap()
                .command
        else {
            panic!("list")
        };
        assert_eq!(status, Some(Status::Unknown));
    }

    #[test]
    fn output_is_chosen_with_o_or_json() {
        let format = |args: &[&str]| match Cli::try_parse_from(args).unwrap().command {
            Command::List { output, .. } | Command::Show { output, .. } => output.format(),
            _ => unreachable!(),
        };
        assert_eq!(format(&["fleetctl", "list"]), Format::Table);
        assert_eq!(format(&["fleetctl", "list", "-o", "json"]), Format::Json);
        assert_eq!(
            format(&["fleetctl", "list", "--output", "table"]),
            Format::Table
        );
        assert_eq!(format(&["fleetctl", "list", "--json"]), Format::Json);
        assert_eq!(
            format(&["fleetctl", "show", "op_x", "-o", "json"]),
            Format::Json
        );
        assert!(Cli::try_parse_from(["fleetctl", "list", "-o", "yaml"]).is_err());
        assert!(Cli::try_parse_from(["fleetctl", "list", "-o", "table", "--json"]).is_err());
    }
}
