//! Measurements that print figures: `edge-bench stats` (the statistics engine against DuckDB), `edge-bench
//! load` (a realistic request mix against the server and against a bare axum handler), `edge-bench config`
//! (configuration updates and diffs as nodes grow) and `edge-bench fuzz-api` (schemathesis against the
//! OpenAPI document). `cargo xtask bench|load|fuzz-api` builds and runs them.

mod clickhouse;
mod compare;
mod config;
mod engine;
mod fuzz;
mod ingest;
mod load;
mod logs;
mod server;
mod stats;

use std::path::PathBuf;

/// The server's allocator, so that `edge-bench engine` measures the engine as the server runs it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use anyhow::{Context, Result, bail};

const USAGE: &str = "usage: edge-bench stats|ingest|engine|load|config|fuzz-api [FLAGS]";

/// `--name value` flags.
pub struct Args(Vec<String>);

impl Args {
    pub fn value(&self, name: &str) -> Option<String> {
        self.0.iter().position(|a| a == name).and_then(|i| self.0.get(i + 1)).cloned()
    }

    /// Whether the flag `name` (one without a value) is there.
    pub fn flag(&self, name: &str) -> bool {
        self.0.iter().any(|a| a == name)
    }

    pub fn path(&self, name: &str) -> Result<PathBuf> {
        self.value(name).map(PathBuf::from).with_context(|| format!("{name} is required"))
    }

    pub fn number<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>> {
        self.value(name).map(|v| v.parse::<T>().map_err(|_| anyhow::anyhow!("{name}: not a number: {v}"))).transpose()
    }
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let command = args.next().unwrap_or_default();
    let args = Args(args.collect());
    match command.as_str() {
        "stats" => match args.value("--engine").as_deref() {
            None | Some("embedded") => stats::run(&args),
            Some("clickhouse") => clickhouse::run(&args),
            Some(other) => bail!("--engine is clickhouse (or embedded, the default), not {other}"),
        },
        "fuzz-api" => fuzz::run(&args),
        "load" => load::run(&args),
        "config" => config::run(&args),
        "ingest" => ingest::run(&args),
        "engine" => engine::run(&args),
        // The baseline of `load`, in a process of its own.
        "bare" => load::bare(),
        _ => bail!("{USAGE}"),
    }
}
