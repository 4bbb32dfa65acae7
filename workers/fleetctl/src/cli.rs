//! The command line. Each command takes only the connection it uses, as flags with env:
//! people's commands the API (`ApiArgs`, which a context in the config file may fill),
//! operator tooling the owner's database and the broker.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Parser, Subcommand};
use fleet_core::{ApprovalStatus, Status, WaitFor};

use crate::api_target::ApiArgs;
use crate::args::{Broker, Connection, Database, OutputArgs};

#[derive(Parser)]
#[command(
    name = "fleetctl",
    version,
    about = "Approve, inspect and operate the fleet"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `--status`: one of the status names, listed in `--help` and in the error for any other.
fn status_parser() -> impl TypedValueParser<Value = Status> {
    PossibleValuesParser::new(Status::ALL.map(Status::as_str))
        .map(|name| Status::parse(&name).expect("only the status names are possible values"))
}

/// `--approval-status`: one of the approval status names.
fn approval_parser() -> impl TypedValueParser<Value = ApprovalStatus> {
    PossibleValuesParser::new(ApprovalStatus::ALL.map(ApprovalStatus::as_str)).map(|name| {
        ApprovalStatus::parse(&name).expect("only the approval status names are possible values")
    })
}

/// `wait --for`: the values the API's `wait_for` takes.
fn wait_for_parser() -> impl TypedValueParser<Value = WaitFor> {
    PossibleValuesParser::new([WaitFor::Decision.as_str(), WaitFor::Final.as_str()])
        .map(|name| WaitFor::parse(&name).expect("only the wait_for names are possible values"))
}

#[derive(Subcommand)]
pub enum Command {
    /// Create the database if needed, apply every pending migration (which creates one
    /// login role per component: fleet_api, fleet_prepare, fleet_execute, fleet_reconcile,
    /// fleet_webhook_ingest, fleet_relay), and set the password of each role whose
    /// FLEET_DB_PASSWORD_<COMPONENT> is set (e.g. FLEET_DB_PASSWORD_EXECUTE).
    Migrate {
        #[command(flatten)]
        db: Database,
    },
    /// Print the payload hash of an intent.v1 file (what an approver approves).
    Hash {
        /// The intent.v1 JSON file.
        file: PathBuf,
    },
    /// Validate an intent.v1 file and publish it to intents.prepare with a publisher confirm.
    Submit {
        /// The intent.v1 JSON file.
        file: PathBuf,
        #[command(flatten)]
        amqp: Broker,
    },
    /// Submit a corrected intent that replaces OP (it needs a new approval).
    Supersede {
        /// The operation the correction replaces (op_…); it must not have started.
        operation_id: String,
        /// The corrected intent.v1 JSON file (a new operation id, `supersedes` set to OP).
        #[arg(long)]
        file: PathBuf,
        #[command(flatten)]
        amqp: Broker,
    },
    /// Approve the exact snapshot hash of a pending operation, through the API as the
    /// principal of your token; it runs once its quorum of distinct approvers is reached.
    Approve {
        /// The operation to approve (op_…).
        #[arg(required_unless_present = "batch")]
        operation_id: Option<String>,
        /// The payload hash you reviewed (sha256:…, from `fleetctl show` or `fleetctl hash`).
        #[arg(long, required_unless_present = "batch")]
        hash: Option<String>,
        /// Approve these operations (op_…, comma-separated or repeated) in one decision,
        /// signed once with --key: their count, total per currency and payees are shown,
        /// and the one signature counts as one approval of each of them and of no other.
        #[arg(long, num_args = 1.., value_delimiter = ',', conflicts_with_all = ["operation_id", "hash"], requires = "key")]
        batch: Vec<String>,
        /// Sign the approval with this private key (`fleetctl key generate`): the
        /// statement is rebuilt from the snapshot here, shown, and signed on this machine.
        /// Needed where the operation's policy asks for signed approvals.
        #[arg(long, env = "FLEET_SIGNING_KEY")]
        key: Option<PathBuf>,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Reject an operation that has not started, through the API; it is cancelled.
    Reject {
        /// The operation to reject (op_…).
        operation_id: String,
        /// Why, in words (recorded with the decision).
        #[arg(long)]
        reason: String,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Show one operation as the API shows it to your token, payload hash included.
    Show {
        /// The operation to show (op_…).
        operation_id: String,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// An operation's history through the API, oldest first: what happened, who did it,
    /// why and when (every page; `-o json` prints the entries as one page).
    History {
        /// The operation whose history to show (op_…).
        operation_id: String,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// An operation's evidence bundle through the API, signed by the deployment's
    /// evidence key, printed as one line of canonical JSON (`> op.evidence.json`).
    Evidence {
        /// The operation whose evidence to fetch (op_…).
        operation_id: String,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Check an evidence bundle on this machine alone (no database, no network): every
    /// part against its signed digest, the snapshot's hash, each approver's signature and
    /// key, the quorum, the provider's receipt and the deployment's signature. Says what it
    /// proves and what it cannot; exits 1 naming the parts that fail.
    Verify {
        /// The bundle (`fleetctl evidence OP > FILE`).
        file: PathBuf,
        /// The deployment's evidence key id the bundle must be signed by (as
        /// GET /v1/evidence-keys lists it).
        #[arg(long, conflicts_with = "public_key")]
        key_id: Option<String>,
        /// A file holding the deployment's evidence public key (EVIDENCE_KEY_FILE's .pub).
        #[arg(long)]
        public_key: Option<PathBuf>,
    },
    /// List your tenants' operations through the API, newest first, one page at a time.
    List {
        /// Only operations in this status.
        #[arg(long, value_parser = status_parser())]
        status: Option<Status>,
        /// Only operations with this approval status.
        #[arg(long, value_parser = approval_parser())]
        approval_status: Option<ApprovalStatus>,
        /// Operations on the page (1 to 100).
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u8).range(1..=100))]
        limit: u8,
        /// The page after the one that printed this cursor (with the same filters).
        #[arg(long)]
        cursor: Option<String>,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Wait until an operation's approval is decided or it is final. Exit status: 0 when
    /// it is, 2 when --timeout ran out first, 3 when it was escalated to an operator
    /// instead (it waits for a person), 1 on any error.
    Wait {
        /// The operation to wait for (op_…).
        operation_id: String,
        /// `decision`: approved, rejected or expired (or final without a decision);
        /// `final`: succeeded, failed, cancelled or disputed.
        #[arg(long = "for", value_parser = wait_for_parser())]
        wait_for: WaitFor,
        /// The longest to wait: seconds, or a number and s, m or h (`90s`, `10m`, `2h`).
        #[arg(long, default_value = "5m", value_parser = crate::wait::parse_timeout)]
        timeout: std::time::Duration,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Settle an unknown or accepted operation by hand, with evidence, through the API as
    /// the operator of your token.
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
        api: ApiArgs,
    },
    /// Take an operation out of the workers' hands for investigation, through the API.
    Dispute {
        /// The operation to dispute (op_…).
        operation_id: String,
        /// Why, in words (recorded with the decision).
        #[arg(long)]
        reason: String,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Ring the reconcile doorbell for an operation now (the owner's database connection
    /// finds it, the broker carries the bell).
    Reconcile {
        /// The operation reconcile should look at (op_…); it must exist.
        operation_id: String,
        /// Its tenant: needed only when two tenants hold the id (ids are unique per tenant).
        #[arg(long)]
        tenant: Option<String>,
        #[command(flatten)]
        conn: Connection,
    },
    /// Bearer tokens for the HTTP API (create, revoke, list).
    Token {
        #[command(subcommand)]
        command: crate::token::TokenCommand,
        #[command(flatten)]
        db: Database,
    },
    /// Run every retention once to the end, now: outbox events published longer ago than
    /// the outbox retention, webhook dedup rows older than the webhook retention. The
    /// relay and the webhook receiver do the same in the background, a bounded amount at a
    /// time; operations, their history, attempts and approvals are never deleted.
    Prune {
        /// Published outcome events older than this are deleted (unpublished ones never).
        #[arg(long, env = "OUTBOX_RETENTION_S", default_value_t = 86_400)]
        outbox_retention_s: u64,
        /// Webhook dedup rows older than this are deleted (at least 604800: 7 days).
        #[arg(long, env = "WEBHOOK_RETENTION_S", default_value_t = 2_592_000,
              value_parser = clap::value_parser!(u64).range(604_800..))]
        webhook_retention_s: u64,
        /// Rows per delete statement.
        #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(i64).range(1..=100_000))]
        batch: i64,
        #[command(flatten)]
        db: Database,
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
    /// Standing mandates (create, list, show, revoke) and the revocation of an approval,
    /// through the API as the principal of your token.
    Mandate {
        #[command(subcommand)]
        command: crate::mandate::MandateCommand,
    },
    /// Dead letters (list, show, replay, discard): the messages a work queue could not
    /// take, kept by the fleet, through the API as the operator of your token.
    DeadLetters {
        #[command(subcommand)]
        command: crate::dead_letters::DeadLetterCommand,
    },
    /// Which quorum policy is in force for each action, by default and per tenant
    /// (assign, unassign, list): the deployment's decision, never the agent's.
    Policy {
        #[command(subcommand)]
        command: crate::policy::PolicyCommand,
        #[command(flatten)]
        db: Database,
    },
    /// People and bots who may act (add, list, remove); people sign in to the console
    /// by their OpenID Connect subject.
    Principal {
        #[command(subcommand)]
        command: crate::principal::PrincipalCommand,
        #[command(flatten)]
        conn: Connection,
    },
    /// Named API contexts (URL, tenant, where the token comes from) in the config file.
    Context {
        #[command(subcommand)]
        command: crate::context::ContextCommand,
    },
    /// Print a shell completion script: `fleetctl completion bash > /etc/bash_completion.d/fleetctl`.
    Completion {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Run the whole pipeline on this machine and print what happened.
    Demo {
        #[command(flatten)]
        args: crate::demo::DemoArgs,
        #[command(flatten)]
        conn: Connection,
    },
}

#[derive(Subcommand)]
pub enum BrokerCommand {
    /// As the broker admin of AMQP_URL: declare the topology, then create or update one
    /// least-privilege user per component (management API; idempotent).
    Setup {
        #[command(flatten)]
        args: crate::broker_setup::BrokerSetupArgs,
        #[command(flatten)]
        amqp: Broker,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::Format;
    use clap::CommandFactory;

    fleet_runtime::test_every_argument_has_help_text!(Cli);

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
    fn a_public_key_that_begins_with_a_hyphen_is_taken_as_the_key() {
        let key = "-mIaAGDrDsMhX0S19_CyXcggGJW6OTCoUGXIcX4I7Mc";
        let parsed = Cli::try_parse_from([
            "fleetctl",
            "key",
            "add",
            "--principal",
            "bob",
            "--public-key",
            key,
            "--by",
            "admin",
        ])
        .unwrap();
        let Command::Key {
            command: crate::key::KeyCommand::Add { public_key, .. },
        } = parsed.command
        else {
            panic!("key add")
        };
        assert_eq!(public_key, key);
    }

    #[test]
    fn output_is_chosen_with_o_or_json() {
        let format = |args: &[&str]| Cli::try_parse_from(args).unwrap().output.format();
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
        // Global: before the command, and on every command, nested ones too.
        assert_eq!(format(&["fleetctl", "-o", "json", "list"]), Format::Json);
        assert_eq!(
            format(&["fleetctl", "token", "list", "--json"]),
            Format::Json
        );
        assert_eq!(
            format(&["fleetctl", "policy", "list", "-o", "json"]),
            Format::Json
        );
        assert_eq!(
            format(&["fleetctl", "hash", "f.json", "--json"]),
            Format::Json
        );
        assert!(Cli::try_parse_from(["fleetctl", "list", "-o", "yaml"]).is_err());
        assert!(Cli::try_parse_from(["fleetctl", "list", "-o", "table", "--json"]).is_err());
    }

    fn help_of(path: &[&str]) -> String {
        let mut cmd = Cli::command();
        // Global arguments reach the subcommands when the command is built, as at parsing.
        cmd.build();
        let mut sub = &mut cmd;
        for name in path {
            sub = sub.find_subcommand_mut(name).unwrap();
        }
        sub.render_long_help().to_string()
    }

    #[test]
    fn each_command_lists_only_the_connection_it_uses() {
        for people in [
            &["approve"][..],
            &["show"],
            &["list"],
            &["wait"],
            &["resolve"],
        ] {
            let help = help_of(people);
            assert!(
                !help.contains("DATABASE_URL") && !help.contains("AMQP_URL"),
                "{people:?}:\n{help}"
            );
            assert!(
                help.contains("FLEET_API_URL") && help.contains("FLEET_CONTEXT"),
                "{people:?}:\n{help}"
            );
        }
        for operator in [
            &["migrate"][..],
            &["token", "create"],
            &["key", "add"],
            &["reconcile"],
            &["prune"],
        ] {
            let help = help_of(operator);
            assert!(
                help.contains("DATABASE_URL") && !help.contains("FLEET_TOKEN"),
                "{operator:?}:\n{help}"
            );
        }
        assert!(!help_of(&["key", "generate"]).contains("DATABASE_URL"));
        assert!(!help_of(&["submit"]).contains("DATABASE_URL"));
        assert!(help_of(&["submit"]).contains("AMQP_URL"));
    }

    #[test]
    fn wait_takes_the_apis_wait_for_values_and_a_timeout() {
        let Command::Wait {
            wait_for, timeout, ..
        } = Cli::try_parse_from([
            "fleetctl",
            "wait",
            "op_x",
            "--for",
            "decision",
            "--timeout",
            "2m",
        ])
        .unwrap()
        .command
        else {
            panic!("wait")
        };
        assert_eq!(wait_for, WaitFor::Decision);
        assert_eq!(timeout, std::time::Duration::from_secs(120));
        let refused = Cli::try_parse_from(["fleetctl", "wait", "op_x", "--for", "done"])
            .err()
            .expect("done is not a wait_for value");
        assert!(refused.to_string().contains("final"), "{refused}");
    }
}
