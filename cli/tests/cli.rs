//! `edge` against a real server: the binary as a user runs it, a server on a free loopback port with a data dir
//! of its own (the real clock: purges and deployments take their seconds). A deploy's purge with a token limited
//! to `purge`, and that token refused a list change; a list synced from a file with a dry run first; a
//! configuration read, changed and saved, then a conflicting save refused with its fields; exit codes and JSON.

use std::{
    io::Write,
    net::SocketAddr,
    process::{Command, Output, Stdio},
};

use edge_server::{AppState, Server, Settings, admin};
use serde_json::{Value, json};

const PASSWORD: &str = "correct-horse-battery";

/// A server with customer `acme` (administrator `alice`) and property `shop` serving `www.shop.example`.
struct Fixture {
    server: Option<Server>,
    addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl Fixture {
    async fn start() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let static_dir = dir.path().join("dist");
        std::fs::create_dir_all(&static_dir).unwrap();
        let mut settings = Settings::new(dir.path().join("data"), static_dir);
        settings.login_slowdown = std::time::Duration::from_millis(1);
        let state = AppState::open(settings).await.unwrap();
        admin::add_customer(&state, "acme", "alice", PASSWORD).await.unwrap();
        let server = Server::start(state, "127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = server.addr;
        let f = Fixture { server: Some(server), addr, dir };
        let property = json!({"name": "shop", "host_patterns": ["www.shop.example"]});
        assert_eq!(f.admin("POST", "/properties", Some(property)).await.0, 201);
        f
    }

    fn url(&self) -> String {
        format!("http://{}/acme", self.addr)
    }

    /// A call of the API as alice (HTTP Basic), off the runtime's threads.
    async fn admin(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let url = format!("http://{}/acme/v1{path}", self.addr);
        let method = method.to_string();
        tokio::task::spawn_blocking(move || {
            let auth = format!("Basic {}", base64_encode(&format!("alice:{PASSWORD}")));
            let request = ureq::request(&method, &url).set("Authorization", &auth);
            let result = match body {
                Some(b) => request.send_json(b),
                None => request.call(),
            };
            let response = match result {
                Ok(r) | Err(ureq::Error::Status(_, r)) => r,
                Err(e) => panic!("{e}"),
            };
            let status = response.status();
            (status, response.into_json().unwrap_or(Value::Null))
        })
        .await
        .unwrap()
    }

    /// Runs `edge ARGS` with `env` (and EDGE_URL), `stdin` fed in; waits off the runtime's threads.
    async fn edge(&self, args: &[&str], env: &[(&str, &str)], stdin: &str) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_edge"));
        cmd.args(args)
            .env_clear()
            .env("EDGE_URL", self.url())
            .env("HOME", self.dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let stdin = stdin.to_string();
        tokio::task::spawn_blocking(move || {
            let mut child = cmd.spawn().unwrap();
            child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
            child.wait_with_output().unwrap()
        })
        .await
        .unwrap()
    }

    /// A token of alice with `scopes`, made with the command line as a person does.
    async fn token(&self, name: &str, scopes: &[&str]) -> String {
        let mut args = vec!["--user", "alice", "tokens", "create", "--name", name];
        for s in scopes {
            args.extend(["--scope", s]);
        }
        let out = self.edge(&args, &[("EDGE_PASSWORD", PASSWORD)], "").await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let secret = text(&out.stdout).trim().to_string();
        assert!(edge_api::tokens::is_well_formed(&secret), "stdout is the secret alone: {secret:?}");
        assert!(text(&out.stderr).contains("shown this once"), "{}", text(&out.stderr));
        secret
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    async fn stop(mut self) {
        if let Some(s) = self.server.take() {
            s.stop().await.unwrap();
        }
    }
}

fn base64_encode(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deploy_purges_with_a_purge_only_token_which_is_refused_a_list_change() {
    let f = Fixture::start().await;
    let token = f.token("deploy", &["purge"]).await;
    let env = [("EDGE_TOKEN", token.as_str())];
    let out = f.edge(&["purge", "https://www.shop.example/app.js", "www.shop.example/app.css"], &env, "").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Purged 2 URLs in 1 request: transaction 1 done\n");

    // 1,200 URLs from a file: three requests, paced under the limit of 2 a second, every one waited for.
    let urls: String = (0..1200).map(|i| format!("https://www.shop.example/assets/{i}.js\n")).collect();
    std::fs::write(f.path("urls.txt"), format!("# changed by the deploy\n\n{urls}")).unwrap();
    let started = std::time::Instant::now();
    let out = f.edge(&["purge", "--file", &f.path("urls.txt"), "--json"], &env, "").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((answer["urls"].clone(), answer["requests"].clone()), (json!(1200), json!(3)));
    let statuses: Vec<&str> =
        answer["transactions"].as_array().unwrap().iter().map(|t| t["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["SUCCESS", "SUCCESS", "SUCCESS"]);
    assert!(started.elapsed().as_millis() >= 1100, "paced: {:?}", started.elapsed());

    // A URL of a host the customer does not serve: refused, naming the file's line.
    std::fs::write(f.path("bad.txt"), "www.shop.example/ok\nwww.elsewhere.example/x\n").unwrap();
    let out = f.edge(&["purge", "-f", &f.path("bad.txt")], &env, "").await;
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("bad.txt:2"), "{}", text(&out.stderr));

    // The same token may not touch a network list: 403 naming the scope, exit code 4.
    let list = json!({"name": "blocklist", "type": "IP", "list": ["192.0.2.1"]});
    let (status, created) = f.admin("POST", "/config/networklists", Some(list)).await;
    assert_eq!(status, 201);
    std::fs::write(f.path("feed.txt"), "192.0.2.9\n").unwrap();
    let out = f.edge(&["lists", "sync", "blocklist", &f.path("feed.txt")], &env, "").await;
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("lacks the scope lists:read"), "{}", text(&out.stderr));
    let entries = format!("http://{}{}", f.addr, created["entries_uri"].as_str().unwrap());
    let refused = tokio::task::spawn_blocking(move || {
        match ureq::post(&entries)
            .set("Authorization", &format!("Bearer {token}"))
            .send_json(json!([{"value": "192.0.2.9"}]))
        {
            Err(ureq::Error::Status(code, r)) => (code, r.into_json::<Value>().unwrap()),
            other => panic!("{other:?}"),
        }
    })
    .await
    .unwrap();
    assert_eq!(refused.0, 403);
    assert_eq!(refused.1["type"], "insufficient_scope");
    assert_eq!(refused.1["details"][0]["message"], "missing scope: lists:write");
    f.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_is_synced_with_a_file_after_a_dry_run() {
    let f = Fixture::start().await;
    let list = json!({"name": "blocklist", "type": "IP", "list": ["192.0.2.1", "192.0.2.2"]});
    assert_eq!(f.admin("POST", "/config/networklists", Some(list)).await.0, 201);
    let token = f.token("feed", &["lists:read", "lists:write", "tasks:read"]).await;
    let env = [("EDGE_TOKEN", token.as_str())];
    // 6,000 addresses (two calls of at most 5,000), one kept, one gone.
    let mut feed = String::from("# bad addresses\n192.0.2.2\n");
    for i in 0..6000 {
        feed.push_str(&format!("10.{}.{}.1\n", i / 250, i % 250));
    }
    std::fs::write(f.path("feed.txt"), &feed).unwrap();
    let out = f.edge(&["lists", "sync", "blocklist", &f.path("feed.txt"), "--dry-run"], &env, "").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.starts_with("blocklist: 2 entries now, 6001 in "), "{shown}");
    assert!(
        shown.contains(": +6000 -1\n")
            && shown.contains("- 192.0.2.1\n")
            && shown.ends_with("Dry run: nothing was changed.\n"),
        "{shown}"
    );
    let out = f.edge(&["lists", "export", "blocklist"], &env, "").await;
    assert_eq!(text(&out.stdout), "192.0.2.1\n192.0.2.2\n", "the dry run changed nothing");

    let out = f.edge(&["lists", "sync", "blocklist", "-", "--json"], &env, &feed).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((answer["entries_after"].clone(), answer["removed"].clone()), (json!(6001), json!(["192.0.2.1"])));
    let tasks: Vec<&str> = answer["tasks"].as_array().unwrap().iter().map(|t| t["status"].as_str().unwrap()).collect();
    assert_eq!(tasks, ["COMPLETED", "COMPLETED", "COMPLETED"], "two additions and the removal, each deployed");
    let out = f.edge(&["lists", "export", "blocklist", &f.path("now.txt")], &env, "").await;
    assert_eq!(out.status.code(), Some(0));
    let now = std::fs::read_to_string(f.path("now.txt")).unwrap();
    assert_eq!(now.lines().count(), 6001);
    // Again: nothing to do.
    let out = f.edge(&["lists", "sync", "blocklist", &f.path("now.txt")], &env, "").await;
    assert!(text(&out.stdout).ends_with("+0 -0\nNothing to change.\n"), "{}", text(&out.stdout));
    // A line that is no entry of the list refuses the whole file, naming the line.
    std::fs::write(f.path("bad.txt"), "192.0.2.7\n10.1.2.3/8\n").unwrap();
    let out = f.edge(&["lists", "sync", "blocklist", &f.path("bad.txt")], &env, "").await;
    assert_eq!(out.status.code(), Some(7));
    assert!(
        text(&out.stderr).contains("bad.txt:2: \"10.1.2.3/8\" has host bits set: did you mean 10.0.0.0/8?"),
        "{}",
        text(&out.stderr)
    );
    f.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configuration_goes_round_trip_and_a_conflicting_save_names_the_fields() {
    let f = Fixture::start().await;
    let token = f.token("config", &["config:read", "config:write"]).await;
    let env = [("EDGE_TOKEN", token.as_str())];
    let get = |file: &'static str| {
        let f = &f;
        async move {
            let out = f.edge(&["config", "get", "shop"], &env, "").await;
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
            let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
            std::fs::write(f.path(file), &out.stdout).unwrap();
            doc
        }
    };
    let mut doc = get("shop.json").await;
    assert_eq!(doc["version"], 1);
    doc["config"]["origins"] =
        json!([{"id": "main", "name": "main", "host": "origin.shop.example", "port": 443, "protocol": "https"}]);
    std::fs::write(f.path("shop.json"), doc.to_string()).unwrap();
    let out = f.edge(&["config", "put", "shop", &f.path("shop.json"), "--comment", "an origin"], &env, "").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("Saved shop: version 2 (etag "), "{}", text(&out.stdout));

    // Two people read version 2; the first saves port 8443, the second port 9443.
    let mut mine = get("mine.json").await;
    let mut theirs = get("theirs.json").await;
    theirs["config"]["origins"][0]["port"] = json!(8443);
    std::fs::write(f.path("theirs.json"), theirs.to_string()).unwrap();
    let out = f.edge(&["config", "put", "shop", &f.path("theirs.json")], &env, "").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    mine["config"]["origins"][0]["port"] = json!(9443);
    std::fs::write(f.path("mine.json"), mine.to_string()).unwrap();
    let out = f.edge(&["config", "put", "shop", &f.path("mine.json")], &env, "").await;
    assert_eq!(out.status.code(), Some(6), "{}", text(&out.stderr));
    let said = text(&out.stderr);
    assert!(
        said.contains("shop was changed since version 2 was read (now version 3 by alice): 1 field changed by both"),
        "{said}"
    );
    assert!(said.contains("$.origins[id=main].port: yours 9443, theirs 8443 (was 443)"), "{said}");
    let (_, now) = f.admin("GET", "/properties/shop/config", None).await;
    assert_eq!(now["config"]["origins"][0]["port"], 8443, "nothing of the refused save");
    // In JSON, the error on stderr is a document.
    let out = f.edge(&["config", "put", "shop", &f.path("mine.json"), "--json"], &env, "").await;
    let error: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!((error["error"]["exit_code"].clone(), error["error"]["status"].clone()), (json!(6), json!(409)));
    f.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statistics_tokens_and_exit_codes() {
    let f = Fixture::start().await;
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S").to_string();
    let lines: String = ["DE", "DE", "FR"]
        .iter()
        .map(|c| {
            json!({"timestamp": now, "domain": "www.shop.example", "property": "shop", "http_status_code": 200, "scheme": 2,
                   "request_url": "/a", "country_code": c, "country": c, "last_mile_bandwidth_bytes": 100})
            .to_string() + "\n"
        })
        .collect();
    let url = format!("http://{}/acme/v1/ingest/accesslogs", f.addr);
    let ingested = tokio::task::spawn_blocking(move || {
        ureq::post(&url)
            .set("Authorization", &format!("Basic {}", base64_encode(&format!("alice:{PASSWORD}"))))
            .set("Content-Type", "application/x-ndjson")
            .send_string(&lines)
            .unwrap()
            .into_json::<Value>()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(ingested["accepted"], 3, "{ingested}");
    let token = f.token("report", &["stats:read"]).await;
    let env = [("EDGE_TOKEN", token.as_str())];
    let args = [
        "stats",
        "delivery",
        "--dimensions",
        "country",
        "--metrics",
        "hits,last_mile_bandwidth_bytes",
        "--granularity",
        "day",
        "--last",
        "2d",
        "--sortby",
        "-hits",
        "--format",
        "csv",
    ];
    let out = f.edge(&args, &env, "").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let csv = text(&out.stdout);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "starttime,endtime,country,hits,last_mile_bandwidth_bytes");
    assert!(lines[1].ends_with(",DE,2,200") && lines[2].ends_with(",FR,1,100"), "{csv}");
    let out = f.edge(&["stats", "events", "--json"], &env, "").await;
    assert_eq!(out.status.code(), Some(4), "security:read is another scope: {}", text(&out.stderr));

    // Tokens: listed, rolled, revoked — and a revoked one is 401, exit code 3.
    let person = [("EDGE_PASSWORD", PASSWORD)];
    let out = f.edge(&["--user", "alice", "tokens", "list", "--json"], &person, "").await;
    let page: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = page["items"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(page["items"][0]["last_used_from"], "127.0.0.1");
    let out = f.edge(&["--user", "alice", "tokens", "roll", &id], &person, "").await;
    let rolled = text(&out.stdout).trim().to_string();
    assert!(edge_api::tokens::is_well_formed(&rolled) && rolled != token);
    let out = f.edge(&["stats", "delivery", "--metrics", "hits"], &env, "").await;
    assert_eq!(out.status.code(), Some(3), "the old secret: {}", text(&out.stderr));
    let out = f.edge(&["--user", "alice", "tokens", "revoke", &id], &person, "").await;
    assert_eq!(out.status.code(), Some(0));
    let out = f.edge(&["stats", "delivery", "--metrics", "hits"], &[("EDGE_TOKEN", &rolled)], "").await;
    assert_eq!(out.status.code(), Some(3));
    // A token cannot manage tokens; a wrong password is 401; nothing listens: 9; no such list: 5; no server: 2.
    let out = f.edge(&["tokens", "list"], &[("EDGE_TOKEN", &rolled)], "").await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let out = f.edge(&["--user", "alice", "tokens", "list"], &[("EDGE_PASSWORD", "wrong password!!")], "").await;
    assert_eq!(out.status.code(), Some(3));
    let lists = f.token("lists", &["lists:read"]).await;
    let out = f.edge(&["lists", "show", "nothing"], &[("EDGE_TOKEN", &lists)], "").await;
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    let out = f.edge(&["lists", "show", "x", "--url", "http://127.0.0.1:9/acme"], &[("EDGE_TOKEN", &lists)], "").await;
    assert_eq!(out.status.code(), Some(9));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_edge"));
    let out = cmd.args(["lists", "show", "x"]).env_clear().env("HOME", f.dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("EDGE_URL"), "{}", text(&out.stderr));
    // A profile file instead of the environment.
    std::fs::write(f.path("edge.conf"), format!("[ci]\nurl = {}\ntoken = {lists}\n", f.url())).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_edge"));
    let out = cmd
        .args(["--config", &f.path("edge.conf"), "--profile", "ci", "lists", "show", "nothing"])
        .env_clear()
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    f.stop().await;
}

/// The next line, waiting at most 15 s.
async fn next(rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>) -> Option<String> {
    tokio::time::timeout(std::time::Duration::from_secs(15), rx.recv()).await.ok().flatten()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn security_events_are_printed_and_followed_as_they_arrive() {
    let f = Fixture::start().await;
    let ingest = |domains: &'static [&'static str]| {
        let url = format!("http://{}/acme/v1/ingest/securityevents", f.addr);
        async move {
            let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S").to_string();
            let lines: String = domains
                .iter()
                .map(|d| {
                    json!({"timestamp": now, "source": "waf", "domain": d, "event_action": "BLOCK", "waf_action": "BLOCK",
                           "rule_id": "942100", "client_ip": "192.0.2.7"})
                    .to_string()
                        + "\n"
                })
                .collect();
            tokio::task::spawn_blocking(move || {
                let reply = ureq::post(&url)
                    .set("Authorization", &format!("Basic {}", base64_encode(&format!("alice:{PASSWORD}"))))
                    .set("Content-Type", "application/x-ndjson")
                    .send_string(&lines)
                    .unwrap()
                    .into_json::<Value>()
                    .unwrap();
                assert_eq!(reply["accepted"], domains.len(), "{reply}");
            })
            .await
            .unwrap();
        }
    };
    ingest(&["a.shop.example", "a.shop.example"]).await;
    let token = f.token("siem", &["security:read"]).await;
    let out = f.edge(&["events", "--since", "10m", "--json"], &[("EDGE_TOKEN", &token)], "").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events: Vec<Value> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events.len(), 2, "two alike events are two lines: {events:?}");
    assert_eq!(events[0]["domain"], "a.shop.example");

    // Following: the two already there, then one that arrives while it runs, each once.
    let mut child = Command::new(env!("CARGO_BIN_EXE_edge"))
        .args(["events", "--follow", "--interval", "1", "--since", "10m", "--json"])
        .env_clear()
        .env("EDGE_URL", f.url())
        .env("EDGE_TOKEN", &token)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    for _ in 0..2 {
        seen.push(next(&mut rx).await.expect("an event"));
    }
    // Each poll reads again from the newest time it has printed (events of one second may come in two polls),
    // and prints in order: an event printed twice would come before the next new one. So a new event after
    // each, and the lines are exactly the events, each once.
    ingest(&["b.shop.example"]).await;
    seen.push(next(&mut rx).await.expect("the new event"));
    ingest(&["c.shop.example"]).await;
    seen.push(next(&mut rx).await.expect("another new event"));
    child.kill().unwrap();
    child.wait().unwrap();
    let domains: Vec<String> = seen
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["domain"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(domains, ["a.shop.example", "a.shop.example", "b.shop.example", "c.shop.example"], "nothing twice");
    f.stop().await;
}
