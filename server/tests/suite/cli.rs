//! The `edge-server` command line: `customer add`, `ingest` and `serve --demo`, run as a real process — on a
//! data dir alone, or with `--database-url` (as `$EDGE_DATABASE_URL`) when the suite runs on PostgreSQL.

use crate::common;

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
};

const BIN: &str = env!("CARGO_BIN_EXE_edge-server");
const PASSWORD: &str = "a-long-enough-password";

/// Where a test's server keeps its state: a data dir, and its own PostgreSQL schema on a PostgreSQL run.
struct Place {
    dir: tempfile::TempDir,
    database_url: Option<String>,
}

impl Place {
    fn new() -> Place {
        let database_url = common::on_postgres().then(|| {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(common::fresh_schema(&common::postgres_url()))
        });
        Place { dir: tempfile::tempdir().unwrap(), database_url }
    }

    fn path(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// `edge-server ARGS --data-dir DIR`, with the database URL in the environment.
    fn edge(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args).arg("--data-dir").arg(self.dir.path());
        match &self.database_url {
            Some(url) => cmd.env("EDGE_DATABASE_URL", url),
            None => cmd.env_remove("EDGE_DATABASE_URL"),
        };
        cmd
    }

    /// Where `customer add` says it created the customer.
    fn store(&self) -> String {
        match &self.database_url {
            Some(url) => edge_server::store::postgres::redact(url),
            None => self.dir.path().display().to_string(),
        }
    }
}

fn customer_add(place: &Place, name: &str, admin: &str) -> std::process::Output {
    place
        .edge(&["customer", "add", name, "--admin", admin])
        .env("EDGE_ADMIN_PASSWORD", PASSWORD)
        .stdin(Stdio::null())
        .output()
        .expect("run edge-server")
}

#[test]
fn customer_add_creates_a_tenant_once_and_refuses_an_existing_name() {
    let dir = Place::new();
    let out = customer_add(&dir, "acme", "root");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("Created customer `acme` with administrator `root` in {}", dir.store())
    );
    let again = customer_add(&dir, "acme", "other");
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("customer \"acme\" already exists"));
}

#[test]
fn customer_add_refuses_bad_names_and_weak_passwords() {
    let dir = Place::new();
    let out = customer_add(&dir, "Not Valid", "root");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid customer name"));
    let out = dir
        .edge(&["customer", "add", "acme", "--admin", "root"])
        .env("EDGE_ADMIN_PASSWORD", "short")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 12 characters"));
}

#[test]
fn customer_add_without_a_password_and_without_a_terminal_says_how_to_give_one() {
    let dir = Place::new();
    let out = dir
        .edge(&["customer", "add", "acme", "--admin", "root"])
        .env_remove("EDGE_ADMIN_PASSWORD")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("EDGE_ADMIN_PASSWORD"));
}

/// Starts `serve --demo` on a free port, returns its first stdout lines, then stops it with SIGTERM.
fn serve_demo_output(place: &Place) -> (Vec<String>, std::process::ExitStatus) {
    let mut child = place
        .edge(&["serve", "--demo", "--demo-days", "1", "--listen", "127.0.0.1:0", "--static-dir", "/nonexistent"])
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
    let dir = Place::new();
    let (lines, status) = serve_demo_output(&dir);
    assert!(lines[0].starts_with("Edge Console: http://127.0.0.1:"), "{lines:?}");
    assert_eq!(
        lines[1],
        format!("Log in with customer `demo`, user `admin` (or `operator`, `viewer`), password `{PASSWORD}`")
    );
    assert!(status.success(), "graceful shutdown exits 0: {status}");

    let (lines, _) = serve_demo_output(&dir);
    let held =
        if dir.database_url.is_some() { "The database already holds data" } else { "The data dir already holds data" };
    assert!(lines[1].starts_with(held), "{lines:?}");
}

#[test]
fn ingest_loads_ndjson_files_reporting_bad_lines_by_file_and_number() {
    let dir = Place::new();
    assert!(customer_add(&dir, "acme", "root").status.success());
    let file = dir.path().join("logs.ndjson");
    let good = r#"{"timestamp":"2026-01-01T00:00:00","domain":"a.example","property":"p","http_status_code":200,"scheme":2,"request_url":"/"}"#;
    std::fs::write(&file, format!("{good}\n{{\"timestamp\":1}}\n{good}\n")).unwrap();
    let out = dir.edge(&["ingest", "--kind", "accesslogs", "--customer", "acme"]).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("Ingested 2 records into acme; 1 lines rejected ("), "{stdout}");
    assert!(stdout.trim_end().ends_with(" records/s)"), "{stdout}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:2: ", file.display())), "{err}");
    let out = dir.edge(&["ingest", "--kind", "accesslogs", "--customer", "nobody"]).arg(&file).output().unwrap();
    assert!(!out.status.success());
}

/// `serve` on a free port with its stderr collected: the child, its address, and a thread that returns the
/// stderr once the process ends. None when the server stopped before it listened.
fn serve(place: &Place) -> (std::process::Child, Option<String>, std::thread::JoinHandle<String>) {
    let mut child = place
        .edge(&["serve", "--listen", "127.0.0.1:0", "--static-dir", "/nonexistent"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let base = lines.find_map(|l| l.ok()?.strip_prefix("Edge Console: ").map(|a| a.trim_end_matches('/').to_string()));
    std::thread::spawn(move || lines.for_each(drop));
    (child, base, errors)
}

fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

#[test]
fn a_logged_batch_that_cannot_be_applied_is_skipped_and_reported_and_the_server_starts() {
    use base64::Engine;
    let dir = Place::new();
    assert!(customer_add(&dir, "acme", "root").status.success());
    let basic = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("root:{PASSWORD}")));
    // One batch through the running server, killed before it writes a snapshot: the batch is only in the log.
    let (mut child, base, _) = serve(&dir);
    let base = base.expect("the server listens");
    let record = r#"{"timestamp":"2026-01-01T00:00:00","domain":"a.example","property":"p","http_status_code":200,"scheme":2,"request_url":"/","hits":2}"#;
    let reply = ureq::post(&format!("{base}/acme/v1/ingest/accesslogs"))
        .set("Authorization", &basic)
        .set("Content-Type", "application/x-ndjson")
        .send_string(&[record; 3].join("\n"))
        .unwrap();
    assert_eq!(reply.into_string().unwrap(), r#"{"accepted":3,"rejected":[],"rejected_more":0}"#);
    child.kill().unwrap();
    child.wait().unwrap();

    // The log becomes: that batch (1), a whole, checksummed batch that cannot be decoded (2), that batch again (3).
    let wal = dir.path().join("stats/wal.bin");
    let good = std::fs::read(&wal).unwrap();
    assert_eq!(u64::from_le_bytes(good[4..12].try_into().unwrap()), 1, "one batch, sequence number 1");
    let payload = b"not a security event";
    let mut bad = Vec::new();
    bad.extend_from_slice(&good[..4]);
    bad.extend_from_slice(&2u64.to_le_bytes());
    bad.push(1);
    bad.extend_from_slice(&1i64.to_le_bytes());
    bad.extend_from_slice(&1u32.to_le_bytes());
    bad.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bad.extend_from_slice(&fnv64(payload).to_le_bytes());
    bad.extend_from_slice(payload);
    let mut again = good.clone();
    again[4..12].copy_from_slice(&3u64.to_le_bytes());
    std::fs::write(&wal, [good, bad.clone(), again].concat()).unwrap();

    // It used to refuse to start; now it skips batch 2, reports it, keeps it aside, and applies batch 3.
    let (mut child, base, errors) = serve(&dir);
    let Some(base) = base else {
        panic!("the server did not start: {}", errors.join().unwrap());
    };
    let day = "starttime=2026-01-01T00:00:00&endtime=2026-01-02T00:00:00&metrics=hits&granularity=day";
    let body: serde_json::Value = ureq::get(&format!("{base}/acme/v1/stats/data?{day}"))
        .set("Authorization", &basic)
        .call()
        .unwrap()
        .into_json()
        .unwrap();
    assert_eq!(body["rows"][0][2], 12, "both good batches: {body}");
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    child.wait().unwrap();
    let stderr = errors.join().unwrap();
    assert!(stderr.contains("statistics log: skipped a batch that cannot be applied"), "{stderr}");
    assert!(stderr.contains("seq=2"), "{stderr}");
    assert_eq!(std::fs::read(dir.path().join("stats/skipped-batch-2.bin")).unwrap(), bad, "kept aside as it was");
}

#[test]
fn ingest_reads_gzip_and_zstd_files_and_shows_records_per_second_on_a_terminal() {
    use std::io::Write;
    let dir = Place::new();
    assert!(customer_add(&dir, "acme", "root").status.success());
    let line = r#"{"timestamp":"2026-01-01T00:00:00","domain":"a.example","property":"p","http_status_code":200,"scheme":2,"request_url":"/"}"#;
    let text = format!("{}\n", [line; 30_000].join("\n"));
    let gz = dir.path().join("logs.ndjson.gz");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(text.as_bytes()).unwrap();
    std::fs::write(&gz, e.finish().unwrap()).unwrap();
    let zst = dir.path().join("logs.ndjson.zst");
    std::fs::write(&zst, zstd::encode_all(text.as_bytes(), 3).unwrap()).unwrap();
    let out = dir.edge(&["ingest", "--kind", "accesslogs", "--customer", "acme"]).args([&gz, &zst]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("Ingested 60000 records into acme; 0 lines rejected"), "{stdout}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("records/s"), "no progress bar without a terminal");
    // On a terminal (util-linux `script` gives it one), the progress bar counts records per second.
    if Command::new("script").arg("--version").output().is_ok() {
        let command = format!(
            "{BIN} ingest --kind accesslogs --customer acme --data-dir {} {}",
            dir.path().display(),
            gz.display()
        );
        let mut script = Command::new("script");
        match &dir.database_url {
            Some(url) => script.env("EDGE_DATABASE_URL", url),
            None => script.env_remove("EDGE_DATABASE_URL"),
        };
        let out = script.args(["-qec", &command, "/dev/null"]).output().unwrap();
        let screen = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{screen}");
        assert!(screen.contains("30000 records, "), "{screen}");
        assert!(screen.contains(" records/s"), "{screen}");
    }
}

/// A server process that is killed when the test ends, even by a failed assertion.
struct KillOnDrop(std::process::Child);

impl std::ops::Deref for KillOnDrop {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Basic credentials of `user` with the test password.
fn basic(user: &str) -> String {
    use base64::Engine;
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{PASSWORD}")))
}

/// POSTs `body` as `user` of `customer`; the status (any, not only 2xx).
fn post_json(base: &str, customer: &str, user: &str, path: &str, body: serde_json::Value) -> u16 {
    match ureq::post(&format!("{base}/{customer}/v1{path}")).set("Authorization", &basic(user)).send_json(body) {
        Ok(r) => r.status(),
        Err(ureq::Error::Status(status, _)) => status,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn an_operator_moves_a_host_to_another_customer_with_host_release() {
    let dir = Place::new();
    assert!(customer_add(&dir, "acme", "root").status.success());
    assert!(customer_add(&dir, "globex", "boss").status.success());
    let (child, base, _) = serve(&dir);
    let mut child = KillOnDrop(child);
    let base = base.expect("the server listens");
    let shop = serde_json::json!({"name": "shop", "host_patterns": ["www.shop.example", "m.shop.example"]});
    assert_eq!(post_json(&base, "acme", "root", "/properties", shop.clone()), 201);
    assert_eq!(post_json(&base, "globex", "boss", "/properties", shop.clone()), 409, "acme's hosts");

    let out = dir.edge(&["host", "show", "www.shop.example"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "www.shop.example is claimed by customer `acme`, property `shop`"
    );
    // Released while the server runs: a new version of acme's configuration without it.
    for host in ["www.shop.example", "m.shop.example"] {
        let out = dir.edge(&["host", "release", host]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).starts_with(&format!("Released {host} from customer `acme`")));
    }
    let out = dir.edge(&["host", "release", "www.shop.example"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no property claims the host pattern"));
    assert_eq!(post_json(&base, "globex", "boss", "/properties", shop), 201, "now globex's");
    let config: serde_json::Value = ureq::get(&format!("{base}/acme/v1/properties/shop/config"))
        .set("Authorization", &basic("root"))
        .call()
        .unwrap()
        .into_json()
        .unwrap();
    assert_eq!((config["version"].as_u64(), config["author"].as_str()), (Some(3), Some("system")));
    assert_eq!(config["config"]["host_patterns"], serde_json::json!([]));
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_failed_login_under_a_customer_that_does_not_exist_is_in_the_server_log() {
    let dir = Place::new();
    let (child, base, errors) = serve(&dir);
    let mut child = KillOnDrop(child);
    let base = base.expect("the server listens");
    let status = match ureq::post(&format!("{base}/nosuchcustomer/v1/sessions"))
        .set("Authorization", &basic("mallory"))
        .call()
    {
        Ok(r) => r.status(),
        Err(ureq::Error::Status(status, _)) => status,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(status, 401);
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    child.wait().unwrap();
    let log = errors.join().unwrap();
    let line = log.lines().find(|l| l.contains("failed login under a customer that does not exist"));
    let line = line.unwrap_or_else(|| panic!("no such line: {log}"));
    assert!(line.contains("customer=nosuchcustomer") && line.contains("username=mallory"), "{line}");
    assert!(line.contains("addr=127.0.0.1"), "{line}");
}

#[test]
fn the_server_creates_its_files_for_its_own_user_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Place::new();
    assert!(customer_add(&dir, "acme", "root").status.success());
    let (child, base, _) = serve(&dir);
    let mut child = KillOnDrop(child);
    let base = base.expect("the server listens");
    let record = r#"{"timestamp":"2026-01-01T00:00:00","domain":"a.example","property":"p","http_status_code":200,"scheme":2,"request_url":"/"}"#;
    let reply = ureq::post(&format!("{base}/acme/v1/ingest/accesslogs"))
        .set("Authorization", &basic("root"))
        .set("Content-Type", "application/x-ndjson")
        .send_string(record)
        .unwrap();
    assert_eq!(reply.status(), 200);
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    child.wait().unwrap();
    let mode = |p: &str| std::fs::metadata(dir.path().join(p)).unwrap().permissions().mode() & 0o777;
    // The statistics engine's own files, whatever this test's umask.
    assert_eq!(mode("stats"), 0o700);
    assert_eq!(mode("stats/snapshot.bin"), 0o600);
    assert_eq!(mode(".lock"), 0o600);
}

#[test]
fn ingest_obeys_the_limits_of_the_server_and_says_what_it_folded_or_refused() {
    let dir = Place::new();
    assert!(customer_add(&dir, "acme", "root").status.success());
    let file = dir.path().join("urls.ndjson");
    let lines: Vec<String> = (0..1500)
        .map(|i| {
            format!(
                r#"{{"timestamp":"2026-01-01T00:00:00","domain":"a.example","property":"p","http_status_code":200,"scheme":2,"request_url":"/u{i}"}}"#
            )
        })
        .collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    let ingest = || {
        let mut cmd = dir.edge(&["ingest", "--kind", "accesslogs", "--customer", "acme"]);
        cmd.env("EDGE_STATS_MAX_VALUES", "1000").arg(&file);
        cmd
    };
    let out = ingest().output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("Ingested 1500 records into acme"), "{stdout}");
    assert!(
        stdout.contains(
            "500 records' request_url stored as (other) (acme holds 1000 distinct request_url values, the most \
             --stats-max-values allows)"
        ),
        "{stdout}"
    );
    // A limit the server would not take is refused before anything is read.
    let out = dir
        .edge(&["ingest", "--kind", "accesslogs", "--customer", "acme", "--stats-max-values", "10"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("1000"), "{}", String::from_utf8_lossy(&out.stderr));
    // Once the customer holds as many rows as allowed, nothing more is stored.
    let out = ingest().args(["--stats-max-rows", "1000"]).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the most the server allows (1000, --stats-max-rows)"), "{stderr}");
}
