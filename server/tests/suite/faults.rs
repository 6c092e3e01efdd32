//! Faults with real processes: the server binary with its data dir on a small tmpfs that fills up or turns
//! read-only, ClickHouse killed under it, SIGTERM under load, and chunks sent with an `Idempotency-Key` cut
//! off by SIGKILL of the server or of ClickHouse, then retried (stored once). Each test states what clients get during the
//! fault (503 with `Retry-After` and the JSON error body, never a 404 or a 500, `/readyz` failing), that the
//! server recovers by itself once the cause is gone, and that nothing it acknowledged is lost. Recovery times
//! are printed (`cargo nextest run -p edge-server --no-capture -E 'test(/^faults::/)'`); the README quotes them.
//!
//! Mounting a tmpfs needs root (CI runs as root); where it cannot be mounted those tests fail and say why: a
//! test that cannot run is not a test that passed.

use std::{
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

const PASSWORD: &str = "faulty-password-1234";

/// A tmpfs of `mib` MiB mounted on a temp dir, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts it, or fails the test saying why where this process may not mount.
    fn mount(mib: u64) -> Tmpfs {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m,mode=0700"), "tmpfs"])
            .arg(dir.path())
            .output();
        match out {
            Ok(out) if out.status.success() => Tmpfs { dir },
            Ok(out) => panic!(
                "this test mounts a {mib} MiB tmpfs and could not ({}: {}); it needs root, as in CI \
                 (`sudo cargo xtask test`, or run the other tests with `cargo xtask test --only` and a filter)",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            Err(e) => panic!("this test mounts a tmpfs and could not run `mount`: {e}"),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn remount(&self, mode: &str) {
        let status = Command::new("mount").args(["-o", &format!("remount,{mode}")]).arg(self.path()).status();
        assert!(status.is_ok_and(|s| s.success()), "remount {mode}");
    }

    /// Fills the file system with `filler` until a write fails.
    fn fill(&self) -> PathBuf {
        let filler = self.path().join("filler");
        let mut file = std::fs::File::create(&filler).expect("filler");
        let chunk = vec![0u8; 1 << 16];
        while file.write_all(&chunk).is_ok() {}
        let _ = file.sync_all();
        filler
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("mount").args(["-o", "remount,rw"]).arg(self.path()).status();
        let _ = Command::new("umount").arg("-l").arg(self.path()).status();
    }
}

/// An answer's JSON body, or null. Read whole, then parsed from memory: serde_json reading from the socket a byte
/// at a time took most of these tests' CPU time in a debug build.
fn json_body(reply: ureq::Response) -> Value {
    reply.into_string().ok().and_then(|text| serde_json::from_str(&text).ok()).unwrap_or(Value::Null)
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_edge-server")
}

/// Creates customer `acme` with administrator `alice` in `data_dir` (and, with `args`, the statistics URL).
fn add_customer(data_dir: &Path, args: &[&str]) {
    let out = Command::new(bin())
        .args(["customer", "add", "acme", "--admin", "alice", "--data-dir"])
        .arg(data_dir)
        .args(args)
        .env("EDGE_ADMIN_PASSWORD", PASSWORD)
        .output()
        .expect("customer add");
    assert!(out.status.success(), "customer add: {}", String::from_utf8_lossy(&out.stderr));
}

/// The server binary on a loopback port chosen by the system.
struct Server {
    child: Option<Child>,
    base: String,
    agent: ureq::Agent,
    cookie: String,
}

impl Server {
    fn start(data_dir: &Path, args: &[&str]) -> Server {
        let mut child = Command::new(bin())
            .args(["serve", "--listen", "127.0.0.1:0", "--min-free-disk-mb", "2", "--data-dir"])
            .arg(data_dir)
            .arg("--static-dir")
            .arg(data_dir.join("no-console"))
            .args(args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting edge-server");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let base = loop {
            let line = lines.next().expect("the server printed its address").expect("its output");
            if let Some(addr) = line.strip_prefix("Edge Console: ") {
                break addr.trim_end_matches('/').to_string();
            }
        };
        thread::spawn(move || lines.for_each(drop));
        let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(20)).build();
        let mut server = Server { child: Some(child), base, agent, cookie: String::new() };
        server.cookie = server.login();
        server
    }

    fn login(&self) -> String {
        use base64::Engine;
        let basic = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("alice:{PASSWORD}")));
        let reply = self.agent.post(&format!("{}/acme/v1/sessions", self.base)).set("Authorization", &basic).call();
        let session: Value = reply.expect("login").into_json().expect("session body");
        format!("authtoken={}", session["id"].as_str().expect("session id"))
    }

    /// Status, `Retry-After` and body of a request with the session cookie.
    fn send(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Option<String>, Value) {
        let url = if matches!(path, "/readyz" | "/healthz") {
            format!("{}{path}", self.base)
        } else {
            format!("{}/acme/v1{path}", self.base)
        };
        let request = self.agent.request(method, &url).set("Cookie", &self.cookie);
        let reply = match body {
            Some(b) => request.send_json(b),
            None => request.call(),
        };
        let reply = match reply {
            Ok(r) | Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("{method} {path}: {e}"),
        };
        let (status, retry) = (reply.status(), reply.header("retry-after").map(String::from));
        (status, retry, json_body(reply))
    }

    fn create_user(&self, name: &str) -> (u16, Option<String>, Value) {
        self.send("POST", "/users", Some(json!({"username": name, "password": PASSWORD, "role": {"id": "viewer"}})))
    }

    fn ready(&self) -> u16 {
        self.send("GET", "/readyz", None).0
    }

    /// SIGKILL (no chance to write anything more), and waits for the process to end.
    fn kill(&mut self) {
        let mut child = self.child.take().expect("running");
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        let _ = child.wait();
    }

    /// Posts an ingestion body with an `Idempotency-Key`: status (0 when the connection broke without an
    /// answer), `Idempotent-Replayed` and body.
    fn ingest_keyed(&self, kind: &str, key: &str, body: &str) -> (u16, Option<String>, Value) {
        let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(120)).build();
        let reply = agent
            .post(&format!("{}/acme/v1/ingest/{kind}", self.base))
            .set("Cookie", &self.cookie)
            .set("Content-Type", "application/x-ndjson")
            .set("Idempotency-Key", key)
            .send_string(body);
        match reply {
            Ok(r) | Err(ureq::Error::Status(_, r)) => {
                let (status, replayed) = (r.status(), r.header("idempotent-replayed").map(String::from));
                (status, replayed, json_body(r))
            }
            Err(_) => (0, None, Value::Null),
        }
    }

    /// Posts an ingestion body without a key: status (0 when the connection broke without an answer) and body.
    fn ingest(&self, kind: &str, body: &str) -> (u16, Value) {
        let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(120)).build();
        let reply = agent
            .post(&format!("{}/acme/v1/ingest/{kind}", self.base))
            .set("Cookie", &self.cookie)
            .set("Content-Type", "application/x-ndjson")
            .send_string(body);
        match reply {
            Ok(r) | Err(ureq::Error::Status(_, r)) => (r.status(), json_body(r)),
            Err(_) => (0, Value::Null),
        }
    }

    /// For every delivery grouping set at every granularity, over the last three days: the sum of hits of its
    /// rows (each must equal the hits ingested, once).
    fn delivery_totals(&self) -> Vec<(String, u64)> {
        let now = chrono::Utc::now();
        let time = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%dT%H:00:00").to_string();
        let (from, to) = (time(now - chrono::Duration::days(3)), time(now + chrono::Duration::hours(2)));
        edge_api::stats::Family::Delivery
            .groupings()
            .into_iter()
            .map(|set| {
                let (granularity, dims) = set.split_once('/').unwrap_or((set.as_str(), ""));
                let path = format!(
                    "/stats/data?starttime={from}&endtime={to}&granularity={granularity}&dimensions={}&metrics=hits&limit=2500",
                    dims.replace('/', ",")
                );
                let (mut rows, mut hits) = (0, 0);
                loop {
                    let (status, _, body) = self.send("GET", &format!("{path}&start={rows}"), None);
                    assert_eq!(status, 200, "{path}: {body}");
                    let page = body["rows"].as_array().cloned().unwrap_or_default();
                    rows += page.len() as u64;
                    hits += page.iter().filter_map(|r| r.as_array()?.last()?.as_u64()).sum::<u64>();
                    if page.is_empty() || Some(rows) >= body["total_results"].as_u64() {
                        break;
                    }
                }
                (set, hits)
            })
            .collect()
    }

    /// SIGTERM, then waits for the process to end; its exit status.
    fn terminate(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        child.wait().expect("reaping the server")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Polls `check` every 50 ms for up to `limit`; how long it took to hold.
fn time_until(limit: Duration, mut check: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check() {
            return Some(start.elapsed());
        }
        thread::sleep(Duration::from_millis(50));
    }
    None
}

fn assert_unavailable(reply: &(u16, Option<String>, Value), kind: &str, what: &str) {
    assert_eq!(reply.0, 503, "{what}: {:?}", reply.2);
    assert_eq!(reply.2["type"], kind, "{what}: {:?}", reply.2);
    assert!(reply.1.as_deref().is_some_and(|s| s.parse::<u64>().is_ok()), "{what}: Retry-After, got {:?}", reply.1);
}

#[test]
fn a_full_disk_answers_503_and_writes_work_again_once_space_is_back_without_a_restart() {
    let disk = Tmpfs::mount(64);
    let data = disk.path().join("data");
    add_customer(&data, &[]);
    let server = Server::start(&data, &[]);
    let mut acknowledged = Vec::new();
    for i in 0..5 {
        let reply = server.create_user(&format!("before-{i}"));
        assert_eq!(reply.0, 201, "{:?}", reply.2);
        acknowledged.push(format!("before-{i}"));
    }
    assert_eq!(server.ready(), 200);

    let filler = disk.fill();
    // Writes fail as storage failures — also again and again, as on the machine the review used.
    for i in 0..20 {
        let reply = server.create_user(&format!("during-{i}"));
        if reply.0 == 201 {
            acknowledged.push(format!("during-{i}")); // the WAL had room for one more page
            continue;
        }
        assert_unavailable(&reply, "storage_unavailable", "a write on a full disk");
    }
    let ready = server.send("GET", "/readyz", None);
    assert_eq!(ready.0, 503, "/readyz on a full disk: {:?}", ready.2);
    // A client's session check during the fault is not "logged out".
    let current = server.send("GET", "/sessions/current", None);
    assert_ne!(current.0, 404, "GET /sessions/current during the fault: {:?}", current.2);

    std::fs::remove_file(filler).expect("removing the filler");
    let recovered = time_until(Duration::from_secs(20), || {
        let reply = server.create_user("after");
        reply.0 == 201
    });
    let recovered = recovered.expect("writes work again without a restart");
    acknowledged.push("after".into());
    let ready = time_until(Duration::from_secs(20), || server.ready() == 200).expect("/readyz passes again");
    eprintln!("full disk: writes again {recovered:?} after space was freed; /readyz 200 {ready:?} after that");
    for i in 0..20 {
        assert_eq!(server.create_user(&format!("later-{i}")).0, 201, "every later write works");
    }
    let users = server.send("GET", "/users?count=1000", None).2;
    let names: Vec<&str> =
        users["items"].as_array().expect("items").iter().filter_map(|u| u["username"].as_str()).collect();
    for name in &acknowledged {
        assert!(names.contains(&name.as_str()), "acknowledged user {name} is there");
    }
}

/// A data dir on a read-only file system (a full or failing disk the kernel remounted read-only): the server
/// does not start, and says which directory it could not write. (While it runs, Linux refuses to remount a
/// file system read-only under its open database; a full disk is the running case, above.)
#[test]
fn a_start_on_a_read_only_data_dir_fails_naming_the_directory() {
    let disk = Tmpfs::mount(16);
    let data = disk.path().join("data");
    add_customer(&data, &[]);
    disk.remount("ro");
    let out = Command::new(bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .output()
        .expect("edge-server serve");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&data.display().to_string()), "the error names the data dir: {stderr}");
    assert!(stderr.contains("Read-only file system"), "and why: {stderr}");
}

#[test]
fn a_snapshot_without_room_is_skipped_and_leaves_no_temp_file_and_the_next_start_has_everything() {
    let disk = Tmpfs::mount(64);
    let data = disk.path().join("data");
    add_customer(&data, &[]);
    let mut server = Server::start(&data, &[]);
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S").to_string();
    let lines: String = (0..2000)
        .map(|i| {
            let record = json!({
                "timestamp": now, "domain": format!("d{i}.example"), "property": "shop", "country": "DE",
                "country_code": "DE", "browser_name": "Chrome", "device_type": "Desktop", "device_os": "Linux",
                "content_type": "text/html", "request_type": "GET", "cache_status": 1, "gna_cache_status": 1,
                "scheme": 2, "http_status_code": 200, "request_url": "/", "hits": 1, "first_mile_bandwidth_bytes": 1,
                "last_mile_bandwidth_bytes": 100, "middle_mile_bandwidth_bytes": 1, "original_bandwidth_bytes": 1,
                "request_time_ms": 5, "time_to_first_byte_ms": 1, "time_to_last_byte_ms": 5
            });
            format!("{record}\n")
        })
        .collect();
    let reply = server
        .agent
        .post(&format!("{}/acme/v1/ingest/accesslogs", server.base))
        .set("Cookie", &server.cookie)
        .set("Content-Type", "application/x-ndjson")
        .send_string(&lines);
    let answer: Value = reply.expect("ingested").into_json().expect("ingest answer");
    assert_eq!(answer["accepted"], 2000, "{answer}");
    let filler = disk.fill();
    // Stopping writes a snapshot: without room it is skipped, the log kept, and the process ends cleanly.
    let status = server.terminate();
    assert!(status.success(), "the server stopped cleanly: {status}");
    assert!(!data.join("stats/snapshot.tmp").exists(), "no snapshot.tmp is left behind");
    std::fs::remove_file(filler).expect("removing the filler");
    let server = Server::start(&data, &[]);
    let day = &now[..10];
    let answer = server.send(
        "GET",
        &format!("/stats/data?starttime={day}T00:00:00&endtime={}&granularity=day&metrics=hits", tomorrow(day)),
        None,
    );
    assert_eq!(answer.0, 200, "{:?}", answer.2);
    assert_eq!(answer.2["rows"][0][2], 2000, "every ingested record is there after the start: {:?}", answer.2);
}

fn tomorrow(day: &str) -> String {
    let d = chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").expect("a day");
    format!("{}T00:00:00", d.succ_opt().expect("a next day"))
}

/// A rolling restart's stop: two servers behind the load balancer (HAProxy, or nginx where that is what is
/// installed), one of them stopped with SIGTERM while eight clients keep requesting through the balancer.
/// Draining (not ready, every answer closing its connection) and the balancer's retries mean no client sees
/// anything but the answer it asked for.
#[test]
fn sigterm_under_load_behind_the_balancer_loses_no_request() {
    let dir = tempfile::tempdir().expect("temp dir");
    let servers: Vec<Server> = ["a", "b"]
        .iter()
        .map(|name| {
            let data = dir.path().join(name);
            add_customer(&data, &[]);
            Server::start(&data, &["--drain-secs", "3"])
        })
        .collect();
    let ports: Vec<u16> =
        servers.iter().map(|s| s.base.rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port")).collect();
    let listen = format!("127.0.0.1:{}", edge_cluster::free_port().expect("a free port")).parse().expect("address");
    let balancer = edge_cluster::Balancer::start(&dir.path().join("balancer"), listen, &ports).expect("balancer");
    let base = balancer.url();
    let both_ready = time_until(Duration::from_secs(20), || {
        (0..4).all(|_| ureq::get(&format!("{base}/readyz")).call().is_ok_and(|r| r.status() == 200))
    });
    both_ready.expect("both servers ready behind the balancer");
    let stop = Arc::new(AtomicBool::new(false));
    let (answered, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (base, stop, answered, failed) = (base.clone(), stop.clone(), answered.clone(), failed.clone());
            thread::spawn(move || {
                use base64::Engine;
                let basic =
                    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("alice:{PASSWORD}")));
                let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(20)).build();
                while !stop.load(Ordering::Relaxed) {
                    match agent.get(&format!("{base}/acme/v1/account")).set("Authorization", &basic).call() {
                        Ok(r) if r.status() == 200 => answered.fetch_add(1, Ordering::Relaxed),
                        other => {
                            eprintln!("not answered as asked: {:?}", other.map(|r| r.status()));
                            failed.fetch_add(1, Ordering::Relaxed)
                        }
                    };
                }
            })
        })
        .collect();
    // Load on both (the balancer alternates), then SIGTERM to one under it; the load goes on until the other
    // has answered another hundred requests: none of them, nor of those in flight at the signal, fails.
    let answered_at_least = |n: u64| {
        time_until(Duration::from_secs(60), || answered.load(Ordering::Relaxed) >= n).expect("the load is answered")
    };
    answered_at_least(100);
    let mut servers = servers;
    let started = Instant::now();
    let status = servers[0].terminate();
    let stopped_in = started.elapsed();
    answered_at_least(answered.load(Ordering::Relaxed) + 100);
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().expect("worker");
    }
    assert!(status.success(), "clean exit: {status}");
    let (answered, failed) = (answered.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    eprintln!(
        "SIGTERM behind {}: stopped in {stopped_in:?}; {answered} requests answered 200, {failed} not",
        balancer.kind.name()
    );
    assert!(answered > 100, "the load ran: {answered}");
    assert_eq!(failed, 0, "every request was answered as asked");

    // With no server left, the balancer's own answer is the JSON error body too (deploy/haproxy/edge-503.http).
    assert!(servers[1].terminate().success());
    let reply = time_until(Duration::from_secs(10), || {
        matches!(ureq::get(&format!("{base}/acme/v1/account")).call(), Err(ureq::Error::Status(503, _)))
    });
    reply.expect("503 from the balancer");
    let Err(ureq::Error::Status(503, reply)) = ureq::get(&format!("{base}/acme/v1/account")).call() else {
        panic!("503 from the balancer")
    };
    assert_eq!(reply.content_type(), "application/json");
    assert!(reply.header("retry-after").is_some());
    let body: Value = reply.into_json().expect("a JSON body");
    assert_eq!(body["type"], "unavailable", "{body}");
}

#[test]
fn readyz_fails_while_clickhouse_is_gone_and_passes_when_it_is_back() {
    let mut clickhouse = edge_cluster::ClickHouse::start().expect("a throwaway clickhouse-server");
    let url = clickhouse.url("edge_faults");
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    add_customer(&data, &[]);
    let server = Server::start(&data, &["--stats-url", &url]);
    assert_eq!(server.ready(), 200);
    clickhouse.stop();
    let not_ready = time_until(Duration::from_secs(10), || server.ready() == 503).expect("/readyz fails");
    let query = server.send(
        "GET",
        "/stats/data?starttime=2026-01-01T00:00:00&endtime=2026-01-02T00:00:00&granularity=day&metrics=hits",
        None,
    );
    assert_unavailable(&query, "database_unavailable", "a statistics query without ClickHouse");
    clickhouse.restart().expect("ClickHouse again");
    let ready = time_until(Duration::from_secs(30), || server.ready() == 200).expect("/readyz passes again");
    eprintln!("ClickHouse killed: /readyz 503 after {not_ready:?}; back: /readyz 200 after {ready:?}");
}

/// A chunk of `n` access-log lines of the last two days (a shipper's chunk of a log file): the NDJSON body and
/// the hits it holds.
fn access_chunk(seed: u64, n: usize) -> (String, u64) {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut below = |m: u64| {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % m
    };
    let now = chrono::Utc::now();
    let (mut body, mut hits) = (String::with_capacity(n * 520), 0);
    for _ in 0..n {
        let at = now - chrono::Duration::seconds(below(2 * 86_400 - 60) as i64 + 60);
        let h = 1 + below(4);
        hits += h;
        let country = ["DE", "FR", "US", "BR", "JP"][below(5) as usize];
        let browser = ["Chrome", "Firefox", "Safari"][below(3) as usize];
        let os = ["Linux", "iOS", "Windows"][below(3) as usize];
        let status = [200, 304, 404, 503][below(4) as usize];
        let record = json!({
            "timestamp": at.format("%Y-%m-%dT%H:%M:%S").to_string(), "domain": format!("d{}.example", below(8)),
            "property": format!("p{}", below(4)), "country": country, "country_code": country,
            "browser_name": browser, "device_type": "Desktop",
            "device_os": os, "content_type": "text/html",
            "request_type": "GET", "cache_status": below(3), "gna_cache_status": 1 + below(2), "scheme": 2,
            "http_status_code": status, "request_url": format!("/p{}", below(500)),
            "hits": h, "first_mile_bandwidth_bytes": below(1000), "last_mile_bandwidth_bytes": below(100_000),
            "middle_mile_bandwidth_bytes": below(1000), "original_bandwidth_bytes": below(1000),
            "request_time_ms": below(500), "time_to_first_byte_ms": below(100), "time_to_last_byte_ms": below(900)
        });
        body.push_str(&record.to_string());
        body.push('\n');
    }
    (body, hits)
}

fn assert_totals(server: &Server, hits: u64, what: &str) {
    for (set, total) in server.delivery_totals() {
        assert_eq!(total, hits, "{what}: the hits of {set} are those of every chunk once");
    }
}

/// The embedded engine: a keyed chunk acknowledged and then the server SIGKILLed is there once after the
/// restart, and the shipper's retry with the same key stores nothing (the key came back with the log). A
/// chunk whose request is cut off by SIGKILL at any point is stored at most once by the attempt and exactly
/// once after the retry.
#[test]
fn a_server_killed_after_or_during_a_keyed_chunk_stores_it_once_after_the_retry() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    add_customer(&data, &[]);
    let mut server = Server::start(&data, &[]);
    let (body, mut hits) = access_chunk(1, 12_000);
    let started = Instant::now();
    let first = server.ingest_keyed("accesslogs", "app.log:0", &body);
    let took = started.elapsed();
    assert_eq!((first.0, first.2["accepted"].as_u64()), (200, Some(12_000)), "{:?}", first.2);
    server.kill();
    let mut server = Server::start(&data, &[]);
    let retry = server.ingest_keyed("accesslogs", "app.log:0", &body);
    assert_eq!((retry.0, retry.1.as_deref(), &retry.2), (200, Some("true"), &first.2), "the first answer again");
    assert_totals(&server, hits, "acknowledged, then SIGKILL");

    let mut outcomes = Vec::new();
    // Kills spread over the time a chunk takes, the last ones about when it is logged and answered.
    for (i, share) in [0.1, 0.5, 0.8, 0.9, 0.95, 1.0, 1.05].into_iter().enumerate() {
        let delay_ms = (took.as_secs_f64() * 1000.0 * share) as u64;
        let (body, chunk_hits) = access_chunk(10 + i as u64, 12_000);
        let key = format!("app.log:{}", i + 1);
        let attempt = {
            let (base, cookie) = (server.base.clone(), server.cookie.clone());
            let (key, body) = (key.clone(), body.clone());
            thread::spawn(move || {
                let probe = Server { child: None, base, agent: ureq::agent(), cookie };
                probe.ingest_keyed("accesslogs", &key, &body).0
            })
        };
        thread::sleep(Duration::from_millis(delay_ms));
        server.kill();
        let first = attempt.join().expect("the attempt");
        server = Server::start(&data, &[]);
        let retry = server.ingest_keyed("accesslogs", &key, &body);
        assert_eq!((retry.0, retry.2["accepted"].as_u64()), (200, Some(12_000)), "{:?}", retry.2);
        hits += chunk_hits;
        assert_totals(&server, hits, &format!("SIGKILL {delay_ms} ms into a chunk"));
        let how = match (first, retry.1.as_deref()) {
            (200, Some("true")) => "answered, retry replayed",
            (_, Some("true")) => "cut off after it was logged, retry replayed",
            _ => "cut off before it was logged, retry stored it",
        };
        outcomes.push(format!("{delay_ms} ms: {how}"));
    }
    eprintln!("SIGKILL of the server during a keyed 12,000-line chunk (one takes {took:?}): {}", outcomes.join("; "));
}

/// Runs `sql` on the ClickHouse of `port` (as an operator would with clickhouse-client).
fn clickhouse_sql(port: u16, sql: &str) -> Option<String> {
    ureq::post(&format!("http://127.0.0.1:{port}/"))
        .timeout(Duration::from_secs(5))
        .send_string(sql)
        .ok()
        .and_then(|r| r.into_string().ok())
}

fn clickhouse_count(port: u16, sql: &str) -> u64 {
    clickhouse_sql(port, sql).and_then(|s| s.trim().parse().ok()).unwrap_or(0)
}

/// ClickHouse SIGKILLed in the middle of a keyed 50,000-line insert (at three points: while the insert is
/// under way, as soon as its raw part is written, and once some rollup parts are), restarted, and the chunk
/// retried with the same key: the raw table holds every record once and every delivery grouping set's hits are
/// those of every chunk once.
#[test]
fn clickhouse_killed_mid_insert_then_the_retry_with_the_same_key_stores_the_chunk_once() {
    let mut clickhouse = edge_cluster::ClickHouse::start().expect("a throwaway clickhouse-server");
    let port = clickhouse.http_port;
    let database = "edge_exactly_once";
    let url = clickhouse.url(database);
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    add_customer(&data, &[]);
    let server = Server::start(&data, &["--stats-url", &url, "--max-body-bytes", "104857600"]);
    let parts = |table: &str| {
        clickhouse_count(
            port,
            &format!("SELECT count() FROM system.parts WHERE database = '{database}' AND table = '{table}' AND active"),
        )
    };
    let markers = || {
        clickhouse_count(
            port,
            &format!("SELECT count() FROM {database}.delivery_5minute WHERE grouping = 9223372036854775808"),
        ) + clickhouse_count(
            port,
            &format!("SELECT count() FROM {database}.topk_url_day WHERE grouping = 9223372036854775808"),
        )
    };
    // A chunk stored without a fault first: how long one takes.
    let (body, mut hits) = access_chunk(99, 50_000);
    let started = Instant::now();
    let clean = server.ingest_keyed("accesslogs", "big.log:clean", &body);
    let took = started.elapsed();
    assert_eq!((clean.0, clean.2["accepted"].as_u64()), (200, Some(50_000)), "{:?}", clean.2);
    let mut records = 50_000u64;
    let mut outcomes = Vec::new();
    type When<'a> = Box<dyn Fn(u64, u64) -> bool + 'a>;
    let rounds: [(&str, When); 3] = [
        (
            "while the insert is under way",
            Box::new(|_, _| {
                clickhouse_count(port, "SELECT count() FROM system.processes WHERE query LIKE 'INSERT INTO access_in%'")
                    > 0
            }),
        ),
        ("once its raw part is written", Box::new(|raw_parts, _| parts("access") > raw_parts)),
        ("once some rollup parts are written", Box::new(|_, marker_rows| markers() > marker_rows)),
    ];
    for (round, (when, kill_when)) in rounds.into_iter().enumerate() {
        let (body, chunk_hits) = access_chunk(100 + round as u64, 50_000);
        let key = format!("big.log:{round}");
        let (raw_parts, marker_rows) = (parts("access"), markers());
        let attempt = {
            let (base, cookie) = (server.base.clone(), server.cookie.clone());
            let (key, body) = (key.clone(), body.clone());
            thread::spawn(move || {
                let probe = Server { child: None, base, agent: ureq::agent(), cookie };
                probe.ingest_keyed("accesslogs", &key, &body).0
            })
        };
        let seen = time_until(Duration::from_secs(60), || kill_when(raw_parts, marker_rows) || attempt.is_finished());
        clickhouse.stop();
        let first = attempt.join().expect("the attempt");
        clickhouse.restart().expect("ClickHouse again");
        let landed_raw = clickhouse_count(port, &format!("SELECT count() FROM {database}.access")) - records;
        let landed_markers = markers() - marker_rows;
        let started = Instant::now();
        let mut attempts = 0;
        let (retry, last) = loop {
            let attempt = Instant::now();
            let reply = server.ingest_keyed("accesslogs", &key, &body);
            attempts += 1;
            if reply.0 == 200 || started.elapsed() > Duration::from_secs(90) {
                break (reply, attempt.elapsed());
            }
            assert!(matches!(reply.0, 503), "only 503 while ClickHouse comes back: {:?}", reply);
            thread::sleep(Duration::from_millis(200));
        };
        let waited = started.elapsed();
        assert_eq!((retry.0, retry.2["accepted"].as_u64()), (200, Some(50_000)), "{when}: {:?}", retry.2);
        hits += chunk_hits;
        records += 50_000;
        assert_eq!(clickhouse_count(port, &format!("SELECT count() FROM {database}.access")), records, "{when}");
        assert_totals(&server, hits, when);
        let again = server.ingest_keyed("accesslogs", &key, &body);
        assert_eq!((again.0, again.1.as_deref()), (200, Some("true")), "{when}: then replayed");
        outcomes.push(format!(
            "{when} (seen: {}): first attempt {}, had left {landed_raw} raw rows and {landed_markers} marker rows \
             of delivery_5minute/topk_url_day; the retry answered 200 {:.1} s after the restart ({attempts} attempts, \
             the last {:.1} s)",
            seen.is_some(),
            if first == 0 { "cut off".to_string() } else { first.to_string() },
            waited.as_secs_f64(),
            last.as_secs_f64()
        ));
    }
    eprintln!(
        "ClickHouse SIGKILLed during a keyed 50,000-line chunk (one takes {:.1} s without a fault):\n  {}",
        took.as_secs_f64(),
        outcomes.join("\n  ")
    );
}

/// ClickHouse: records sent without a key are acknowledged once in the server's spool on disk, and nothing
/// acknowledged is lost or stored twice: a chunk acknowledged while ClickHouse is gone, then the server
/// SIGKILLed, is written when both are back; a chunk acknowledged and the server SIGKILLed at once is there once
/// after the restart; ClickHouse SIGKILLed while a segment of the spool is being written (once its raw part is
/// written, the rollups' parts maybe not), the server writes the rest of it, once, when ClickHouse is back.
#[test]
fn clickhouse_records_in_the_spool_survive_a_server_kill_and_an_insert_cut_off_and_are_stored_once() {
    let mut clickhouse = edge_cluster::ClickHouse::start().expect("a throwaway clickhouse-server");
    let port = clickhouse.http_port;
    let database = "edge_spool";
    let url = clickhouse.url(database);
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    add_customer(&data, &[]);
    let args = ["--stats-url", url.as_str(), "--max-body-bytes", "104857600"];
    let mut server = Server::start(&data, &args);
    let raw_rows = || clickhouse_count(port, &format!("SELECT count() FROM {database}.access"));
    let spooled = || std::fs::read_dir(data.join("stats/spool")).map_or(0, |d| d.count());

    // Acknowledged while ClickHouse is gone; the server killed; both back.
    clickhouse.stop();
    let (body, mut hits) = access_chunk(200, 12_000);
    let first = server.ingest("accesslogs", &body);
    assert_eq!((first.0, first.1["accepted"].as_u64()), (200, Some(12_000)), "{:?}", first.1);
    server.kill();
    assert!(spooled() > 0, "the chunk waits in the spool");
    clickhouse.restart().expect("ClickHouse again");
    let mut server = Server::start(&data, &args);
    assert_totals(&server, hits, "acknowledged without ClickHouse, then SIGKILL");
    let mut records = 12_000;
    assert_eq!(raw_rows(), records, "every record once");

    // Acknowledged, and the server killed at once.
    let (body, chunk_hits) = access_chunk(201, 12_000);
    let answer = server.ingest("accesslogs", &body);
    assert_eq!((answer.0, answer.1["accepted"].as_u64()), (200, Some(12_000)), "{:?}", answer.1);
    server.kill();
    let mut server = Server::start(&data, &args);
    (hits, records) = (hits + chunk_hits, records + 12_000);
    assert_totals(&server, hits, "acknowledged, then SIGKILL at once");
    assert_eq!(raw_rows(), records, "every record once");

    // ClickHouse killed once the segment's raw part is written.
    let raw_parts = || {
        clickhouse_count(
            port,
            &format!("SELECT count() FROM system.parts WHERE database = '{database}' AND table = 'access' AND active"),
        )
    };
    let before = raw_parts();
    let (body, chunk_hits) = access_chunk(202, 50_000);
    let answer = server.ingest("accesslogs", &body);
    assert_eq!((answer.0, answer.1["accepted"].as_u64()), (200, Some(50_000)), "{:?}", answer.1);
    let seen = time_until(Duration::from_secs(60), || raw_parts() > before);
    clickhouse.stop();
    let landed = spooled();
    clickhouse.restart().expect("ClickHouse again");
    let landed_raw = raw_rows() - records;
    (hits, records) = (hits + chunk_hits, records + 50_000);
    assert_totals(&server, hits, "ClickHouse SIGKILLed while the spool was written");
    assert_eq!(raw_rows(), records, "every record once");
    eprintln!(
        "ClickHouse SIGKILLed while a spool segment of 50,000 records was written (raw part seen: {}): it had \
         left {landed_raw} raw rows ({landed} segment files in the spool); then every record once",
        seen.is_some()
    );
    server.kill();
    drop(server);
}
