//! The tools the build and the tests need, installed from the package registries only when missing, each at a
//! version pinned in this repository with its transitive dependencies (xtask/pins/): the wasm32 target, trunk
//! 0.21 (`--locked`), wasm-bindgen-cli at the Cargo.lock version (from pins/wasm-bindgen's lock), the npm tools
//! (binaryen 132's wasm-opt, axe-core: `npm ci` from pins/npm), the Python tools (pins/python, `pip install
//! --require-hashes`), and for tests Debian's chromium and chromium-driver, PostgreSQL and HAProxy (or nginx, when
//! that is there), and clickhouse-server (the ClickHouse statistics tests start it as a child process, never as a
//! service). Debian's packages are taken by name; `versions()` reports what ran.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

use crate::{root, run};

/// trunk 0.22 needs rustc 1.96; 0.21.14 is the newest that builds here.
const TRUNK_VERSION: &str = "0.21.14";
/// The test runner of the native and end-to-end tests (`cargo install --locked`: its own lock pins the rest).
pub const NEXTEST_VERSION: &str = "0.9.143";
/// binaryen (npm, pins/npm): Debian's binaryen 108 produces wasm that breaks in the browser.
const BINARYEN_MAJOR: &str = "132";

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
            tools.ensure_nextest()?;
            tools.ensure_chromium()?;
            ensure_cluster_tools()?;
            python_venv("fuzz")?;
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

    /// The tools a test run used and their versions, as they report them (first line), for the run's summary.
    pub fn versions(&self) -> Vec<(&'static str, String)> {
        let first_line = |program: &str, args: &[&str]| -> String {
            let out = self.command(program).args(args).output();
            out.ok()
                .map(|o| {
                    let text = if o.stdout.is_empty() { o.stderr } else { o.stdout };
                    String::from_utf8_lossy(&text).lines().next().unwrap_or("").trim().to_string()
                })
                .filter(|l| !l.is_empty())
                .unwrap_or_else(|| "not found".into())
        };
        let postgres = edge_cluster::postgres_bin_dir()
            .map(|dir| first_line(&dir.join("postgres").display().to_string(), &["--version"]))
            .unwrap_or_else(|_| "not found".into());
        let balancer = match edge_cluster::BalancerKind::find() {
            Some((_, program)) => first_line(&program.display().to_string(), &["-v"]),
            None => "not found".into(),
        };
        let fuzz_python = root().join("target/tools/fuzz-venv/bin/python");
        let python_packages = first_line(
            &fuzz_python.display().to_string(),
            &[
                "-c",
                "import importlib.metadata as m, sys; print('Python', sys.version.split()[0], \
                 *(f'{p} {m.version(p)}' for p in ('schemathesis', 'hypothesis')))",
            ],
        );
        let npm_package = |name: &str| {
            let manifest = root().join("target/tools/node_modules").join(name).join("package.json");
            let text = std::fs::read_to_string(manifest).unwrap_or_default();
            let version = text.split("\"version\": \"").nth(1).and_then(|rest| rest.split('"').next());
            version.map(String::from).unwrap_or_else(|| "not found".into())
        };
        vec![
            ("rustc", first_line("rustc", &["--version"])),
            ("trunk", first_line("trunk", &["--version"])),
            ("wasm-bindgen", first_line("wasm-bindgen", &["--version"])),
            ("wasm-opt", first_line("wasm-opt", &["--version"])),
            ("axe-core (npm)", npm_package("axe-core")),
            ("node", first_line("node", &["--version"])),
            ("chromium", first_line(&self.chromium.display().to_string(), &["--version"])),
            ("chromedriver", first_line(&self.chromedriver.display().to_string(), &["--version"])),
            ("postgresql", postgres),
            ("load balancer", balancer),
            ("cargo-nextest", first_line("cargo-nextest", &["nextest", "--version"])),
            (
                "clickhouse-server",
                first_line("dpkg-query", &["-W", "-f", "${Package} ${Version}\\n", "clickhouse-server"]),
            ),
            ("fuzzing (pins/python/fuzz.txt)", python_packages),
        ]
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

    /// wasm-bindgen-cli built from pins/wasm-bindgen (its own lock, `--locked`) into cargo's bin dir.
    fn ensure_wasm_bindgen(&self) -> Result<()> {
        let version = locked_version("wasm-bindgen")?;
        let pin = root().join("xtask/pins/wasm-bindgen");
        let pinned = locked_version_in(&pin.join("Cargo.lock"), "wasm-bindgen-cli")?;
        if pinned != version {
            bail!(
                "the console uses wasm-bindgen {version} but xtask/pins/wasm-bindgen pins wasm-bindgen-cli {pinned}: \
                 change both together"
            );
        }
        let ok = |program: &str| {
            self.version_of(program).is_some_and(|v| v.split_whitespace().nth(1) == Some(version.as_str()))
        };
        if ok("wasm-bindgen") && ok("wasm-bindgen-test-runner") {
            return Ok(());
        }
        eprintln!("xtask: installing wasm-bindgen-cli {version} (the wasm-bindgen version in Cargo.lock)");
        run(self
            .command("cargo")
            .args(["install", "--locked", "--force", "--path"])
            .arg(&pin)
            .arg("--target-dir")
            .arg(root().join("target/tools/wasm-bindgen-build")))?;
        let _ = std::fs::remove_dir_all(root().join("target/tools/wasm-bindgen-build"));
        Ok(())
    }

    fn ensure_nextest(&self) -> Result<()> {
        let out = self.command("cargo").args(["nextest", "--version"]).output();
        let found = out.ok().filter(|o| o.status.success()).map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
        if found.as_deref().is_some_and(|v| v.starts_with(&format!("cargo-nextest {NEXTEST_VERSION} "))) {
            return Ok(());
        }
        eprintln!(
            "xtask: cargo-nextest {NEXTEST_VERSION} needed (found: {}); installing it",
            found.as_deref().and_then(|v| v.lines().next()).unwrap_or("none")
        );
        run(self.command("cargo").args(["install", "cargo-nextest", "--version", NEXTEST_VERSION, "--locked"]))
    }

    fn ensure_wasm_opt(&self) -> Result<()> {
        ensure_npm_tools()?;
        match self.version_of("wasm-opt") {
            Some(v) if v.contains(&format!("version {BINARYEN_MAJOR}")) => Ok(()),
            found => bail!("wasm-opt {BINARYEN_MAJOR} expected from npm, found {}", found.as_deref().unwrap_or("none")),
        }
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

/// The npm tools of pins/npm (binaryen's wasm-opt, axe-core) under target/tools.
pub fn ensure_npm_tools() -> Result<()> {
    ensure_npm_pin("npm", &root().join("target/tools")).map(drop)
}

/// The npm packages pinned in xtask/pins/<pin> (a package.json and its committed package-lock.json, every
/// transitive dependency at its version and hash) installed under `prefix` by `npm ci`, again whenever the
/// lock changes; returns `prefix`.
pub fn ensure_npm_pin(pin: &str, prefix: &Path) -> Result<PathBuf> {
    let pins = root().join("xtask/pins").join(pin);
    let lock = std::fs::read(pins.join("package-lock.json"))
        .with_context(|| format!("reading xtask/pins/{pin}/package-lock.json"))?;
    let stamp = prefix.join("npm-installed.json");
    if std::fs::read(&stamp).is_ok_and(|installed| installed == lock) && prefix.join("node_modules").exists() {
        return Ok(prefix.to_path_buf());
    }
    std::fs::create_dir_all(prefix)?;
    std::fs::copy(pins.join("package.json"), prefix.join("package.json"))?;
    std::fs::write(prefix.join("package-lock.json"), &lock)?;
    run(Command::new("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(prefix))?;
    std::fs::write(stamp, lock)?;
    Ok(prefix.to_path_buf())
}

/// A Python virtual environment under target/tools with the requirements of pins/python/<name>.txt (every
/// package pinned and hashed), made anew whenever that file changes; returns its bin dir.
pub fn python_venv(name: &str) -> Result<PathBuf> {
    let requirements = root().join("xtask/pins/python").join(format!("{name}.txt"));
    let pinned = std::fs::read(&requirements).with_context(|| format!("reading {}", requirements.display()))?;
    let venv = root().join("target/tools").join(format!("{name}-venv"));
    let stamp = venv.join("requirements-installed.txt");
    if std::fs::read(&stamp).is_ok_and(|installed| installed == pinned) {
        return Ok(venv.join("bin"));
    }
    let _ = std::fs::remove_dir_all(&venv);
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    run(Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "--disable-pip-version-check", "--require-hashes", "--no-deps", "-r"])
        .arg(&requirements))?;
    std::fs::write(stamp, pinned)?;
    Ok(venv.join("bin"))
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

/// The version of `package` in the workspace's Cargo.lock.
pub fn locked_version(package: &str) -> Result<String> {
    locked_version_in(&root().join("Cargo.lock"), package)
}

/// The version of `package` in the Cargo.lock at `path`.
fn locked_version_in(path: &Path, package: &str) -> Result<String> {
    let lock = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let needle = format!("name = \"{package}\"");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == needle
            && let Some(v) = lines.next().and_then(|l| l.trim().strip_prefix("version = \""))
        {
            return Ok(v.trim_end_matches('"').to_string());
        }
    }
    bail!("{package} is not in {}", path.display())
}
