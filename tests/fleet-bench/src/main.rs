//! fleet-bench: parse, then run the benchmark the arguments describe.

use clap::Parser;
use fleet_bench::BenchArgs;
use fleetctl::args::Connection;

/// Throughput, latency and cost of the fleet on this machine, with the real binaries.
#[derive(Parser)]
#[command(name = "fleet-bench", version)]
struct Cli {
    #[command(flatten)]
    conn: Connection,
    #[command(flatten)]
    args: BenchArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    fleet_runtime::init_tracing_with_default(fleet_runtime::LogFormat::Text, "warn,lapin=off");
    fleet_bench::run(&cli.conn, cli.args).await
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_help_speaks_of_the_fleet_only() {
        let help = super::Cli::command().render_long_help().to_string();
        assert!(!help.to_lowercase().contains("issue"), "{help}");
    }

    fleet_runtime::test_every_argument_has_help_text!(super::Cli);
}
