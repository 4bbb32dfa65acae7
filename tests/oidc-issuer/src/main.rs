//! `fleet-oidc-issuer`: the test OpenID Connect issuer as a process, to try the console
//! by hand. Never for production: it signs in whoever is chosen on its page.

use std::net::SocketAddr;

use clap::Parser;
use fleet_oidc_issuer::{IssuerConfig, TestUser};

#[derive(Debug, Parser)]
#[command(
    about = "A test OpenID Connect issuer that signs in configured users (never for production)"
)]
struct Args {
    #[arg(long, env = "ISSUER_ADDR", default_value = "127.0.0.1:8095")]
    addr: SocketAddr,
    /// The host name in the issuer URL (and so in every link it gives the browser).
    #[arg(long, env = "ISSUER_HOST", default_value = "localhost")]
    host: String,
    #[arg(long, env = "OIDC_CLIENT_ID", default_value = "fleet-console")]
    client_id: String,
    #[arg(
        long,
        env = "OIDC_CLIENT_SECRET",
        default_value = "console-test-secret",
        hide_env_values = true
    )]
    client_secret: String,
    /// The users it can sign in: `subject=Name` pairs, comma-separated.
    #[arg(
        long,
        env = "ISSUER_USERS",
        default_value = "sub-alice=Alice,sub-bob=Bob,sub-dana=Dana"
    )]
    users: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let users = args
        .users
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(subject, name)| TestUser::new(subject.trim(), name.trim()))
        .collect();
    let config = IssuerConfig {
        client_id: args.client_id,
        client_secret: args.client_secret,
        host: args.host,
        users,
        ..IssuerConfig::default()
    };
    let listener = tokio::net::TcpListener::bind(args.addr).await?;
    let issuer = fleet_oidc_issuer::spawn(config, listener).await?;
    println!("issuer {}", issuer.issuer_url);
    tokio::signal::ctrl_c().await?;
    Ok(())
}
