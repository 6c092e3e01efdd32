//! The tools the build and the tests need, installed from the package registries only when missing:
//! the wasm32 target, trunk 0.21, wasm-bindgen-cli at the Cargo.lock version, binaryen 132's wasm-opt (npm),
//! and for tests Debian's chromium and chromium-driver, PostgreSQL and HAProxy (or nginx, when that is there), and
//! clickhouse-server (the ClickHouse statistics tests start it as a child process, never as a service).

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

use crate::{root, run};

/// trunk 0.22 needs rustc 1.96; 0.21.14 is the newest that builds here.
const TRUNK_VERSION: &str = "0.21.14";
/// binaryen 132 (npm): Debian's binaryen 108 produces wasm that breaks in the browser.
const BINARYEN_VERSION: &str = "132.0.0";
/// axe-core (npm), the accessibility audit the end-to-end tests run in every view.
pub const AXE_VERSION: &str = "4.14.1";

pub struct Tools {
    /// Folders put in front of PATH for every tool run: cargo's bin dir and binaryen's.
    path_prefix: Vec<PathBuf>,
    pub chromium: PathBuf,
    pub chromedriver: PathBuf,
}

impl Tools {
    /// Installs what is missing. `for_tests` adds Chromium and ChromeDriver.
    pub fn ensure(for_tests: bool) -> Result<Tools> {
        let cargo_bin = cargo_home().join("bin");
        let binaryen_bin = root().join("target/tools/node_modules/.bin");
        let tools = Tools {
            path_prefix: vec![cargo_bin, binaryen_bin],
            chromium: PathBuf::from("/usr/bin/chromium"),
            chromedriver: PathBuf::from("/usr/bin/chromedriver"),
        };
        tools.ensure_wasm_target()?;
        tools.ensure_trunk()?;
        tools.ensure_wasm_bindgen()?;
        tools.ensure_wasm_opt()?;
        if for_tests {
            tools.ensure_chromium()?;
            tools.ensure_npm_package("axe-core", AXE_VERSION)?;
            ensure_cluster_tools()?;
        }
        Ok(tools)
    }

    /// A command for `program` with the tools on PATH.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        self.apply(&mut cmd);
        cmd
    }

    /// Puts the tools on the PATH of `cmd`.
    pub fn apply<'a>(&self, cmd: &'a mut Command) -> &'a mut Command {
        cmd.env("PATH", self.path())
    }

    fn path(&self) -> OsString {
        let current = std::env::var_os("PATH").unwrap_or_default();
        let dirs = self.path_prefix.iter().cloned().chain(std::env::split_paths(&current));
        std::env::join_paths(dirs).unwrap_or(current)
    }

    /// What `program --version` prints, or None when it does not run.
    fn version_of(&self, program: &str) -> Option<String> {
        let out = self.command(program).arg("--version").output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    fn ensure_wasm_target(&self) -> Result<()> {
        let out = Command::new("rustup").args(["target", "list", "--installed"]).output().context("running rustup")?;
        if String::from_utf8_lossy(&out.stdout).lines().any(|l| l.trim() == "wasm32-unknown-unknown") {
            return Ok(());
        }
        run(Command::new("rustup").args(["target", "add", "wasm32-unknown-unknown"]))
    }

    fn ensure_trunk(&self) -> Result<()> {
        match self.version_of("trunk") {
            Some(v) if v.starts_with("trunk 0.21.") => Ok(()),
            found => {
                eprintln!(
                    "xtask: trunk 0.21 needed (found: {}); installing {TRUNK_VERSION}",
                    found.as_deref().unwrap_or("none")
                );
                run(self.command("cargo").args(["install", "trunk", "--version", TRUNK_VERSION, "--locked"]))
            }
        }
    }

    fn ensure_wasm_bindgen(&self) -> Result<()> {
        let version = locked_version("wasm-bindgen")?;
        let ok = |program: &str| {
            self.version_of(program).is_some_and(|v| v.split_whitespace().nth(1) == Some(version.as_str()))
        };
        if ok("wasm-bindgen") && ok("wasm-bindgen-test-runner") {
            return Ok(());
        }
        eprintln!("xtask: installing wasm-bindgen-cli {version} (the wasm-bindgen version in Cargo.lock)");
        // Not --locked: the crate's own lockfile wants a webpki-roots that the registry lacks.
        run(self.command("cargo").args(["install", "wasm-bindgen-cli", "--version", &version]))
    }

    fn ensure_wasm_opt(&self) -> Result<()> {
        if self.version_of("wasm-opt").is_some_and(|v| v.contains(&format!("version {}", major(BINARYEN_VERSION))))
            && root().join("target/tools/node_modules/.bin/wasm-opt").exists()
        {
            return Ok(());
        }
        npm_install("binaryen", BINARYEN_VERSION)
    }

    /// Installs `package@version` from npm under target/tools unless that version is there.
    fn ensure_npm_package(&self, package: &str, version: &str) -> Result<()> {
        let manifest = root().join("target/tools/node_modules").join(package).join("package.json");
        let installed = std::fs::read_to_string(&manifest).unwrap_or_default();
        if installed.contains(&format!("\"version\": \"{version}\"")) {
            return Ok(());
        }
        npm_install(package, version)
    }

    fn ensure_chromium(&self) -> Result<()> {
        if self.chromium.exists() && self.chromedriver.exists() {
            return Ok(());
        }
        eprintln!("xtask: installing Debian's chromium and chromium-driver");
        let install = || apt_get(&["install", "-y", "--no-install-recommends", "chromium", "chromium-driver"]);
        if install().is_err() {
            apt_get(&["update"])?;
            install()?;
        }
        if !(self.chromium.exists() && self.chromedriver.exists()) {
            bail!("chromium or chromedriver is still missing after apt-get install");
        }
        Ok(())
    }
}

/// Debian's ClickHouse server binary.
const CLICKHOUSE_SERVER: &str = "/usr/sbin/clickhouse-server";

/// What the replicated mode needs (`cargo xtask test`, `serve --cluster`, `load --cluster`): Debian's
/// PostgreSQL, and a load balancer — HAProxy, unless HAProxy or nginx is installed; and for the statistics tests
/// Debian's clickhouse-server.
pub fn ensure_cluster_tools() -> Result<()> {
    let mut packages = Vec::new();
    if edge_cluster::postgres_bin_dir().is_err() {
        packages.push("postgresql");
    }
    if edge_cluster::BalancerKind::find().is_none() {
        packages.push("haproxy");
    }
    if !Path::new(CLICKHOUSE_SERVER).exists() {
        packages.push("clickhouse-server");
    }
    if packages.is_empty() {
        return Ok(());
    }
    eprintln!("xtask: installing Debian's {}", packages.join(", "));
    let install = || apt_get(&[&["install", "-y", "--no-install-recommends"], &packages[..]].concat());
    if install().is_err() {
        apt_get(&["update"])?;
        install()?;
    }
    edge_cluster::postgres_bin_dir()?;
    if edge_cluster::BalancerKind::find().is_none() {
        bail!("no load balancer after apt-get install haproxy");
    }
    if !Path::new(CLICKHOUSE_SERVER).exists() {
        bail!("{CLICKHOUSE_SERVER} is still missing after apt-get install clickhouse-server");
    }
    Ok(())
}

/// Installs `package@version` from npm under target/tools.
fn npm_install(package: &str, version: &str) -> Result<()> {
    let prefix = root().join("target/tools");
    std::fs::create_dir_all(&prefix)?;
    run(Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(&prefix)
        .arg(format!("{package}@{version}")))
}

fn apt_get(args: &[&str]) -> Result<()> {
    let is_root = Command::new("id").arg("-u").output().map(|o| o.stdout.starts_with(b"0")).unwrap_or(false);
    let mut cmd = if is_root { Command::new("apt-get") } else { Command::new("sudo") };
    if !is_root {
        cmd.arg("apt-get");
    }
    run(cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive"))
}

fn cargo_home() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(&std::env::var_os("HOME").unwrap_or_default()).join(".cargo"))
}

fn major(version: &str) -> &str {
    version.split('.').next().unwrap_or(version)
}

/// The version of `package` in Cargo.lock.
pub fn locked_version(package: &str) -> Result<String> {
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).context("reading Cargo.lock")?;
    let needle = format!("name = \"{package}\"");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == needle
            && let Some(v) = lines.next().and_then(|l| l.trim().strip_prefix("version = \""))
        {
            return Ok(v.trim_end_matches('"').to_string());
        }
    }
    bail!("{package} is not in Cargo.lock")
}
