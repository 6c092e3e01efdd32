//! `edge-bench fuzz-api`: schemathesis against a server it starts with demo data. Every operation of
//! `/openapi.json` is exercised with generated requests (valid and invalid), logged in as the demo
//! administrator; the run fails on any 5xx, any answer whose status, content type or body the document does
//! not describe, or a server that no longer answers afterwards. A run that reports only errors inside
//! Hypothesis itself (no finding) is repeated once.
//!
//! Usage: edge-bench fuzz-api --work DIR --server PATH/edge-server --schemathesis PATH/st
//!        [--examples N] [--min-requests N]

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Instant,
};

use anyhow::{Context, Result, bail};

use crate::{Args, server::Server};

const HOOKS: &str = include_str!("fuzz/hooks.py");
const PASSWORD: &str = "fuzz-password-12345";
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance";

pub fn run(args: &Args) -> Result<()> {
    let work = args.path("--work")?;
    let server_bin = args.path("--server")?;
    let st = args.path("--schemathesis")?;
    let examples: u32 = args.number("--examples")?.unwrap_or(25);
    let min_requests: u64 = args.number("--min-requests")?.unwrap_or(2000);
    let _ = std::fs::remove_dir_all(&work);
    // Hypothesis (under schemathesis) now and then fails inside itself while it builds a strategy (e.g.
    // "AST constructor recursion depth mismatch", about one run in three): a run that reports such errors and
    // nothing else is repeated once, on a fresh server. Any finding about the API still fails the run.
    let first = attempt(&work.join("attempt-1"), &server_bin, &st, examples)?;
    let run = if first.only_internal_errors() {
        println!("fuzz-api: schemathesis reported only errors inside Hypothesis; running it once more");
        attempt(&work.join("attempt-2"), &server_bin, &st, examples)?
    } else {
        first
    };
    if !run.succeeded {
        bail!("schemathesis failed; the report is in {}", run.dir.join("report").display());
    }
    if !run.healthy {
        bail!("the server stopped answering during the run");
    }
    if run.generated < min_requests {
        bail!("only {} requests were generated (at least {min_requests} wanted)", run.generated);
    }
    Ok(())
}

/// What one schemathesis run did.
struct Attempt {
    dir: PathBuf,
    succeeded: bool,
    healthy: bool,
    generated: u64,
    /// Everything schemathesis printed.
    output: Vec<String>,
}

impl Attempt {
    /// Whether the run failed only by errors inside Hypothesis: see [`only_internal_errors`].
    fn only_internal_errors(&self) -> bool {
        !self.succeeded && self.healthy && only_internal_errors(&self.output)
    }
}

/// Whether schemathesis's report (its output) holds errors, each one raised inside Hypothesis's own code (a
/// traceback through `hypothesis/internal/`), and no failure: no FAILURES section, no other error.
pub fn only_internal_errors(output: &[String]) -> bool {
    let mut section = "";
    let mut errors: Vec<bool> = Vec::new();
    for line in output {
        let t = line.trim();
        if t.len() > 10 && t.starts_with("===") && t.ends_with("===") {
            section = t.trim_matches('=').trim();
            if section == "FAILURES" {
                return false;
            }
            continue;
        }
        if section != "ERRORS" {
            continue;
        }
        if t.len() > 10 && t.starts_with("___") && t.ends_with("___") {
            errors.push(false);
        } else if t.contains("/hypothesis/internal/")
            && let Some(internal) = errors.last_mut()
        {
            *internal = true;
        }
    }
    !errors.is_empty() && errors.iter().all(|internal| *internal)
}

/// A demo server in `dir` and one schemathesis run against it.
fn attempt(work: &Path, server_bin: &Path, st: &Path, examples: u32) -> Result<Attempt> {
    std::fs::create_dir_all(work)?;
    std::fs::write(work.join("hooks.py"), HOOKS)?;

    let mut server = Server::start(
        server_bin,
        &work.join("data"),
        &["--demo", "--demo-days", "2"],
        &[("EDGE_DEMO_PASSWORD", PASSWORD)],
    )?;
    println!("fuzz-api: server at {}, {examples} examples per operation, checks {CHECKS}", server.base);
    let t = Instant::now();
    let mut child = Command::new(st)
        .current_dir(work)
        .arg("run")
        .arg(format!("{}/openapi.json", server.base))
        .args(["--checks", CHECKS, "--max-examples", &examples.to_string(), "--workers", "2", "--no-color"])
        .args(["--report", "junit", "--report-dir", "report"])
        .env("SCHEMATHESIS_HOOKS", "hooks")
        .env("PYTHONPATH", work)
        .env("EDGE_FUZZ_BASE", &server.base)
        .env("EDGE_FUZZ_CUSTOMER", "demo")
        .env("EDGE_FUZZ_USER", "admin")
        .env("EDGE_FUZZ_PASSWORD", PASSWORD)
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", st.display()))?;
    let mut generated = None;
    let mut output: Vec<String> = Vec::new();
    for line in BufReader::new(child.stdout.take().context("schemathesis output")?).lines() {
        let line = line?;
        println!("{line}");
        // The summary reads "Test cases:" then "  4383 generated, ...".
        if output.last().is_some_and(|previous| previous.trim() == "Test cases:") {
            generated = line.split_whitespace().next().and_then(|n| n.parse::<u64>().ok());
        }
        output.push(line);
    }
    let status = child.wait()?;
    let healthy = server.healthy();
    let generated = generated.unwrap_or(0);
    println!();
    println!(
        "fuzz-api: {generated} generated requests in {:.0} s; schemathesis {}; server {}",
        t.elapsed().as_secs_f64(),
        if status.success() { "found no failure" } else { "reported failures or errors" },
        if healthy { "still healthy" } else { "NOT healthy" }
    );
    Ok(Attempt { dir: work.to_path_buf(), succeeded: status.success(), healthy, generated, output })
}

#[cfg(test)]
mod tests {
    use super::only_internal_errors;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(String::from).collect()
    }

    /// The end of a real report (cut short) of the error seen about one run in three.
    const HYPOTHESIS_ERROR: &str = "\
 ✅ 3 passed

==================================== ERRORS ====================================
______________________________ GET /demo/v1/audit ______________________________
Runtime Error

AST constructor recursion depth mismatch (before=66, after=60)

    Traceback (most recent call last):
      File \"/p/target/tools/fuzz-venv/lib/python3.11/site-packages/hypothesis/internal/lambda_sources.py\", line 353, in _lambda_description
        all_lambdas = AST_LAMBDAS_CACHE[source_lines]
    SystemError: AST constructor recursion depth mismatch (before=66, after=60)

Need more help?
    Join our Discord server: https://discord.gg/R9ASRAmHnA

=================================== WARNINGS ===================================

Authentication failed: 5 operations returned only 401/403 responses

=================================== SUMMARY ====================================
======================== 1 error, 4 warnings in 22.53s =========================
";

    #[test]
    fn errors_inside_hypothesis_alone_may_be_retried() {
        assert!(only_internal_errors(&lines(HYPOTHESIS_ERROR)));
    }

    #[test]
    fn a_finding_or_another_error_is_never_retried() {
        let failure = HYPOTHESIS_ERROR.replace(
            "=================================== WARNINGS",
            "=================================== FAILURES ===================================\n\
             ______________________________ GET /demo/v1/users ______________________________\n\
             Server error\n\n=================================== WARNINGS",
        );
        assert!(!only_internal_errors(&lines(&failure)));
        let other_error = HYPOTHESIS_ERROR.replace(
            "Need more help?",
            "______________________________ GET /demo/v1/roles ______________________________\n\
             Network Error\n\nConnection refused\n\nNeed more help?",
        );
        assert!(!only_internal_errors(&lines(&other_error)));
        let passed = "=================================== SUMMARY ====================================\n\
                      ============================= 4 warnings in 23.00s =============================";
        assert!(!only_internal_errors(&lines(passed)));
    }
}
