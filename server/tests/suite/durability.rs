//! Crash durability: the real server binary is killed with SIGKILL in the middle of a stream of writes (user
//! creations, configuration updates, network list entries, ingestion batches — plain, gzip and zstd bodies),
//! twice, and started again. Every write it acknowledged must be there afterwards, and storage must be
//! consistent.

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

const PASSWORD: &str = "durable-password-123";
const ROUNDS: usize = 2;

/// The server binary running on a loopback port chosen by the system.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(data_dir: &Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_edge-server"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .arg("--static-dir")
            .arg(data_dir.join("no-console"))
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting edge-server");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let base = loop {
            let line = lines.next().expect("the server printed its address").expect("reading its output");
            if let Some(addr) = line.strip_prefix("Edge Console: ") {
                break addr.trim_end_matches('/').to_string();
            }
        };
        // Keep draining its output so it never blocks on a full pipe.
        thread::spawn(move || lines.for_each(drop));
        Server { child, base }
    }

    /// SIGKILL: no shutdown hook, no snapshot, no flush.
    fn kill(mut self) {
        self.child.kill().expect("killing the server");
        self.child.wait().expect("reaping the server");
    }
}

/// An HTTP client logged in as the administrator of `acme` with a session cookie.
#[derive(Clone)]
struct Client {
    agent: ureq::Agent,
    base: String,
    cookie: String,
}

impl Client {
    fn login(base: &str) -> Client {
        use base64::Engine;
        let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(20)).build();
        let basic = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("alice:{PASSWORD}")));
        let reply = agent.post(&format!("{base}/acme/v1/sessions")).set("Authorization", &basic).call().expect("login");
        let session: Value = reply.into_json().expect("session body");
        let id = session["id"].as_str().expect("session id");
        Client { agent, base: base.to_string(), cookie: format!("authtoken={id}") }
    }

    fn request(&self, method: &str, path: &str) -> ureq::Request {
        self.agent.request(method, &format!("{}/acme/v1{path}", self.base)).set("Cookie", &self.cookie)
    }

    fn get(&self, path: &str) -> Value {
        let reply = self.request("GET", path).call().unwrap_or_else(|e| panic!("GET {path}: {e}"));
        reply.into_json().expect("json body")
    }
}

/// What the server acknowledged, by kind of write.
#[derive(Default)]
struct Acknowledged {
    users: Vec<String>,
    /// (version, etag) of every accepted configuration update.
    configs: Vec<(u64, String)>,
    entries: Vec<String>,
    /// Hits in every accepted ingestion batch.
    hits: u64,
    /// Security events in every accepted batch of them.
    security_events: u64,
}

/// The start of the hour before the current one, and the statistics window around it.
fn traffic_hour() -> (String, String, String) {
    use chrono::{DurationRound, Utc};
    let hour =
        Utc::now().duration_trunc(chrono::TimeDelta::hours(1)).expect("whole hours") - chrono::TimeDelta::hours(1);
    let fmt = |t: chrono::DateTime<Utc>| t.format("%Y-%m-%dT%H:%M:%S").to_string();
    (fmt(hour + chrono::TimeDelta::minutes(30)), fmt(hour), fmt(hour + chrono::TimeDelta::hours(1)))
}

/// One round: four writers, each a stream of one kind of write, until `stop`.
/// Acknowledgements so far of each of the four writers (users, configurations, list entries, ingestion).
type Progress = Arc<[AtomicUsize; 4]>;

fn write_until(
    client: &Client,
    round: usize,
    list_id: &str,
    stop: &Arc<AtomicBool>,
    progress: &Progress,
) -> Acknowledged {
    let users = {
        let (client, stop, progress) = (client.clone(), stop.clone(), progress.clone());
        thread::spawn(move || {
            let mut acked = Vec::new();
            for i in 0.. {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let username = format!("user-{round}-{i}");
                let body = json!({"username": username, "password": PASSWORD, "full_name": "Durable", "email": format!("{username}@example.com"), "role": {"id": "viewer"}});
                if client.request("POST", "/users").send_json(body).is_ok_and(|r| r.status() == 201) {
                    acked.push(username);
                    progress[0].fetch_add(1, Ordering::Relaxed);
                }
            }
            acked
        })
    };
    let configs = {
        let (client, stop, progress) = (client.clone(), stop.clone(), progress.clone());
        thread::spawn(move || {
            let mut acked = Vec::new();
            let Ok(reply) = client.request("GET", "/properties/shop/config").call() else { return acked };
            let mut current: Value = reply.into_json().expect("config body");
            for i in 0.. {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let mut config = current["config"].clone();
                config["cache_rules"] = json!([{"path_pattern": format!("/r{round}-{i}/*"), "ttl_seconds": i + 1}]);
                let etag = current["etag"].as_str().unwrap_or_default().to_string();
                let sent = client
                    .request("PUT", "/properties/shop/config")
                    .set("If-Match", &etag)
                    .send_json(json!({"config": config, "comment": format!("round {round} update {i}")}));
                match sent.map(|r| r.into_json::<Value>()) {
                    Ok(Ok(reply)) => {
                        let version = reply["version"].as_u64().expect("version");
                        acked.push((version, reply["etag"].as_str().unwrap_or_default().to_string()));
                        progress[1].fetch_add(1, Ordering::Relaxed);
                        current = reply;
                    }
                    _ => break,
                }
            }
            acked
        })
    };
    let entries = {
        let (client, stop, list_id, progress) = (client.clone(), stop.clone(), list_id.to_string(), progress.clone());
        thread::spawn(move || {
            let mut acked = Vec::new();
            for i in 0u32.. {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let entry = std::net::Ipv4Addr::from(0x0a00_0000 + ((round as u32) << 16) + i).to_string();
                let path = format!("/config/networklists/{list_id}/entries");
                if client.request("POST", &path).send_json(json!([{"entry": entry}])).is_ok_and(|r| r.status() == 200) {
                    acked.push(entry);
                    progress[2].fetch_add(1, Ordering::Relaxed);
                }
            }
            acked
        })
    };
    let ingest = {
        let (client, stop, progress) = (client.clone(), stop.clone(), progress.clone());
        thread::spawn(move || {
            let (at, _, _) = traffic_hour();
            let (mut hits, mut security_events) = (0, 0);
            for i in 0.. {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let batch: String = (0..50)
                    .map(|j| {
                        let record = json!({"timestamp": at, "domain": "www.example.com", "property": "shop", "http_status_code": 200, "scheme": 2, "request_url": format!("/r{round}/{i}/{j}"), "hits": 3});
                        format!("{record}\n")
                    })
                    .collect();
                // Security events in the plain shape shippers write (the scanner's path, not serde's).
                let events: String = (0..50)
                    .map(|j| {
                        format!(
                            r#"{{"timestamp":"{at}","source":"waf","event_type":"CUSTOM","event_action":"BLOCK","event_severity":"HIGH","waf_action":"BLOCK","rule_id":"900100","domain":"www.example.com","property":"shop","client_ip":"192.0.2.{}","client_connection_remote_ip":"192.0.2.1","client_browser":"curl","client_country_code":"DE","client_asn":3320,"request_path":"/r{round}/{i}/{j}"}}"#,
                            j % 250
                        ) + "\n"
                    })
                    .collect();
                // Plain, gzip and zstd bodies in turn: each encoding goes the same durable way.
                let post = |kind: &str, body: &str| {
                    let request =
                        client.request("POST", &format!("/ingest/{kind}")).set("Content-Type", "application/x-ndjson");
                    let sent = match i % 3 {
                        0 => request.send_string(body),
                        1 => {
                            use std::io::Write;
                            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                            e.write_all(body.as_bytes()).expect("gzip");
                            request.set("Content-Encoding", "gzip").send_bytes(&e.finish().expect("gzip"))
                        }
                        _ => request
                            .set("Content-Encoding", "zstd")
                            .send_bytes(&zstd::encode_all(body.as_bytes(), 3).expect("zstd")),
                    };
                    let acknowledged = sent.map(|r| r.into_json::<Value>());
                    if let Ok(Ok(reply)) = &acknowledged {
                        assert_eq!(reply["accepted"], 50, "{reply}");
                    }
                    matches!(acknowledged, Ok(Ok(_)))
                };
                if post("accesslogs", &batch) {
                    hits += 150;
                }
                if post("securityevents", &events) {
                    security_events += 50;
                    progress[3].fetch_add(1, Ordering::Relaxed);
                }
            }
            (hits, security_events)
        })
    };
    let ingest = ingest.join().expect("ingest writer");
    Acknowledged {
        users: users.join().expect("user writer"),
        configs: configs.join().expect("config writer"),
        entries: entries.join().expect("entry writer"),
        hits: ingest.0,
        security_events: ingest.1,
    }
}

#[test]
fn every_acknowledged_write_survives_sigkill() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data_dir = dir.path().join("data");
    let created = Command::new(env!("CARGO_BIN_EXE_edge-server"))
        .args(["customer", "add", "acme", "--admin", "alice", "--data-dir"])
        .arg(&data_dir)
        .env("EDGE_ADMIN_PASSWORD", PASSWORD)
        .output()
        .expect("running customer add");
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));

    // Fixtures: a property to update and a list to fill.
    let server = Server::start(&data_dir);
    let client = Client::login(&server.base);
    client
        .request("POST", "/properties")
        .send_json(json!({"name": "shop", "host_patterns": ["www.example.com"]}))
        .expect("creating the property");
    let list: Value = client
        .request("POST", "/config/networklists")
        .send_json(json!({"name": "durable", "type": "IP", "description": "", "list": []}))
        .expect("creating the list")
        .into_json()
        .expect("list body");
    let list_id = list["id"].as_str().expect("list id").to_string();

    let mut acked = Acknowledged::default();
    let mut server = Some(server);
    for round in 0..ROUNDS {
        let running = server.take().unwrap_or_else(|| Server::start(&data_dir));
        let client = Client::login(&running.base);
        let stop = Arc::new(AtomicBool::new(false));
        let progress: Progress = Arc::default();
        let writers = {
            let (client, stop, list_id, progress) = (client.clone(), stop.clone(), list_id.clone(), progress.clone());
            thread::spawn(move || write_until(&client, round, &list_id, &stop, &progress))
        };
        // Let the writes flow (each writer acknowledged a few times, more in each round, so that the kill
        // comes at another point of their work), then kill the server under them; the writers stop at the
        // first refused call.
        let deadline = Instant::now() + Duration::from_secs(120);
        while progress.iter().any(|n| n.load(Ordering::Relaxed) < 3 + 2 * round) {
            assert!(Instant::now() < deadline, "round {round}: the writers were acknowledged: {progress:?}");
            thread::sleep(Duration::from_millis(20));
        }
        running.kill();
        stop.store(true, Ordering::Relaxed);
        let round_acked = writers.join().expect("writers");
        assert!(
            !round_acked.users.is_empty()
                && !round_acked.configs.is_empty()
                && !round_acked.entries.is_empty()
                && round_acked.hits > 0
                && round_acked.security_events > 0,
            "round {round}: every writer had writes acknowledged before the kill"
        );
        acked.users.extend(round_acked.users);
        acked.configs.extend(round_acked.configs);
        acked.entries.extend(round_acked.entries);
        acked.hits += round_acked.hits;
        acked.security_events += round_acked.security_events;
    }

    eprintln!(
        "acknowledged before the kills: {} users, {} configuration versions, {} list entries, {} hits, {} security events",
        acked.users.len(),
        acked.configs.len(),
        acked.entries.len(),
        acked.hits,
        acked.security_events
    );
    let server = Server::start(&data_dir);
    let client = Client::login(&server.base);

    let names = all_items(&client, "/users", "username");
    for username in &acked.users {
        assert!(names.contains(username), "acknowledged user {username} is there");
    }

    let config = client.get("/properties/shop/config");
    let (last_version, _) = acked.configs.last().expect("configuration updates");
    assert!(config["version"].as_u64().expect("version") >= *last_version, "the last acknowledged version is kept");
    for (version, etag) in &acked.configs {
        let kept = client.get(&format!("/properties/shop/config/versions/{version}"));
        assert_eq!(kept["etag"].as_str(), Some(etag.as_str()), "version {version} is the acknowledged one");
    }

    let stored = all_items(&client, &format!("/config/networklists/{list_id}/entries"), "entry");
    for entry in &acked.entries {
        assert!(stored.contains(entry), "acknowledged entry {entry} is there");
    }

    let (_, start, end) = traffic_hour();
    let stats = client.get(&format!("/stats/data?starttime={start}&endtime={end}&metrics=hits&granularity=hour"));
    let stored_hits: u64 =
        stats["rows"].as_array().expect("rows").iter().filter_map(|r| r.as_array()?.last()?.as_u64()).sum();
    // Batches in flight at the kill may have been stored without an answer: at least, never fewer.
    assert!(stored_hits >= acked.hits, "stored {stored_hits} hits, acknowledged {}", acked.hits);
    let events = client
        .get(&format!("/stats/security/events/data?starttime={start}&endtime={end}&dimensions=request_path&limit=1"));
    let stored_events = events["total_results"].as_u64().expect("total_results");
    let waf = client
        .get(&format!("/stats/security/waf/trends/data?starttime={start}&endtime={end}&granularity=hour&metrics=hits"));
    let counted: u64 =
        waf["rows"].as_array().expect("rows").iter().filter_map(|r| r.as_array()?.last()?.as_u64()).sum();
    assert!(
        stored_events >= acked.security_events,
        "stored {stored_events} events, acknowledged {}",
        acked.security_events
    );
    assert_eq!(counted, stored_events, "the WAF trend counts every stored event");
    eprintln!(
        "after the restart: {} users, {} entries, {stored_hits} hits, {stored_events} security events",
        names.len(),
        stored.len()
    );

    let integrity = integrity_check(&data_dir.join("edge.db"));
    assert_eq!(integrity, "ok");
    server.kill();
}

/// The `field` of every item of a paged collection.
fn all_items(client: &Client, path: &str, field: &str) -> std::collections::HashSet<String> {
    let mut found = std::collections::HashSet::new();
    for page in 1.. {
        let reply = client.get(&format!("{path}?count=1000&page={page}"));
        let items = reply["items"].as_array().unwrap_or_else(|| panic!("{path}: items in {reply}"));
        found.extend(items.iter().filter_map(|item| item[field].as_str().map(str::to_string)));
        if !reply["has_more"].as_bool().unwrap_or(false) {
            break;
        }
    }
    found
}

fn integrity_check(db: &Path) -> String {
    use sqlx::{ConnectOptions, Connection, Row, sqlite::SqliteConnectOptions};
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    runtime.block_on(async {
        let mut conn =
            SqliteConnectOptions::new().filename(db).read_only(true).connect().await.expect("opening the database");
        let row = sqlx::query("PRAGMA integrity_check").fetch_one(&mut conn).await.expect("integrity check");
        let result: String = row.get(0);
        conn.close().await.ok();
        result
    })
}
