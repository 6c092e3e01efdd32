//! `edge-server`: serve the API and the console, load statistics, or set up customers, hosts and identity
//! sources. The flags are declared here; what each command does is in `cli/`.

/// mimalloc: statistics answers allocate many small rows, and glibc's allocator was a quarter of the server's
/// time under load (`cargo xtask load`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cli;

use std::{io::IsTerminal, path::PathBuf};

use clap::{Parser, Subcommand};

use cli::{DatabaseArgs, StatsLimitArgs, serve::ServeArgs};

#[derive(Parser)]
#[command(name = "edge-server", version, about = "Edge Console backend: the Edge API and the console's files")]
#[command(args_override_self = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API under /{customer}/v1 and the console at /.
    Serve(ServeArgs),
    /// Manage customers (tenants).
    Customer {
        #[command(subcommand)]
        command: CustomerCommand,
    },
    /// Load access logs or security events from NDJSON files into a customer's statistics (with the server
    /// stopped: the data dir is used by one process at a time). With --database-url, the customer is looked up
    /// there and the records go to this data dir's statistics engine (one replica's).
    Ingest {
        /// `accesslogs` or `securityevents`.
        #[arg(long)]
        kind: String,
        /// Customer name.
        #[arg(long)]
        customer: String,
        #[arg(long, env = "EDGE_DATA_DIR", default_value = "./data")]
        data_dir: PathBuf,
        #[command(flatten)]
        database: DatabaseArgs,
        /// Statistics in ClickHouse: clickhouse://[USER[:PASS]@]HOST:PORT[,HOST:PORT...]/DATABASE (as for serve).
        #[arg(long, env = "EDGE_STATS_URL")]
        stats_url: Option<String>,
        #[command(flatten)]
        limits: StatsLimitArgs,
        /// NDJSON files, one record per line.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Host patterns: which customer's property claims one, and releasing one from it (to move a host to
    /// another customer).
    Host {
        #[command(subcommand)]
        command: HostCommand,
    },
    /// Manage identity sources besides `local`.
    Idp {
        #[command(subcommand)]
        command: IdpCommand,
    },
}

#[derive(Subcommand)]
enum IdpCommand {
    /// Register a remote identity source for a customer; its users hold only a role association.
    Add {
        /// Customer name.
        customer: String,
        /// Identity source id: lowercase letters, digits, '-' and '_'.
        id: String,
        /// Configuration, a JSON object.
        #[arg(long, default_value = "{\"type\": \"remote\"}")]
        config: String,
        #[arg(long, env = "EDGE_DATA_DIR", default_value = "./data")]
        data_dir: PathBuf,
        #[command(flatten)]
        database: DatabaseArgs,
    },
}

#[derive(Subcommand)]
enum HostCommand {
    /// Print the customer and property that claim a host pattern.
    Show {
        /// A host pattern: `www.example.com` or `*.example.com`.
        pattern: String,
        #[arg(long, env = "EDGE_DATA_DIR", default_value = "./data")]
        data_dir: PathBuf,
        #[command(flatten)]
        database: DatabaseArgs,
    },
    /// Remove a host pattern from the property that claims it (a new configuration version by `system`,
    /// recorded in that customer's audit log), so that another customer can claim it.
    Release {
        /// A host pattern: `www.example.com` or `*.example.com`.
        pattern: String,
        #[arg(long, env = "EDGE_DATA_DIR", default_value = "./data")]
        data_dir: PathBuf,
        #[command(flatten)]
        database: DatabaseArgs,
    },
}

#[derive(Subcommand)]
enum CustomerCommand {
    /// Create a customer with one administrator. The password comes from $EDGE_ADMIN_PASSWORD, or is asked for.
    Add {
        /// Customer name: lowercase letters, digits and '-'.
        name: String,
        /// Username of the administrator.
        #[arg(long)]
        admin: String,
        #[arg(long, env = "EDGE_DATA_DIR", default_value = "./data")]
        data_dir: PathBuf,
        #[command(flatten)]
        database: DatabaseArgs,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    cli::serve::no_transparent_huge_pages();
    cli::serve::private_files();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,sqlx=warn,tower_http=warn".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    match Cli::parse().command {
        Command::Serve(args) => cli::serve::serve(args).await,
        Command::Customer { command: CustomerCommand::Add { name, admin, data_dir, database } } => {
            cli::operator::add_customer(name, admin, database.location(&data_dir)).await
        }
        Command::Ingest { kind, customer, data_dir, database, stats_url, limits, files } => {
            cli::ingest::ingest(kind, customer, data_dir, database, stats_url, limits.limits(), files).await
        }
        Command::Host { command: HostCommand::Show { pattern, data_dir, database } } => {
            cli::operator::show_host(&pattern, &database.location(&data_dir)).await
        }
        Command::Host { command: HostCommand::Release { pattern, data_dir, database } } => {
            cli::operator::release_host(&pattern, &database.location(&data_dir)).await
        }
        Command::Idp { command: IdpCommand::Add { customer, id, config, data_dir, database } } => {
            cli::operator::add_identity_source(&customer, &id, &config, &database.location(&data_dir)).await
        }
    }
}
