//! Replicas: two `edge-server` processes on one PostgreSQL (a throwaway cluster of Debian's PostgreSQL) behind a
//! real load balancer (Debian's HAProxy, or nginx, round-robin, with a config of its own on a free port). Every
//! answer that depends on state is the same whichever replica gives it — sessions, users, compare-and-swap,
//! the purge rate limit, task progress, login lockouts — a replica killed in the middle of writes loses nothing
//! it acknowledged while the other keeps answering, and a database that goes away and comes back gives 503
//! `database_unavailable` meanwhile and nothing to do afterwards.

use std::{
    os::unix::fs::PermissionsExt,
    path::Path,
    process::Command,
    sync::{
        Arc, Barrier, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use edge_cluster::{Cluster, ClusterSpec};
use serde_json::{Value, json};

const PASSWORD: &str = "replicated-password-1";

/// PostgreSQL, two replicas (`a`, `b`) and the balancer in `dir`, with customer `acme` (admin `alice`).
fn start(dir: &Path) -> Cluster {
    // The postgres user (initdb runs as it when we are root) must reach the cluster's directory.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("opening the temp dir");
    let cluster = Cluster::start(&ClusterSpec {
        binary: env!("CARGO_BIN_EXE_edge-server").into(),
        dir: dir.to_path_buf(),
        postgres_dir: None,
        replicas: 2,
        listen: None,
        // Failed logins slow the next ones down: by little here, so that a lockout takes no time.
        server_args: vec!["--login-slowdown-ms".into(), "1".into()],
        env: vec![],
    })
    .expect("starting PostgreSQL, two replicas and a load balancer");
    let created = Command::new(env!("CARGO_BIN_EXE_edge-server"))
        .args(["customer", "add", "acme", "--admin", "alice", "--data-dir"])
        .arg(dir.join("cli"))
        .env("EDGE_DATABASE_URL", &cluster.database_url)
        .env("EDGE_ADMIN_PASSWORD", PASSWORD)
        .output()
        .expect("running customer add");
    assert!(created.status.success(), "customer add: {}", String::from_utf8_lossy(&created.stderr));
    cluster
}

/// An answer: its status, its Retry-After and its JSON body (Null when none).
#[derive(Debug, Clone)]
struct Reply {
    status: u16,
    retry_after: Option<String>,
    body: Value,
}

impl Reply {
    /// The error body's `type`.
    fn kind(&self) -> &str {
        self.body["type"].as_str().unwrap_or_default()
    }
}

/// A client of one server (a replica or the balancer), with a session cookie once logged in.
#[derive(Clone)]
struct Client {
    agent: ureq::Agent,
    base: String,
    cookie: Option<String>,
}

impl Client {
    fn new(base: &str) -> Client {
        let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(30)).redirects(0).build();
        Client { agent, base: base.to_string(), cookie: None }
    }

    /// Logs in as `user` of acme; the client now sends that session.
    fn login(base: &str, user: &str) -> Client {
        let mut client = Client::new(base);
        let reply = client.login_attempt(user, PASSWORD);
        assert_eq!(reply.status, 201, "login of {user} at {base}: {:?}", reply.body);
        client.cookie = Some(format!("authtoken={}", reply.body["id"].as_str().expect("session id")));
        client
    }

    fn login_attempt(&self, user: &str, password: &str) -> Reply {
        use base64::Engine;
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        let request =
            self.agent.post(&format!("{}/acme/v1/sessions", self.base)).set("Authorization", &format!("Basic {basic}"));
        reply(request.call()).expect("login attempt")
    }

    /// The same session, sent to another server.
    fn at(&self, base: &str) -> Client {
        Client { base: base.to_string(), ..self.clone() }
    }

    /// A request for `path` under /acme/v1 (or the root when it starts with `//`).
    fn request(&self, method: &str, path: &str) -> ureq::Request {
        let url = match path.strip_prefix('/').and_then(|p| p.strip_prefix('/')) {
            Some(root) => format!("{}/{root}", self.base),
            None => format!("{}/acme/v1{path}", self.base),
        };
        let request = self.agent.request(method, &url);
        match &self.cookie {
            Some(cookie) => request.set("Cookie", cookie),
            None => request,
        }
    }

    /// The answer, or None when there was none (the connection failed).
    fn send(&self, method: &str, path: &str, body: Option<&Value>) -> Option<Reply> {
        let request = self.request(method, path);
        reply(match body {
            Some(body) => request.send_json(body.clone()),
            None => request.call(),
        })
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Reply {
        self.send(method, path, body).unwrap_or_else(|| panic!("{method} {}{path}: no answer", self.base))
    }

    fn get(&self, path: &str) -> Reply {
        self.call("GET", path, None)
    }
}

fn reply(result: Result<ureq::Response, ureq::Error>) -> Option<Reply> {
    match result {
        Ok(r) | Err(ureq::Error::Status(_, r)) => {
            let status = r.status();
            let retry_after = r.header("Retry-After").map(str::to_string);
            let body = r.into_json().unwrap_or(Value::Null);
            Some(Reply { status, retry_after, body })
        }
        Err(ureq::Error::Transport(_)) => None,
    }
}

fn new_user(username: &str) -> Value {
    json!({"username": username, "password": PASSWORD, "full_name": "Replicated", "email": format!("{username}@example.com"), "role": {"id": "viewer"}})
}

/// The `field` of every item of a paged collection.
fn all_items(client: &Client, path: &str, field: &str) -> std::collections::HashSet<String> {
    let mut found = std::collections::HashSet::new();
    for page in 1.. {
        let reply = client.get(&format!("{path}?count=1000&page={page}"));
        let items = reply.body["items"].as_array().unwrap_or_else(|| panic!("{path}: items in {:?}", reply.body));
        found.extend(items.iter().filter_map(|item| item[field].as_str().map(str::to_string)));
        if !reply.body["has_more"].as_bool().unwrap_or(false) {
            break;
        }
    }
    found
}

/// Runs `f` on every client at the same moment (as far as threads go); their answers in the clients' order.
fn at_once(clients: &[Client], f: impl Fn(&Client) -> Reply + Send + Sync + 'static) -> Vec<Reply> {
    let f = Arc::new(f);
    let barrier = Arc::new(Barrier::new(clients.len()));
    let threads: Vec<_> = clients
        .iter()
        .cloned()
        .map(|client| {
            let (f, barrier) = (f.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                f(&client)
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().expect("a request thread")).collect()
}

fn sorted_statuses(replies: &[Reply]) -> Vec<u16> {
    let mut statuses: Vec<u16> = replies.iter().map(|r| r.status).collect();
    statuses.sort();
    statuses
}

#[test]
fn two_replicas_answer_alike_directly_and_through_the_balancer() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cluster = start(dir.path());
    let (a, b, lb) = (cluster.replicas[0].url(), cluster.replicas[1].url(), cluster.url());
    let alice_a = Client::login(&a, "alice");
    let alice_b = alice_a.at(&b);
    let alice_lb = alice_a.at(&lb);

    // The purge rate limit (2 a second per customer) counts over both replicas: three purges at once, two on A
    // and one on B — each replica alone would take its share.
    let property =
        alice_a.call("POST", "/properties", Some(&json!({"name": "shop", "host_patterns": ["www.shop.example"]})));
    assert_eq!(property.status, 201, "{:?}", property.body);
    let purge = json!({"purge_request": {"action": "PURGE", "uris": [{"uri_pattern": "www.shop.example/a", "match_mode": "EXACT_LITERAL"}]}});
    let replies = at_once(&[alice_a.clone(), alice_b.clone(), alice_a.clone()], move |c| {
        c.call("POST", "/cache/purge", Some(&purge))
    });
    assert_eq!(sorted_statuses(&replies), [303, 303, 429], "{replies:?}");
    let refused = replies.iter().find(|r| r.status == 429).expect("a refused purge");
    assert_eq!((refused.body["code"].as_u64(), refused.retry_after.as_deref()), (Some(429), Some("1")));

    // A task started on one replica progresses when read from the other: its progress comes from the shared
    // record and the fleet's schedule, not from the replica that started it.
    let accepted = replies.iter().find(|r| r.status == 303).expect("an accepted purge");
    let transaction = format!("/transactions/{}", accepted.body["transaction_id"].as_i64().expect("transaction id"));
    let first = alice_b.get(&transaction);
    assert_eq!(first.status, 200, "{:?}", first.body);
    let first_percent = first.body["transaction_response"]["percent_received_responses"].as_u64().expect("percent");
    assert!(first_percent < 100, "{:?}", first.body);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let read = alice_b.get(&transaction).body;
        if read["transaction_response"]["transaction_status"] == "SUCCESS" {
            assert_eq!(read["transaction_response"]["percent_received_responses"], 100);
            break;
        }
        assert!(Instant::now() < deadline, "the purge did not complete as read from B: {read}");
        thread::sleep(Duration::from_millis(200));
    }
    // Both purges' tasks, as B lists them, complete.
    loop {
        let tasks = alice_b.get("/tasks").body;
        let purges: Vec<&Value> =
            tasks["items"].as_array().expect("tasks").iter().filter(|t| t["operation"] == "purge").collect();
        assert_eq!(purges.len(), 2, "{tasks}");
        if purges.iter().all(|t| t["progress"] == 100 && t["status"] == "COMPLETED") {
            break;
        }
        assert!(Instant::now() < deadline, "the purges' tasks did not complete as read from B: {tasks}");
        thread::sleep(Duration::from_millis(200));
    }

    // A user created on A is there on B and through the balancer.
    let created = alice_a.call("POST", "/users", Some(&new_user("bob")));
    assert_eq!(created.status, 201, "{:?}", created.body);
    let bob = format!("/users/{}", created.body["id"].as_str().expect("user id"));
    let read = alice_b.get(&bob);
    // (The API answers a user's address with a page of that one user.)
    assert_eq!((read.status, &read.body["items"][0]["username"]), (200, &json!("bob")), "{bob}: {read:?}");
    for _ in 0..4 {
        assert_eq!(alice_lb.get(&bob).status, 200);
    }

    // The same etag sent to both replicas at once: exactly one update wins, the other is told it is stale.
    for round in 0..3 {
        let current = alice_a.get("/properties/shop/config").body;
        let etag = current["etag"].as_str().expect("etag").to_string();
        let replies = at_once(&[alice_a.clone(), alice_b.clone()], move |c| {
            let mut config = current["config"].clone();
            config["cache_rules"] = json!([{"path_pattern": format!("/{}-{round}/*", c.base.rsplit(':').next().unwrap_or_default()), "ttl_seconds": 60}]);
            let request = c.request("PUT", "/properties/shop/config").set("If-Match", &etag);
            reply(request.send_json(json!({"config": config, "comment": "replicas"}))).expect("an answer")
        });
        assert_eq!(sorted_statuses(&replies), [200, 409], "round {round}: {replies:?}");
        assert!(replies.iter().any(|r| r.kind() == "stale_etag"), "{replies:?}");
        assert_eq!(alice_b.get("/properties/shop/config").body["version"], round + 2, "one new version per round");
    }

    // A session created through the balancer works on both replicas; a logout on B ends it on A.
    let session = Client::login(&lb, "alice");
    for base in [&a, &b, &lb, &lb] {
        assert_eq!(session.at(base).get("/account").status, 200, "at {base}");
        assert_eq!(session.at(base).get("/sessions/current").status, 201, "at {base}");
    }
    assert_eq!(session.at(&b).call("DELETE", "/sessions/current", None).status, 204);
    for base in [&a, &b, &lb, &lb] {
        let reply = session.at(base).get("/account");
        assert_eq!((reply.status, reply.kind()), (401, "session_invalid"), "at {base}: {:?}", reply.body);
        let reply = session.at(base).get("/sessions/current");
        assert_eq!((reply.status, reply.kind()), (404, "not_found"), "at {base}: {:?}", reply.body);
    }

    // Failed logins on A and on B add up to one lockout of the username from this address: ten failures, five on
    // each replica, and then even the right password is refused everywhere (each replica alone saw five).
    for i in 0..10 {
        let replica = Client::new(if i % 2 == 0 { &a } else { &b });
        let reply = replica.login_attempt("bob", "wrong-password");
        assert_eq!(reply.status, 401, "failure {i}: {:?}", reply.body);
    }
    for base in [&a, &b, &lb] {
        let reply = Client::new(base).login_attempt("bob", PASSWORD);
        assert_eq!((reply.status, reply.kind()), (429, "too_many_requests"), "at {base}: {:?}", reply.body);
        assert!(reply.retry_after.is_some());
    }
    // The lock is bob's from this address only: alice still logs in on either replica.
    Client::login(&a, "alice");
    Client::login(&b, "alice");
}

/// What writers were told was stored.
/// Waits until `done` holds (checked every 20 ms), failing after a minute.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within a minute");
        thread::sleep(Duration::from_millis(20));
    }
}

#[derive(Default)]
struct Acknowledged {
    users: Vec<String>,
    entries: Vec<String>,
    /// Users acknowledged through the balancer after A was killed.
    after_kill: usize,
}

#[test]
fn a_replica_killed_in_the_middle_of_writes_loses_nothing_acknowledged_while_the_other_answers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cluster = start(dir.path());
    let (a, b, lb) = (cluster.replicas[0].url(), cluster.replicas[1].url(), cluster.url());
    let alice = Client::login(&lb, "alice");
    let list = alice.call(
        "POST",
        "/config/networklists",
        Some(&json!({"name": "replicated", "type": "IP", "description": "", "list": []})),
    );
    assert_eq!(list.status, 201, "{:?}", list.body);
    let entries_path = format!("/config/networklists/{}/entries", list.body["id"].as_str().expect("list id"));

    let stop = Arc::new(AtomicBool::new(false));
    let killed_at: Arc<Mutex<Option<Instant>>> = Arc::default();
    let acked = Arc::new(Mutex::new(Acknowledged::default()));
    let mut writers = Vec::new();
    // Users straight to A (until A stops answering), users and list entries through the balancer.
    for (name, client) in [("direct", alice.at(&a)), ("balanced", alice.clone())] {
        let (stop, acked, killed_at) = (stop.clone(), acked.clone(), killed_at.clone());
        writers.push(thread::spawn(move || {
            for i in 0.. {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let username = format!("{name}-{i}");
                match client.send("POST", "/users", Some(&new_user(&username))) {
                    Some(r) if r.status == 201 => {
                        let after = killed_at.lock().expect("kill time").is_some();
                        let mut acked = acked.lock().expect("acknowledged");
                        acked.users.push(username);
                        acked.after_kill += usize::from(after && name == "balanced");
                    }
                    None if name == "direct" => break,
                    _ => thread::sleep(Duration::from_millis(20)),
                }
            }
        }));
    }
    {
        let (stop, acked, client, path) = (stop.clone(), acked.clone(), alice.clone(), entries_path.clone());
        writers.push(thread::spawn(move || {
            for i in 0u32.. {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let entry = std::net::Ipv4Addr::from(0x0a00_0000 + i).to_string();
                match client.send("POST", &path, Some(&json!([{"entry": entry}]))) {
                    Some(r) if r.status == 200 => acked.lock().expect("acknowledged").entries.push(entry),
                    _ => thread::sleep(Duration::from_millis(20)),
                }
            }
        }));
    }
    // B is read all along; once A is gone, every one of these must still be answered.
    let reads_after_kill = Arc::new(AtomicUsize::new(0));
    let reader = {
        let (stop, killed_at, client, counted) =
            (stop.clone(), killed_at.clone(), alice.at(&b), reads_after_kill.clone());
        thread::spawn(move || {
            let mut after_kill = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let reply = client.send("GET", "/account", None);
                if killed_at.lock().expect("kill time").is_some() {
                    after_kill.push(reply.map(|r| r.status));
                    counted.fetch_add(1, Ordering::Relaxed);
                }
                thread::sleep(Duration::from_millis(20));
            }
            after_kill
        })
    };

    // Writes of both kinds acknowledged by both ways, then A killed under them.
    wait_until("writes acknowledged before the kill", || {
        let acked = acked.lock().expect("acknowledged");
        acked.users.len() >= 10 && acked.entries.len() >= 5
    });
    let before_kill = acked.lock().expect("acknowledged").users.len();
    cluster.replicas[0].kill();
    *killed_at.lock().expect("kill time") = Some(Instant::now());
    // Until the balancer has taken A out (two failed checks a second apart) and gone on with B: writes through
    // it acknowledged after the kill, and B read all along.
    wait_until("writes through the balancer after the kill", || {
        acked.lock().expect("acknowledged").after_kill >= 10 && reads_after_kill.load(Ordering::Relaxed) >= 20
    });
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().expect("a writer");
    }
    let b_after_kill = reader.join().expect("the reader");

    let acked = acked.lock().expect("acknowledged");
    assert!(before_kill > 0, "writes were acknowledged before the kill");
    assert!(acked.after_kill > 0, "writes through the balancer went on after the kill");
    assert!(!b_after_kill.is_empty() && b_after_kill.iter().all(|s| *s == Some(200)), "B answered: {b_after_kill:?}");
    eprintln!(
        "acknowledged: {} users ({} before the kill, {} through the balancer after it), {} list entries",
        acked.users.len(),
        before_kill,
        acked.after_kill,
        acked.entries.len()
    );

    let on_b = alice.at(&b);
    let users = all_items(&on_b, "/users", "username");
    for username in &acked.users {
        assert!(users.contains(username), "acknowledged user {username} is there");
    }
    let entries = all_items(&on_b, &entries_path, "entry");
    for entry in &acked.entries {
        assert!(entries.contains(entry), "acknowledged entry {entry} is there");
    }

    // A started again joins without anything to catch up on.
    cluster.replicas[0].restart().expect("starting A again");
    cluster.replicas[0].wait_ready(Duration::from_secs(120)).expect("A serves again");
    assert_eq!(all_items(&alice.at(&a), "/users", "username"), users);
}

#[test]
fn a_database_stopped_under_load_gives_503_database_unavailable_and_the_replicas_recover_by_themselves() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cluster = start(dir.path());
    let (a, b, lb) = (cluster.replicas[0].url(), cluster.replicas[1].url(), cluster.url());
    let alice = Client::login(&lb, "alice");

    // Load on both replicas: reads of the account (each reads the session) and user creations.
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicUsize::new(0));
    let load: Vec<_> = [&a, &b, &a, &b]
        .into_iter()
        .enumerate()
        .map(|(n, base)| {
            let (stop, client, answered) = (stop.clone(), alice.at(base), answered.clone());
            thread::spawn(move || {
                let (mut replies, mut acked) = (Vec::new(), Vec::new());
                for i in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let reply = if n < 2 {
                        client.send("GET", "/account", None)
                    } else {
                        let username = format!("load-{n}-{i}");
                        let reply = client.send("POST", "/users", Some(&new_user(&username)));
                        if reply.as_ref().is_some_and(|r| r.status == 201) {
                            acked.push(username);
                        }
                        reply
                    };
                    replies.push(reply);
                    answered.fetch_add(1, Ordering::Relaxed);
                    thread::sleep(Duration::from_millis(20));
                }
                (replies, acked)
            })
        })
        .collect();

    wait_until("the load answered", || answered.load(Ordering::Relaxed) >= 40);
    cluster.postgres.stop().expect("stopping PostgreSQL");
    // Meanwhile: each replica says it is not ready, and answers requests with the JSON error; the balancer,
    // with no replica ready, answers with its own JSON error.
    for base in [&a, &b] {
        wait_until("/readyz failing", || Client::new(base).get("//readyz").status == 503);
        let during = answered.load(Ordering::Relaxed);
        wait_until("the load answered while the database is away", || answered.load(Ordering::Relaxed) >= during + 8);
        let ready = Client::new(base).get("//readyz");
        assert_eq!(ready.status, 503, "{base}/readyz: {:?}", ready.body);
        let reply = alice.at(base).get("/account");
        assert_eq!((reply.status, reply.kind()), (503, "database_unavailable"), "{base}: {:?}", reply.body);
        assert_eq!(reply.retry_after.as_deref(), Some("2"));
    }
    let reply = alice.get("/account");
    assert_eq!(reply.status, 503, "through the balancer: {:?}", reply.body);
    assert!(["database_unavailable", "unavailable"].contains(&reply.kind()), "{:?}", reply.body);

    cluster.postgres.start_again().expect("starting PostgreSQL again");
    let started = Instant::now();
    for base in [&a, &b, &lb] {
        loop {
            let reply = alice.at(base).send("GET", "/account", None);
            if reply.as_ref().is_some_and(|r| r.status == 200) {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "{base} did not recover: {reply:?}");
            thread::sleep(Duration::from_millis(200));
        }
    }
    eprintln!("every replica and the balancer answered again {:?} after PostgreSQL started", started.elapsed());
    // The load goes on a little after the recovery (its answers are checked below with the others).
    let recovered = answered.load(Ordering::Relaxed);
    wait_until("the load answered after the recovery", || answered.load(Ordering::Relaxed) >= recovered + 8);
    stop.store(true, Ordering::Relaxed);

    let mut acked = Vec::new();
    let mut unavailable = 0;
    for thread in load {
        let (replies, users) = thread.join().expect("a load thread");
        acked.extend(users);
        for reply in replies {
            let reply = reply.expect("a replica answered every request");
            match reply.status {
                200 | 201 => {}
                503 => {
                    assert_eq!(reply.kind(), "database_unavailable", "{:?}", reply.body);
                    unavailable += 1;
                }
                other => panic!("{other} under load while the database was away: {:?}", reply.body),
            }
        }
    }
    assert!(unavailable > 0, "the load met the outage");
    let users = all_items(&alice.at(&b), "/users", "username");
    for username in &acked {
        assert!(users.contains(username), "acknowledged user {username} is there");
    }
}
