//! `cargo xtask test`: every check of the project in one run, on a throwaway PostgreSQL cluster, with a summary
//! of each step's time and test count and of where the time went (see [`crate::timing`]).
//!
//! The workspace is compiled once for the native steps: one `cargo build --all-targets` through clippy-driver
//! (`RUSTC_WORKSPACE_WRAPPER`, as `cargo clippy` does, but with code generated), so the lints and the test
//! binaries come from the same compilation; every later cargo command of the run selects the same packages
//! with the same wrapper, so cargo finds everything fresh. The console is compiled once for wasm32 the same way.
//! Native and end-to-end tests run under cargo-nextest (a process per test, at once where
//! `.config/nextest.toml` allows).

use std::{
    collections::BTreeSet,
    io::{BufRead, BufReader},
    path::PathBuf,
    process::{Command, ExitCode, Stdio},
    time::Instant,
};

use anyhow::{Context, Result, bail};

use crate::{BrowserTmp, cargo, describe, layers, root, timing, tools};

/// The parts `--only` may name, in the order they run.
const PARTS: [(&str, &str); 8] = [
    ("format", "cargo fmt --check"),
    ("layers", "no import cycle in any crate"),
    ("lint", "clippy on every crate, native and wasm32 (the builds below)"),
    ("native", "the native tests: SQLite, the store contract on both stores, replicas, ClickHouse, faults"),
    ("postgres", "the router suites again on PostgreSQL"),
    ("console", "the console's wasm-bindgen tests in headless Chromium"),
    ("fuzz", "schemathesis against the OpenAPI document"),
    ("e2e", "the end-to-end tests (the console's release build first)"),
];

pub const USAGE: &str = "  cargo xtask test [--only PART[,PART...]] [-E FILTERSET]
                                     install what tests need, then run every test (format, import cycles, lint,
                                     native on SQLite and on a throwaway PostgreSQL cluster, wasm, fuzzing,
                                     end-to-end); the summary gives each step's time and tests and the slowest
                                     tests. --only runs some parts (format, layers, lint, native, postgres,
                                     console, fuzz, e2e) with the builds they need; -E narrows the native,
                                     postgres and e2e tests with a cargo-nextest filterset, e.g.
                                     cargo xtask test --only native -E 'test(/ingest/)'";

/// The packages of every native cargo command of the run: the same selection each time, so that cargo resolves
/// the same features and rebuilds nothing. The console is linted and tested for wasm32, the target it is built
/// for (it has no code of its own for another target).
const NATIVE: [&str; 3] = ["--workspace", "--exclude", "edge-console"];

/// The modules of the server's test binary (server/tests/suite) that run a second time on PostgreSQL: all but
/// those of the statistics engines and SQLite's file (stats, stats_clickhouse, ingest, durability, faults,
/// openapi_rules) and those that run on both stores by themselves (store_contract, replicas, alert_replicas).
/// `held_logins`, a binary of its own, runs again too.
const NOT_AGAIN: [&str; 9] = [
    "stats",
    "stats_clickhouse",
    "ingest",
    "durability",
    "store_contract",
    "replicas",
    "faults",
    "openapi_rules",
    "alert_replicas",
];
/// The helpers of the server's test binary, not suites.
const HELPERS: [&str; 3] = ["main", "common", "receivers"];

/// One step of the run.
pub struct Step {
    pub name: &'static str,
    pub ok: bool,
    pub seconds: u64,
    /// Tests run (0 for steps that are not test runs).
    pub tests: usize,
    pub summary: Vec<String>,
}

impl Step {
    fn failed(name: &'static str, started: Instant, error: &anyhow::Error) -> Step {
        Step { name, ok: false, seconds: started.elapsed().as_secs(), tests: 0, summary: vec![format!("{error:#}")] }
    }

    fn done(name: &'static str, started: Instant, ok: bool) -> Step {
        Step { name, ok, seconds: started.elapsed().as_secs(), tests: 0, summary: vec![] }
    }
}

struct Options {
    only: Option<BTreeSet<String>>,
    filter: Option<String>,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options> {
        let (mut only, mut filter) = (None, None);
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--only" => {
                    let list = args.next().context("--only takes a list of parts")?;
                    let parts: BTreeSet<String> = list.split(',').map(str::trim).map(String::from).collect();
                    if let Some(unknown) = parts.iter().find(|p| !PARTS.iter().any(|(name, _)| name == p)) {
                        bail!(
                            "--only: no part {unknown:?}; the parts are:\n{}",
                            PARTS.map(|(n, what)| format!("  {n:<9} {what}")).join("\n")
                        );
                    }
                    only = Some(parts);
                }
                "-E" | "--filter" => filter = Some(args.next().context("-E takes a filterset")?.clone()),
                other => bail!("cargo xtask test: unknown argument {other:?}\n{USAGE}"),
            }
        }
        Ok(Options { only, filter })
    }

    fn wants(&self, part: &str) -> bool {
        self.only.as_ref().is_none_or(|o| o.contains(part))
    }

    /// The filterset of a step narrowed by `-E`.
    fn narrow(&self, step: &str) -> String {
        match &self.filter {
            Some(f) => format!("({step}) and ({f})"),
            None => step.to_string(),
        }
    }
}

/// The host's target triple (for the runner variable of cargo).
fn host_triple() -> Result<String> {
    let out = Command::new("rustc").arg("-vV").output().context("running rustc -vV")?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .context("rustc -vV names no host")
}

/// clippy-driver of the toolchain, used as the rustc of the workspace's own crates.
fn clippy_driver() -> Result<PathBuf> {
    let out = Command::new("rustc").args(["--print", "sysroot"]).output().context("running rustc --print sysroot")?;
    let driver = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("bin/clippy-driver");
    if !driver.is_file() {
        bail!("no clippy-driver at {} (rustup component add clippy)", driver.display());
    }
    Ok(driver)
}

/// What every cargo command of the run shares: the lints compiled in, the runner that times each test process.
struct Run {
    tools: tools::Tools,
    driver: PathBuf,
    runner_var: String,
    runner: String,
    times: PathBuf,
    tmp: BrowserTmp,
    postgres_url: Option<String>,
    /// Where the lists of test binaries are kept, so that nextest runs them without asking cargo (whose lock
    /// another lane's build holds).
    metadata: PathBuf,
}

impl Run {
    /// A cargo command whose workspace crates are compiled by clippy-driver (as in every build of the run).
    fn cargo(&self) -> Command {
        let mut cmd = cargo();
        self.tools.apply(&mut cmd).env("RUSTC_WORKSPACE_WRAPPER", &self.driver);
        cmd
    }

    /// Lists the native build's test binaries and the workspace for nextest (`--binaries-metadata`,
    /// `--cargo-metadata`): its runs then start the binaries as they are, without a build.
    fn list_test_binaries(&self) -> Step {
        const NAME: &str = "list the test binaries (cargo nextest list)";
        let started = Instant::now();
        let _ = std::fs::create_dir_all(&self.metadata);
        let mut output = Vec::new();
        let mut write = |name: &str, cmd: &mut Command| -> bool {
            match cmd.output() {
                Ok(out) if out.status.success() => std::fs::write(self.metadata.join(name), &out.stdout).is_ok(),
                Ok(out) => {
                    output.extend(String::from_utf8_lossy(&out.stderr).lines().map(String::from));
                    false
                }
                Err(e) => {
                    output.push(format!("{}: {e}", describe(cmd)));
                    false
                }
            }
        };
        let ok = write(
            "binaries.json",
            self.cargo()
                .args(["nextest", "list", "--locked", "--list-type", "binaries-only", "--message-format", "json"])
                .args(NATIVE),
        ) && write("cargo.json", cargo().args(["metadata", "--locked", "--format-version", "1", "--no-deps"]));
        let step = Step::done(NAME, started, ok);
        if !ok {
            emit(&step, &output);
        }
        step
    }

    /// `cargo nextest run` of the native build's tests of `filter`, timed as `step`.
    fn nextest(&self, step: &str, filter: &str) -> Command {
        let mut cmd = self.cargo();
        cmd.args(["nextest", "run", "--no-fail-fast", "--profile", "xtask"])
            .arg("--binaries-metadata")
            .arg(self.metadata.join("binaries.json"))
            .arg("--cargo-metadata")
            .arg(self.metadata.join("cargo.json"))
            .args(["-E", filter])
            .env(&self.runner_var, &self.runner)
            .env(timing::DIR_VAR, &self.times)
            .env(timing::STEP_VAR, step)
            .env("TMPDIR", &self.tmp.0)
            .env("EDGE_E2E_DIST", root().join("dist"))
            .env("EDGE_SERVER_BIN", root().join("target/debug/edge-server"))
            .env("CHROMEDRIVER", &self.tools.chromedriver)
            .env("CHROMIUM", &self.tools.chromium);
        if let Some(url) = &self.postgres_url {
            cmd.env("EDGE_TEST_POSTGRES_URL", url);
        }
        cmd
    }
}

/// Copies this program where the test processes' runner runs it from: a later build of the workspace may
/// replace target/debug/xtask while tests run.
fn install_runner() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("finding xtask's own binary")?;
    let dir = root().join("target/xtask-runner");
    std::fs::create_dir_all(&dir)?;
    let copy = dir.join("xtask");
    let partial = dir.join(format!("xtask.{}", std::process::id()));
    std::fs::copy(&exe, &partial).with_context(|| format!("copying {}", exe.display()))?;
    std::fs::rename(&partial, &copy)?;
    Ok(copy)
}

/// Steps' output, printed whole when each ends (lanes run at once), each line once.
static PRINT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Prints a finished step: its output, then how it ended.
fn emit(step: &Step, output: &[String]) {
    let _guard = PRINT.lock().unwrap_or_else(|e| e.into_inner());
    println!("\nxtask: == {} ==", step.name);
    for line in output {
        println!("{line}");
    }
    let verdict = if step.ok { "ok" } else { "FAILED" };
    println!("xtask: {verdict} in {} s: {}", step.seconds, step.name);
}

/// Says a step has started (its output comes when it ends).
fn starting(name: &str, cmd: Option<&Command>) {
    let _guard = PRINT.lock().unwrap_or_else(|e| e.into_inner());
    match cmd {
        Some(cmd) => println!("xtask: started: {name}\nxtask: $ {}", describe(cmd)),
        None => println!("xtask: started: {name}"),
    }
}

/// Runs `cmd` with its standard output and error into one pipe, giving each line to `line` (which may keep it)
/// and keeping it as the step's output; whether it succeeded.
fn captured(cmd: &mut Command, output: &mut Vec<String>, mut line: impl FnMut(&str)) -> bool {
    let spawned = std::io::pipe().and_then(|(reader, writer)| {
        let child = cmd.stdout(writer.try_clone()?).stderr(writer).spawn();
        // The command's copies of the pipe are in the child now; ours go with `cmd`'s when it is dropped.
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        Ok((child?, reader))
    });
    let (mut child, reader) = match spawned {
        Ok(c) => c,
        Err(e) => {
            output.push(format!("could not start {}: {e}", describe(cmd)));
            return false;
        }
    };
    for text in BufReader::new(reader).lines().map_while(Result::ok) {
        line(&text);
        output.push(text);
    }
    child.wait().map(|s| s.success()).unwrap_or(false)
}

pub fn command(args: &[String]) -> Result<ExitCode> {
    let options = Options::parse(args)?;
    let started = Instant::now();
    let tools = tools::Tools::ensure(true)?;
    let mut steps = vec![Step::done("install tools (pinned)", started, true)];
    let needs_native = ["lint", "native", "postgres", "fuzz", "e2e"].iter().any(|p| options.wants(p));
    let needs_postgres = options.wants("native") || options.wants("postgres");
    // One throwaway PostgreSQL cluster for the run (a schema per test); stopped and removed at the end, or by
    // its watchdog if this process is interrupted.
    let postgres = match needs_postgres {
        true => Some(edge_cluster::Postgres::throwaway().context("starting a throwaway PostgreSQL cluster")?),
        false => None,
    };
    let times = root().join("target/test-times");
    let _ = std::fs::remove_dir_all(&times);
    std::fs::create_dir_all(&times)?;
    let run = Run {
        driver: clippy_driver()?,
        runner_var: format!("CARGO_TARGET_{}_RUNNER", host_triple()?.to_uppercase().replace('-', "_")),
        runner: format!("{} test-runner", install_runner()?.display()),
        times: times.clone(),
        tmp: BrowserTmp::new()?,
        postgres_url: postgres.as_ref().map(|p| p.url("postgres")),
        metadata: root().join("target/nextest-reuse"),
        tools,
    };

    if options.wants("format") {
        steps.push(test_step("format", cargo().args(["fmt", "--all", "--check"])));
    }
    if options.wants("layers") {
        steps.push(layers_step());
    }
    let mut native_built = false;
    if needs_native {
        let (build, lint) = build_and_lint(
            "build (native: every crate but the console, all targets, through clippy-driver)",
            "lint (native: the warnings of that build, clippy's among them)",
            run.cargo().args(["build", "--locked", "--all-targets"]).args(NATIVE),
        );
        native_built = build.ok;
        steps.push(build);
        if options.wants("lint") {
            steps.push(lint);
        }
        if native_built {
            let listed = run.list_test_binaries();
            native_built = listed.ok;
            if !listed.ok {
                steps.push(listed);
            }
        }
    }
    // Two lanes at once: the native tests; and the console's release build, then beside each other the
    // end-to-end tests, the console's wasm build and tests, and the API fuzzing. Each step's output is printed
    // whole when it ends.
    let lanes: [Vec<Step>; 2] = std::thread::scope(|s| {
        let native = s.spawn(|| native_lane(&run, &options, native_built));
        let console = s.spawn(|| console_lane(&run, &options, native_built));
        [native, console].map(|lane| {
            lane.join().unwrap_or_else(|_| {
                vec![Step::failed("a lane of steps", started, &anyhow::anyhow!("its thread panicked"))]
            })
        })
    });
    steps.extend(lanes.into_iter().flatten());
    drop(postgres);
    Ok(summary(&steps, &run, started))
}

/// The native tests on SQLite, then the router suites on PostgreSQL.
fn native_lane(run: &Run, options: &Options, built: bool) -> Vec<Step> {
    let mut steps = Vec::new();
    if built && options.wants("native") {
        let filter = options.narrow("not package(edge-e2e)");
        steps.push(nextest_step(
            "native tests (SQLite; the store contract and replicas on both stores; ClickHouse; faults)",
            &mut run.nextest("sqlite", &filter),
        ));
    }
    if built && options.wants("postgres") {
        let suites = router_suites().map(|f| options.narrow(&f));
        match suites {
            Ok(filter) => {
                let mut cmd = run.nextest("postgres", &filter);
                cmd.env("EDGE_TEST_STORE", "postgres");
                steps.push(nextest_step(
                    "router suites on PostgreSQL (the same test binaries, a schema per test)",
                    &mut cmd,
                ));
            }
            Err(e) => steps.push(Step::failed("router suites on PostgreSQL", Instant::now(), &e)),
        }
    }
    steps
}

/// The console's release build first, so that the end-to-end tests (which wait more than they compute) start as
/// early as they can; then, beside them, the console's wasm build (linted) and its tests, and the API fuzzing.
/// (cargo builds one thing at a time in target/: the wasm build waits for the release build either way.)
fn console_lane(run: &Run, options: &Options, native_built: bool) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut released = false;
    if native_built && options.wants("e2e") {
        let build = release_build_step(run);
        released = build.ok;
        steps.push(build);
    }
    let beside: [Vec<Step>; 3] = std::thread::scope(|s| {
        let e2e = s.spawn(|| match released {
            true => vec![nextest_step(
                "end-to-end tests (real server, real console, headless Chromium, axe-core, size budget)",
                &mut run.nextest("e2e", &options.narrow("package(edge-e2e)")),
            )],
            false => Vec::new(),
        });
        let wasm = s.spawn(|| wasm_steps(run, options));
        let fuzz = s.spawn(|| fuzz_lane(options, native_built));
        [e2e, wasm, fuzz].map(|lane| {
            lane.join().unwrap_or_else(|_| {
                vec![Step::failed("a lane of steps", Instant::now(), &anyhow::anyhow!("its thread panicked"))]
            })
        })
    });
    steps.extend(beside.into_iter().flatten());
    steps
}

/// The console's wasm build (linted) and its tests.
fn wasm_steps(run: &Run, options: &Options) -> Vec<Step> {
    let mut steps = Vec::new();
    if !(options.wants("lint") || options.wants("console")) {
        return steps;
    }
    let wasm = ["-p", "edge-console", "--target", "wasm32-unknown-unknown"];
    let (build, lint) = build_and_lint(
        "build (console, wasm32, all targets, through clippy-driver)",
        "lint (console, wasm32: the warnings of that build)",
        run.cargo().args(["build", "--locked", "--all-targets"]).args(wasm),
    );
    let built = build.ok;
    steps.push(build);
    if options.wants("lint") {
        steps.push(lint);
    }
    if built && options.wants("console") {
        steps.push(test_step(
            "console tests (wasm-bindgen-test in headless Chromium)",
            run.cargo()
                .args(["test", "--locked"])
                .args(wasm)
                .env("TMPDIR", &run.tmp.0)
                .env("CHROMEDRIVER", &run.tools.chromedriver)
                .env("WASM_BINDGEN_TEST_TIMEOUT", "120"),
        ));
    }
    steps
}

/// The API contract fuzzing (schemathesis against a demo server of the native build).
fn fuzz_lane(options: &Options, native_built: bool) -> Vec<Step> {
    const FUZZ: &str = "API contract fuzzing (schemathesis, short)";
    if !(native_built && options.wants("fuzz")) {
        return Vec::new();
    }
    match crate::fuzz_api_command(&["--examples".into(), "3".into(), "--min-requests".into(), "300".into()], false) {
        Ok(mut cmd) => vec![test_step(FUZZ, &mut cmd)],
        Err(e) => {
            let step = Step::failed(FUZZ, Instant::now(), &e);
            emit(&step, &[]);
            vec![step]
        }
    }
}

/// The console's release build (trunk, as `cargo xtask build` makes it), which the end-to-end tests serve.
fn release_build_step(run: &Run) -> Step {
    const NAME: &str = "console release build (trunk --release: the console and the sign-in page)";
    starting(NAME, None);
    let started = Instant::now();
    let mut output = Vec::new();
    let mut ok = true;
    for mut cmd in crate::console_build_commands(&run.tools) {
        output.push(format!("xtask: $ {}", describe(&cmd)));
        ok = captured(&mut cmd, &mut output, |_| {});
        if !ok {
            break;
        }
    }
    let step = Step::done(NAME, started, ok);
    emit(&step, &output);
    step
}

/// Prints the summary: each step, the tests run, where the time went, and the tools used.
fn summary(steps: &[Step], run: &Run, started: Instant) -> ExitCode {
    let timings = timing::Timings::read(&run.times);
    let report = timings.report(15);
    let _ = std::fs::write(root().join("target/test-times.txt"), report.join("\n") + "\n");
    let total = started.elapsed().as_secs();
    let after_tools = total - steps.first().map_or(0, |s| s.seconds);
    println!("\nxtask: summary ({total} s in all, {after_tools} s after installing tools)");
    for step in steps {
        let tests = if step.tests > 0 { format!("{:>4} tests", step.tests) } else { " ".repeat(10) };
        println!("{} {:>5} s {tests}  {}", if step.ok { "ok    " } else { "FAILED" }, step.seconds, step.name);
        for line in &step.summary {
            println!("    {line}");
        }
    }
    println!("xtask: {} tests run", steps.iter().map(|s| s.tests).sum::<usize>());
    println!("xtask: where the time went (also in target/test-times.txt)");
    for line in report {
        println!("    {line}");
    }
    println!("xtask: tools used");
    for (tool, version) in run.tools.versions() {
        println!("    {tool:<32} {version}");
    }
    let failed = steps.iter().filter(|s| !s.ok).count();
    if failed > 0 {
        println!("xtask: {failed} step(s) failed");
        return ExitCode::FAILURE;
    }
    println!("xtask: all steps passed");
    ExitCode::SUCCESS
}

/// The nextest filterset of the router suites that run again on PostgreSQL (see [`NOT_AGAIN`]).
fn router_suites() -> Result<String> {
    let mut suites: Vec<String> = std::fs::read_dir(root().join("server/tests/suite"))?
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let suite = name.strip_suffix(".rs")?.to_string();
            (!NOT_AGAIN.contains(&suite.as_str()) && !HELPERS.contains(&suite.as_str())).then_some(suite)
        })
        .collect();
    suites.sort();
    Ok(format!(
        "(binary_id(edge-server::suite) and test(/^({})::/)) | binary_id(edge-server::held_logins)",
        suites.join("|")
    ))
}

/// Runs a build with `--message-format json`, keeping each diagnostic as the compiler rendered it; the
/// first step fails when the build does, the second when it warned (`-D warnings` of `cargo clippy`: a lint
/// fails the run, but the tests of a build that only warned still run).
fn build_and_lint(build: &'static str, lint: &'static str, cmd: &mut Command) -> (Step, Step) {
    cmd.args(["--message-format", "json-diagnostic-rendered-ansi"]);
    starting(build, Some(cmd));
    let started = Instant::now();
    let (mut warnings, mut errors, mut output) = (0, 0, Vec::new());
    let mut diagnostics = Vec::new();
    let built = captured(cmd, &mut output, |line| {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { return };
        if v["reason"] != "compiler-message" {
            return;
        }
        let message = &v["message"];
        if let Some(rendered) = message["rendered"].as_str() {
            diagnostics.push(rendered.trim_end().to_string());
        }
        // Only diagnostics about code: not the compiler's "N warnings emitted".
        if message["spans"].as_array().is_some_and(|s| !s.is_empty()) {
            match message["level"].as_str() {
                Some("warning") => warnings += 1,
                Some("error") => errors += 1,
                _ => {}
            }
        }
    });
    // cargo's JSON lines are for us; what it says besides them (and the diagnostics) are for the reader.
    output.retain(|l| !l.starts_with('{'));
    output.extend(diagnostics);
    let mut build = Step::done(build, started, built);
    if errors > 0 {
        build.summary.push(format!("{errors} error(s)"));
    }
    let summary = match (built, warnings) {
        (false, _) => vec!["not linted: the build failed".to_string()],
        (true, 0) => vec![],
        (true, n) => vec![format!("{n} warning(s): see the build's output above")],
    };
    emit(&build, &output);
    let lint = Step { name: lint, ok: built && warnings == 0, seconds: 0, tests: 0, summary };
    (build, lint)
}

/// Runs a test command, keeping libtest's `test result:` lines (and fuzz-api's), the number of tests that passed
/// and its wall time.
pub fn test_step(name: &'static str, cmd: &mut Command) -> Step {
    starting(name, Some(cmd));
    let started = Instant::now();
    let (mut summary, mut tests, mut output) = (Vec::new(), 0, Vec::new());
    let ok = captured(cmd, &mut output, |line| {
        // Runners with nothing to run (doc-tests, empty binaries) add nothing to the summary.
        let line_ = line.trim_start();
        if let Some(rest) = line_.strip_prefix("test result:") {
            tests += rest.split(" passed;").next().and_then(|s| s.split_whitespace().last()?.parse().ok()).unwrap_or(0);
            if !line.contains(" 0 passed; 0 failed;") {
                summary.push(line.trim().to_string());
            }
        } else if line_.starts_with("fuzz-api: ") {
            summary.push(line.trim().to_string());
        }
    });
    let step = Step { name, ok, seconds: started.elapsed().as_secs(), tests, summary };
    emit(&step, &output);
    step
}

/// Runs `cargo nextest run`, keeping its summary line, the tests that failed and the number of tests run.
fn nextest_step(name: &'static str, cmd: &mut Command) -> Step {
    starting(name, Some(cmd));
    let started = Instant::now();
    let (mut summary, mut tests, mut after_summary, mut output) = (Vec::new(), 0, false, Vec::new());
    let ok = captured(cmd, &mut output, |line| {
        let plain = strip_ansi(line);
        let trimmed = plain.trim();
        if let Some(rest) = trimmed.strip_prefix("Summary ") {
            after_summary = true;
            // "Summary [  12.345s] 100 tests run: 99 passed, 1 failed, 0 skipped"
            let run = rest.split("] ").nth(1).unwrap_or_default();
            tests = run.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0);
            summary.push(trimmed.to_string());
        } else if after_summary && !trimmed.is_empty() && !trimmed.starts_with("error: test run failed") {
            summary.push(trimmed.to_string());
        }
    });
    let mut step = Step { name, ok, seconds: started.elapsed().as_secs(), tests, summary };
    if !ok && tests == 0 {
        step.summary.push("no test ran (see the output above)".into());
    }
    emit(&step, &output);
    step
}

/// `text` without its terminal colour codes.
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The step that fails on an import cycle in any crate of the workspace.
fn layers_step() -> Step {
    const NAME: &str = "layers (no import cycle in any crate)";
    let started = Instant::now();
    match layers::report(&root(), &[]) {
        Ok(found) => {
            let step = Step {
                name: NAME,
                ok: found.is_empty(),
                seconds: started.elapsed().as_secs(),
                tests: 0,
                summary: found.clone(),
            };
            emit(&step, &found);
            step
        }
        Err(e) => Step::failed(NAME, started, &e),
    }
}
