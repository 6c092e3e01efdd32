//! `edge`: the command-line client of Edge Console's API, for automation — purge after a deploy, sync a network
//! list with a feed, read and write a property's configuration, pull statistics, follow security events, and
//! manage API tokens. The command line and what each command does; the work is in the modules.

mod client;
mod config;
mod lists;
mod output;
mod purge;
mod settings;
mod stats;
mod tokens;

use std::{path::PathBuf, process::ExitCode, time::Duration};

use clap::{CommandFactory, Parser, Subcommand};

use crate::{
    client::{Client, Exit, Failure},
    output::Out,
    settings::{Given, Settings},
};

const EXAMPLES: &str = "\
Examples:
  export EDGE_URL=https://console.example.com/acme EDGE_TOKEN=edge_…
  edge purge https://www.example.com/app.js https://www.example.com/app.css
  edge purge --file changed-urls.txt
  edge lists sync blocklist feed.txt --dry-run
  edge config get www > www.json && $EDITOR www.json && edge config put www www.json
  edge stats delivery --dimensions country --metrics hits,last_mile_bandwidth_bytes --last 24h --format csv
  edge events --follow
  edge --user alice tokens create --name deploy --scope purge --expires 90d

Configuration: flags, then the environment (EDGE_URL, EDGE_TOKEN, EDGE_CUSTOMER, EDGE_USER, EDGE_PASSWORD,
EDGE_OTP, EDGE_PROFILE, EDGE_CONFIG), then the profile file (~/.config/edge/config: [name] sections of
url = …, token = …, customer = …, user = …).

Exit codes: 0 done; 1 unexpected failure; 2 wrong command line or configuration; 3 not authenticated (401);
4 not allowed (403: a scope the token lacks, the role, the address); 5 not found; 6 conflict (changed by
someone else since it was read); 7 refused as invalid (400, 413, 422); 8 a purge or deployment failed or
timed out; 9 the server cannot be reached or keeps answering 429/5xx.";

#[derive(Parser)]
#[command(name = "edge", version, about = "The command-line client of Edge Console's API", after_help = EXAMPLES)]
struct Cli {
    /// The console's address with the customer (https://console.example.com/acme), or without it and --customer.
    #[arg(long, env = "EDGE_URL", global = true)]
    url: Option<String>,
    /// The customer (account) name, when the address does not name it.
    #[arg(long, env = "EDGE_CUSTOMER", global = true)]
    customer: Option<String>,
    /// An API token (edge_…). Prefer the variable: a flag shows in the process list.
    #[arg(long, env = "EDGE_TOKEN", hide_env_values = true, global = true)]
    token: Option<String>,
    /// Log in as this user instead of a token (needed for `edge tokens`); the password from EDGE_PASSWORD, or asked.
    #[arg(long, env = "EDGE_USER", global = true)]
    user: Option<String>,
    /// With --user and two-factor on: the current one-time code.
    #[arg(long, env = "EDGE_OTP", global = true)]
    otp: Option<String>,
    /// A profile of the profile file (default: [default]).
    #[arg(long, env = "EDGE_PROFILE", global = true)]
    profile: Option<String>,
    /// The profile file (default: ~/.config/edge/config).
    #[arg(long, env = "EDGE_CONFIG", global = true)]
    config: Option<PathBuf>,
    /// JSON on stdout (and errors as JSON on stderr) instead of text for a person.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Purge (or expire) URLs from the cache: in requests of 500, paced under the limit of 2 a second, then
    /// waits until every purge is done. Needs the scope `purge`.
    #[command(
        after_help = "Examples:\n  edge purge https://www.example.com/app.js\n  edge purge --file urls.txt --timeout 600\n  edge purge --prefix https://www.example.com/assets/"
    )]
    Purge {
        /// URLs ([https://]host/path).
        urls: Vec<String>,
        /// A file of URLs, one a line (`-`: stdin); blank lines and # comments are skipped.
        #[arg(long, short)]
        file: Option<String>,
        /// Every URL starting with each given one (PREFIX_LITERAL).
        #[arg(long)]
        prefix: bool,
        /// Mark expired (may be served stale while the origin fails) rather than remove.
        #[arg(long)]
        expire: bool,
        /// Submit only; do not wait for the purges to finish.
        #[arg(long)]
        no_wait: bool,
        /// Seconds to wait for the purges to finish before failing (exit code 8).
        #[arg(long, default_value_t = 300)]
        timeout: u64,
    },
    /// Network lists: show one, export its entries, or sync it with a file.
    #[command(subcommand)]
    Lists(ListsCommand),
    /// A property's configuration as a file, and back (with If-Match from the read).
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Statistics queries as a table, CSV or JSON. Needs `stats:read` (delivery) or `security:read`.
    #[command(after_help = "Families: delivery, topk-url, events, waf-trends, request-trends, shaping-trends, \
                            waf-topk:CATEGORY, shaping-topk:CATEGORY. A query may add the API's own parameters: \
                            'delivery?dimensions=domain&metrics=hits'.\n\nExamples:\n  \
                            edge stats delivery --dimensions country --metrics hits,last_mile_bandwidth_bytes --last 7d --format csv\n  \
                            edge stats waf-trends --dimensions waf_action --metrics hits --last 24h --format json\n  \
                            edge stats waf-topk:country --last 1h")]
    Stats {
        /// FAMILY, or FAMILY?param=value&…
        #[arg(required = true)]
        queries: Vec<String>,
        #[arg(long)]
        dimensions: Option<String>,
        #[arg(long)]
        metrics: Option<String>,
        /// day, hour or 5minute (default: hour up to 7 days, else day).
        #[arg(long)]
        granularity: Option<String>,
        /// Start: 2026-01-31T00:00:00 (UTC), 2026-01-31, or -24h.
        #[arg(long, allow_hyphen_values = true)]
        from: Option<String>,
        /// End (exclusive), as --from; default now.
        #[arg(long, allow_hyphen_values = true)]
        to: Option<String>,
        /// Without --from: this long before the end.
        #[arg(long, default_value = "24h")]
        last: String,
        /// The API's filters: country==DE;cache_status!=1
        #[arg(long)]
        filters: Option<String>,
        /// The API's sortby: -hits,country
        #[arg(long, allow_hyphen_values = true)]
        sortby: Option<String>,
        #[arg(long)]
        limit: Option<u64>,
        /// Every slice of the answer, not only the first.
        #[arg(long)]
        all: bool,
        #[arg(long, value_enum, default_value = "table")]
        format: stats::Format,
    },
    /// Security events of the last while; with --follow, new ones as they arrive. Needs `security:read`.
    #[command(
        after_help = "Examples:\n  edge events --since 1h\n  edge events --follow --filters 'waf_action==BLOCK' --json"
    )]
    Events {
        /// How far back to start: 10m, 1h, 2d.
        #[arg(long, default_value = "10m")]
        since: String,
        /// Keep looking, every --interval seconds, until interrupted.
        #[arg(long, short)]
        follow: bool,
        #[arg(long, default_value_t = 5)]
        interval: u64,
        #[arg(long)]
        filters: Option<String>,
        #[arg(long)]
        dimensions: Option<String>,
    },
    /// API tokens of the user given with --user (a person's login: tokens cannot manage tokens).
    #[command(subcommand)]
    Tokens(TokensCommand),
    /// Prints a shell completion script: edge completions bash > /etc/bash_completion.d/edge
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Subcommand)]
enum ListsCommand {
    /// The list and its entries. Needs `lists:read`.
    Show { list: String },
    /// The entries, one a line, to FILE or stdout. Needs `lists:read`.
    Export { list: String, file: Option<String> },
    /// Make LIST hold exactly the entries of FILE: shows the difference, then adds (5,000 a call) and removes,
    /// waiting for each deployment. Needs `lists:read`, `lists:write` and `tasks:read`.
    #[command(
        after_help = "Example:\n  curl -s https://feed.example/bad-ips.txt | edge lists sync blocklist - --dry-run"
    )]
    Sync {
        list: String,
        /// One entry a line (`-`: stdin); blank lines and # comments are skipped.
        file: String,
        /// Show the difference only.
        #[arg(long)]
        dry_run: bool,
        /// Seconds to wait for each deployment.
        #[arg(long, default_value_t = 300)]
        timeout: u64,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// The configuration with its etag, as JSON on stdout. Needs `config:read`.
    Get {
        property: String,
        /// A version of its history instead of the current one.
        #[arg(long)]
        version: Option<u64>,
    },
    /// Save FILE (as `get` wrote it, edited) with If-Match from its etag: when the property changed since, shows
    /// the fields changed by both and exits 6. Needs `config:write` (and `config:read` to explain a conflict).
    Put {
        property: String,
        file: String,
        /// The new version's comment.
        #[arg(long, short)]
        comment: Option<String>,
    },
}

#[derive(Subcommand)]
enum TokensCommand {
    /// Your tokens (an administrator's: everyone's).
    List {
        /// Only this user's (an id; administrators).
        #[arg(long)]
        user_id: Option<String>,
    },
    Show {
        id: String,
    },
    /// Make a token; prints its secret once.
    #[command(
        after_help = "Example:\n  EDGE_TOKEN=$(edge --user alice tokens create --name deploy --scope purge --expires 90d)"
    )]
    Create {
        #[arg(long)]
        name: String,
        /// A scope (repeat for more); see `edge tokens scopes`.
        #[arg(long = "scope", required = true)]
        scopes: Vec<String>,
        /// 90d, 12h, or a time (2027-01-31T00:00:00Z); default: never.
        #[arg(long)]
        expires: Option<String>,
        /// A client address or CIDR range it may be used from (repeat for more); default: anywhere.
        #[arg(long)]
        allow: Vec<String>,
    },
    /// A new secret for a token (the old one stops working); prints it once.
    Roll {
        id: String,
    },
    /// Revoke a token.
    Revoke {
        id: String,
    },
    /// The scopes and what each allows (no server needed).
    Scopes,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let out = Out::new(cli.json);
    match run(cli, out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            report(out, &f);
            ExitCode::from(f.exit as u8)
        }
    }
}

fn report(out: Out, f: &Failure) {
    if out.json {
        let body = serde_json::json!({"error": {
            "exit_code": f.exit as u8, "status": f.status, "type": f.kind, "message": f.message, "details": f.details,
        }});
        eprintln!("{body}");
        return;
    }
    eprintln!("edge: {}", f.message);
    for d in f.details.iter().take(50) {
        eprintln!("  {d}");
    }
    if f.details.len() > 50 {
        eprintln!("  … and {} more", f.details.len() - 50);
    }
}

fn run(cli: Cli, out: Out) -> Result<(), Failure> {
    let given = Given {
        url: cli.url,
        customer: cli.customer,
        token: cli.token,
        user: cli.user,
        password: std::env::var("EDGE_PASSWORD").ok(),
        otp: cli.otp,
        profile: cli.profile,
        config: cli.config,
    };
    let person = matches!(&cli.command, Command::Tokens(t) if !matches!(t, TokensCommand::Scopes));
    let client = |given: &Given| -> Result<Client, Failure> {
        let s = Settings::resolve(given, person)?;
        Ok(Client::new(&s.origin, &s.customer, s.auth))
    };
    match cli.command {
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "edge", &mut std::io::stdout());
            Ok(())
        }
        Command::Tokens(TokensCommand::Scopes) => tokens::scopes(out),
        Command::Purge { urls, file, prefix, expire, no_wait, timeout } => {
            let args =
                purge::PurgeArgs { urls, file, prefix, expire, wait: !no_wait, timeout: Duration::from_secs(timeout) };
            purge::run(&mut client(&given)?, out, args)
        }
        Command::Lists(ListsCommand::Show { list }) => lists::show(&mut client(&given)?, out, &list),
        Command::Lists(ListsCommand::Export { list, file }) => {
            lists::export(&mut client(&given)?, out, &list, file.as_deref())
        }
        Command::Lists(ListsCommand::Sync { list, file, dry_run, timeout }) => {
            let args = lists::SyncArgs { list, file, dry_run, timeout: Duration::from_secs(timeout) };
            lists::sync(&mut client(&given)?, out, args)
        }
        Command::Config(ConfigCommand::Get { property, version }) => {
            config::get(&mut client(&given)?, &check_name(&property)?, version)
        }
        Command::Config(ConfigCommand::Put { property, file, comment }) => {
            config::put(&mut client(&given)?, out, &check_name(&property)?, &file, comment)
        }
        Command::Stats {
            queries,
            dimensions,
            metrics,
            granularity,
            from,
            to,
            last,
            filters,
            sortby,
            limit,
            all,
            format,
        } => {
            let format = if cli.json { stats::Format::Json } else { format };
            let query = stats::Query {
                queries,
                dimensions,
                metrics,
                granularity,
                from,
                to,
                last,
                filters,
                sortby,
                limit,
                all,
                format,
            };
            stats::run(&mut client(&given)?, query)
        }
        Command::Events { since, follow, interval, filters, dimensions } => {
            let args = stats::EventsArgs {
                since,
                follow,
                interval: Duration::from_secs(interval.max(1)),
                filters,
                dimensions,
            };
            stats::events(&mut client(&given)?, out, args)
        }
        Command::Tokens(command) => {
            let mut c = client(&given)?;
            match command {
                TokensCommand::List { user_id } => tokens::list(&mut c, out, user_id.as_deref()),
                TokensCommand::Show { id } => tokens::show(&mut c, out, tokens::check_id(&id)?),
                TokensCommand::Create { name, scopes, expires, allow } => {
                    tokens::create(&mut c, out, tokens::CreateArgs { name, scopes, expires, allow })
                }
                TokensCommand::Roll { id } => tokens::roll(&mut c, out, tokens::check_id(&id)?),
                TokensCommand::Revoke { id } => tokens::revoke(&mut c, out, tokens::check_id(&id)?),
                TokensCommand::Scopes => tokens::scopes(out),
            }
        }
    }
}

/// A property name checked before it goes into a path.
fn check_name(name: &str) -> Result<String, Failure> {
    if edge_api::config::is_valid_property_name(name) {
        Ok(name.to_string())
    } else {
        Err(Failure::new(Exit::Usage, format!("{name:?} is not a property name")))
    }
}
