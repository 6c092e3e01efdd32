//! The `edge-server` command line: `customer add` and `serve --demo`, run as a real process.

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
};

const BIN: &str = env!("CARGO_BIN_EXE_edge-server");
const PASSWORD: &str = "a-long-enough-password";

fn customer_add(data_dir: &std::path::Path, name: &str, admin: &str) -> std::process::Output {
    Command::new(BIN)
        .args(["customer", "add", name, "--admin", admin, "--data-dir"])
        .arg(data_dir)
        .env("EDGE_ADMIN_PASSWORD", PASSWORD)
        .stdin(Stdio::null())
        .output()
        .expect("run edge-server")
}

#[test]
fn customer_add_creates_a_tenant_once_and_refuses_an_existing_name() {
    let dir = tempfile::tempdir().unwrap();
    let out = customer_add(dir.path(), "acme", "root");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("Created customer `acme` with administrator `root` in {}", dir.path().display())
    );
    let again = customer_add(dir.path(), "acme", "other");
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("customer \"acme\" already exists"));
}

#[test]
fn customer_add_refuses_bad_names_and_weak_passwords() {
    let dir = tempfile::tempdir().unwrap();
    let out = customer_add(dir.path(), "Not Valid", "root");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid customer name"));
    let out = Command::new(BIN)
        .args(["customer", "add", "acme", "--admin", "root", "--data-dir"])
        .arg(dir.path())
        .env("EDGE_ADMIN_PASSWORD", "short")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 12 characters"));
}

#[test]
fn customer_add_without_a_password_and_without_a_terminal_says_how_to_give_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["customer", "add", "acme", "--admin", "root", "--data-dir"])
        .arg(dir.path())
        .env_remove("EDGE_ADMIN_PASSWORD")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("EDGE_ADMIN_PASSWORD"));
}

/// Starts `serve --demo` on a free port, returns its first stdout lines, then stops it with SIGTERM.
fn serve_demo_output(data_dir: &std::path::Path) -> (Vec<String>, std::process::ExitStatus) {
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--demo",
            "--demo-days",
            "1",
            "--listen",
            "127.0.0.1:0",
            "--static-dir",
            "/nonexistent",
            "--data-dir",
        ])
        .arg(data_dir)
        .env("EDGE_DEMO_PASSWORD", PASSWORD)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let second = lines.next().unwrap().unwrap();
    let pid = child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let status = child.wait().unwrap();
    (vec![first, second], status)
}

#[test]
fn serve_demo_seeds_an_empty_data_dir_only_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let (lines, status) = serve_demo_output(dir.path());
    assert!(lines[0].starts_with("Edge Console: http://127.0.0.1:"), "{lines:?}");
    assert_eq!(
        lines[1],
        format!("Log in with customer `demo`, user `admin` (or `operator`, `viewer`), password `{PASSWORD}`")
    );
    assert!(status.success(), "graceful shutdown exits 0: {status}");

    let (lines, _) = serve_demo_output(dir.path());
    assert!(lines[1].starts_with("The data dir already holds data"), "{lines:?}");
}

#[test]
fn ingest_loads_ndjson_files_reporting_bad_lines_by_file_and_number() {
    let dir = tempfile::tempdir().unwrap();
    assert!(customer_add(dir.path(), "acme", "root").status.success());
    let file = dir.path().join("logs.ndjson");
    let good = r#"{"timestamp":"2026-01-01T00:00:00","domain":"a.example","property":"p","http_status_code":200,"scheme":2,"request_url":"/"}"#;
    std::fs::write(&file, format!("{good}\n{{\"timestamp\":1}}\n{good}\n")).unwrap();
    let out = Command::new(BIN)
        .args(["ingest", "--kind", "accesslogs", "--customer", "acme", "--data-dir"])
        .arg(dir.path())
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Ingested 2 records into acme; 1 lines rejected");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:2: ", file.display())), "{err}");
    let out = Command::new(BIN)
        .args(["ingest", "--kind", "accesslogs", "--customer", "nobody", "--data-dir"])
        .arg(dir.path())
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
}
