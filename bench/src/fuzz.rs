//! `edge-bench fuzz-api`: schemathesis against a server it starts with demo data. Every operation of
//! `/openapi.json` is exercised with generated requests (valid and invalid), logged in as the demo
//! administrator; the run fails on any 5xx, any answer whose status, content type or body the document does
//! not describe, any error of schemathesis itself, operations that refused most of the data generated from
//! the document (it promises more than the server accepts), or a server that no longer answers afterwards.
//! Nothing is retried.
//!
//! Usage: edge-bench fuzz-api --work DIR --server PATH/edge-server --schemathesis PATH/st
//!        [--examples N] [--min-requests N]

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Command, Stdio},
    time::Instant,
};

use anyhow::{Context, Result, bail};

use crate::{Args, server::Server};

const HOOKS: &str = include_str!("fuzz/hooks.py");
/// The rules across fields that the document states in words, applied to positive cases by the hooks.
const RULES: &str = include_str!("fuzz/rules.py");
/// Imported first by the hooks: one AST construction at a time (the cause of Hypothesis's "AST constructor
/// recursion depth mismatch" is a CPython race, see the file).
const SERIALIZE_AST: &str = include_str!("fuzz/serialize_ast.py");
const PASSWORD: &str = "fuzz-password-12345";
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance";

pub fn run(args: &Args) -> Result<()> {
    let work = args.path("--work")?;
    let server_bin = args.path("--server")?;
    let st = args.path("--schemathesis")?;
    let examples: u32 = args.number("--examples")?.unwrap_or(25);
    let min_requests: u64 = args.number("--min-requests")?.unwrap_or(2000);
    let _ = std::fs::remove_dir_all(&work);
    let run = attempt(&work, &server_bin, &st, examples)?;
    if !run.succeeded {
        bail!("schemathesis failed; the report is in {}", work.join("report").display());
    }
    if !run.healthy {
        bail!("the server stopped answering during the run");
    }
    if run.generated < min_requests {
        bail!("only {} requests were generated (at least {min_requests} wanted)", run.generated);
    }
    if run.mismatched > 0 {
        bail!(
            "schemathesis says {} operations mostly rejected generated data: /openapi.json accepts more than the \
             server does for them",
            run.mismatched
        );
    }
    Ok(())
}

/// What one schemathesis run did.
struct Attempt {
    succeeded: bool,
    healthy: bool,
    generated: u64,
    /// Operations of schemathesis's "Schema validation mismatch" warning.
    mismatched: u64,
}

/// A demo server in `dir` and one schemathesis run against it.
fn attempt(work: &Path, server_bin: &Path, st: &Path, examples: u32) -> Result<Attempt> {
    std::fs::create_dir_all(work)?;
    std::fs::write(work.join("hooks.py"), HOOKS)?;
    std::fs::write(work.join("serialize_ast.py"), SERIALIZE_AST)?;
    std::fs::write(work.join("rules.py"), RULES)?;

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
    let mismatched = mismatched_operations(&output);
    println!();
    println!(
        "fuzz-api: {generated} generated requests in {:.0} s; schemathesis {}; {mismatched} operations mostly \
         rejected generated data; server {}",
        t.elapsed().as_secs_f64(),
        if status.success() { "found no failure" } else { "reported failures or errors" },
        if healthy { "still healthy" } else { "NOT healthy" }
    );
    Ok(Attempt { succeeded: status.success(), healthy, generated, mismatched })
}

/// The number in schemathesis's "Schema validation mismatch: N operations mostly rejected generated data"
/// warning (0 without it): operations whose every answer was a 4xx, mostly refusals of the data sent, which is
/// what the document says they accept and the server does not.
fn mismatched_operations(output: &[String]) -> u64 {
    output
        .iter()
        .filter_map(|line| line.split_once("Schema validation mismatch"))
        .filter_map(|(_, rest)| rest.trim_start_matches([':', ' ']).split_whitespace().next()?.parse().ok())
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::{SERIALIZE_AST, mismatched_operations};

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(String::from).collect()
    }

    #[test]
    fn the_mismatch_warning_is_read_from_the_report() {
        let warned = lines(
            "=================================== WARNINGS ===================================\n\n\
             Schema validation mismatch: 23 operations mostly rejected generated data due to validation errors, \
             indicating schema constraints don't match API validation\n\n  - GET /demo/v1/stats/data\n",
        );
        assert_eq!(mismatched_operations(&warned), 23);
        let clean = lines("Authentication failed: 5 operations returned only 401/403 responses\n 3 passed");
        assert_eq!(mismatched_operations(&clean), 0);
    }

    /// Runs `ast_race.py` (threads parsing while the garbage collector runs Python code mid-construction) with
    /// the machine's python3, the interpreter the fuzzing environment is made from; returns its version and the
    /// number of parses that failed with the recursion-depth SystemError.
    fn race(serialized: bool) -> (String, u32) {
        let dir = std::env::temp_dir().join(format!("edge-ast-race-{}-{serialized}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(dir.join("serialize_ast.py"), SERIALIZE_AST).expect("writing serialize_ast.py");
        std::fs::write(dir.join("ast_race.py"), include_str!("fuzz/ast_race.py")).expect("writing ast_race.py");
        let mut cmd = Command::new("python3");
        cmd.current_dir(&dir).arg("ast_race.py");
        if serialized {
            cmd.arg("--serialized");
        }
        let out = cmd.output().expect("running python3");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(out.status.success(), "ast_race.py failed: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let (version, errors) = text.split_once(' ').expect("version and count");
        (version.to_string(), errors.parse().expect("a count"))
    }

    /// CPython fixed the race in 3.11.8 and 3.12.2 (gh-106905).
    fn has_the_race(version: &str) -> bool {
        let parts: Vec<u32> = version.split('.').filter_map(|p| p.parse().ok()).collect();
        matches!(parts[..], [3, 11, micro] if micro < 8) || matches!(parts[..], [3, 12, micro] if micro < 2)
    }

    #[test]
    fn the_fuzzer_constructs_one_ast_at_a_time_so_hypothesis_cannot_hit_the_interpreter_race() {
        let (version, errors) = race(false);
        if has_the_race(&version) {
            assert!(errors > 0, "Python {version} has the race of gh-106905, yet the reproducer did not show it");
        }
        let (_, errors) = race(true);
        assert_eq!(errors, 0, "parses failed with serialize_ast in place (Python {version})");
    }
}
