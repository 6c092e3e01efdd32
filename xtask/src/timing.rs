//! Where a test run's time goes: every native test process runs through [`runner`] (cargo's target runner,
//! `CARGO_TARGET_<host>_RUNNER`), which records its wall time and its CPU time (its own and that of the
//! processes it started and waited for: servers, ClickHouse, browsers) into the run's directory of timings;
//! [`Timings::report`] prints the slowest tests and the binaries' totals in the summary of `cargo xtask test`.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::{Command, ExitCode},
    time::Instant,
};

use anyhow::{Context, Result};

/// The variable naming the directory a runner writes its record into (one file per test process).
pub const DIR_VAR: &str = "EDGE_TEST_TIMES";
/// The variable naming the step a test process belongs to (e.g. "sqlite", "postgres", "e2e").
pub const STEP_VAR: &str = "EDGE_TEST_STEP";

/// One test process as the runner saw it.
#[derive(Clone, Debug)]
pub struct Record {
    pub step: String,
    pub binary: String,
    pub test: String,
    pub wall_ms: u64,
    pub cpu_ms: u64,
    pub passed: bool,
}

/// CPU time (user and system) of this process's children that have ended and been waited for, in ms.
fn children_cpu_ms() -> u64 {
    // SAFETY: getrusage writes into the struct it is given and nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let ms = |t: libc::timeval| t.tv_sec as u64 * 1000 + t.tv_usec as u64 / 1000;
    ms(usage.ru_utime) + ms(usage.ru_stime)
}

/// `xtask test-runner PROGRAM ARGS...`: runs the test binary with its arguments and standard streams, records
/// it (unless it is only listing its tests), and ends as it ended (its exit code, or its signal).
pub fn runner(args: &[String]) -> Result<ExitCode> {
    let (program, rest) = args.split_first().context("usage: xtask test-runner PROGRAM [ARGS...]")?;
    let started = Instant::now();
    let status = Command::new(program).args(rest).status().with_context(|| format!("starting {program}"))?;
    let wall_ms = started.elapsed().as_millis() as u64;
    let listing = rest.iter().any(|a| a == "--list");
    if let (false, Some(dir)) = (listing, std::env::var_os(DIR_VAR)) {
        let binary = std::env::var("NEXTEST_BINARY_ID").unwrap_or_else(|_| {
            Path::new(program).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        });
        let test = rest.iter().find(|a| !a.starts_with('-')).cloned().unwrap_or_default();
        let record = serde_json::json!({
            "step": std::env::var(STEP_VAR).unwrap_or_default(),
            "binary": binary,
            "test": test,
            "wall_ms": wall_ms,
            "cpu_ms": children_cpu_ms(),
            "passed": status.success(),
        });
        // One file per process: test processes run at once and never write into the same file.
        let file = PathBuf::from(dir).join(format!("{}.json", std::process::id()));
        let _ = std::fs::write(file, record.to_string());
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            // The test runner tells a crash from a failure by the signal: end by the same one.
            // SAFETY: resetting a signal's handler and raising it in this single-threaded process.
            unsafe {
                libc::signal(signal, libc::SIG_DFL);
                libc::raise(signal);
            }
        }
    }
    Ok(ExitCode::from(status.code().unwrap_or(1).clamp(0, 255) as u8))
}

/// The records of a run.
pub struct Timings(pub Vec<Record>);

impl Timings {
    /// Reads every record in `dir`.
    pub fn read(dir: &Path) -> Timings {
        let mut records = Vec::new();
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let Ok(text) = std::fs::read_to_string(entry.path()) else { continue };
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else { continue };
            let text_of = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            records.push(Record {
                step: text_of("step"),
                binary: text_of("binary"),
                test: text_of("test"),
                wall_ms: v["wall_ms"].as_u64().unwrap_or(0),
                cpu_ms: v["cpu_ms"].as_u64().unwrap_or(0),
                passed: v["passed"].as_bool().unwrap_or(false),
            });
        }
        records.sort_by(|a, b| b.wall_ms.cmp(&a.wall_ms).then_with(|| a.test.cmp(&b.test)));
        Timings(records)
    }

    /// Lines for the summary: the `slowest` tests by wall time, then each binary's tests, wall and CPU time
    /// (summed over its tests, which ran at once with others), slowest first.
    pub fn report(&self, slowest: usize) -> Vec<String> {
        let secs = |ms: u64| format!("{:>7.1}", ms as f64 / 1000.0);
        let mut lines = vec![format!("slowest {slowest} test processes (wall s, CPU s, step, binary, test):")];
        for r in self.0.iter().take(slowest) {
            let failed = if r.passed { "" } else { " (failed)" };
            lines.push(format!(
                "  {} {}  {:<8} {} {}{failed}",
                secs(r.wall_ms),
                secs(r.cpu_ms),
                r.step,
                r.binary,
                r.test
            ));
        }
        let mut binaries: BTreeMap<(&str, &str), (usize, u64, u64)> = BTreeMap::new();
        for r in &self.0 {
            let e = binaries.entry((&r.step, &r.binary)).or_default();
            *e = (e.0 + 1, e.1 + r.wall_ms, e.2 + r.cpu_ms);
        }
        let mut binaries: Vec<_> = binaries.into_iter().collect();
        binaries.sort_by_key(|b| std::cmp::Reverse(b.1.1));
        lines.push("test binaries (tests, wall s and CPU s summed over their tests, step, binary):".into());
        for ((step, binary), (n, wall, cpu)) in binaries {
            lines.push(format!("  {n:>4} {} {}  {step:<8} {binary}", secs(wall), secs(cpu)));
        }
        let (wall, cpu): (u64, u64) = self.0.iter().fold((0, 0), |(w, c), r| (w + r.wall_ms, c + r.cpu_ms));
        lines.push(format!(
            "{} test processes: {:.0} s of wall time and {:.0} s of CPU time summed",
            self.0.len(),
            wall as f64 / 1000.0,
            cpu as f64 / 1000.0
        ));
        lines
    }
}
