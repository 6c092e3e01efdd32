//! Alerting on replicas: two `edge-server` processes on one PostgreSQL (a throwaway cluster), both evaluating
//! every second (`--alert-interval-secs 1`) with the same statistics ingested into each, notify a firing rule
//! once: each round is claimed by one replica, and a rule's evaluation is written by compare-and-swap.

use crate::receivers;

use std::{os::unix::fs::PermissionsExt, process::Command, time::Duration};

use edge_cluster::{Cluster, ClusterSpec};
use serde_json::{Value, json};

const PASSWORD: &str = "replicated-password-1";
const MIN: i64 = 60_000;

fn call(agent: &ureq::Agent, method: &str, url: &str, body: Option<&Value>) -> (u16, Value) {
    use base64::Engine;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("alice:{PASSWORD}"));
    let request = agent.request(method, url).set("Authorization", &format!("Basic {basic}"));
    let result = match body {
        Some(b) => request.send_json(b.clone()),
        None => request.call(),
    };
    match result {
        Ok(r) | Err(ureq::Error::Status(_, r)) => (r.status(), r.into_json().unwrap_or(Value::Null)),
        Err(e) => panic!("{method} {url}: {e}"),
    }
}

fn ingest(agent: &ureq::Agent, base: &str, lines: &[Value]) {
    use base64::Engine;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("alice:{PASSWORD}"));
    let body = lines.iter().map(Value::to_string).collect::<Vec<_>>().join("\n");
    let reply = agent
        .post(&format!("{base}/acme/v1/ingest/accesslogs"))
        .set("Authorization", &format!("Basic {basic}"))
        .set("Content-Type", "application/x-ndjson")
        .send_string(&body)
        .expect("ingesting");
    assert_eq!(reply.status(), 200);
}

#[test]
fn two_replicas_evaluating_every_second_notify_a_firing_rule_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("opening the temp dir");
    let cluster = Cluster::start(&ClusterSpec {
        binary: env!("CARGO_BIN_EXE_edge-server").into(),
        dir: dir.path().to_path_buf(),
        postgres_dir: None,
        replicas: 2,
        listen: None,
        server_args: ["--alert-interval-secs", "1", "--alert-webhooks-to-private"].map(String::from).to_vec(),
        env: vec![],
    })
    .expect("starting PostgreSQL and two replicas");
    let created = Command::new(env!("CARGO_BIN_EXE_edge-server"))
        .args(["customer", "add", "acme", "--admin", "alice", "--data-dir"])
        .arg(dir.path().join("cli"))
        .env("EDGE_DATABASE_URL", &cluster.database_url)
        .env("EDGE_ADMIN_PASSWORD", PASSWORD)
        .output()
        .expect("running customer add");
    assert!(created.status.success(), "customer add: {}", String::from_utf8_lossy(&created.stderr));
    let bases: Vec<String> = cluster.replicas.iter().map(|r| format!("http://127.0.0.1:{}", r.spec.port)).collect();
    let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(30)).build();

    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let hook = runtime.block_on(receivers::HttpReceiver::start());

    // 10 % errors over the last two 5-minute buckets, in each replica's statistics (they are per replica): the
    // 10-minute window keeps firing for at least 5 minutes whenever the test runs.
    let now = chrono::Utc::now().timestamp_millis();
    let bucket = now.div_euclid(5 * MIN) * 5 * MIN;
    let line = |at: i64, status: u16, hits: u64| {
        let ts = chrono::DateTime::from_timestamp_millis(at).unwrap().format("%Y-%m-%dT%H:%M:%S").to_string();
        json!({"timestamp": ts, "domain": "a.example", "property": "shop", "scheme": 2, "http_status_code": status,
               "request_url": "/x", "hits": hits})
    };
    let lines: Vec<Value> = [bucket - 10 * MIN, bucket - 5 * MIN]
        .iter()
        .flat_map(|b| [line(b + MIN, 200, 900), line(b + 2 * MIN, 503, 100)])
        .collect();
    for base in &bases {
        ingest(&agent, base, &lines);
    }
    let (status, channel) = call(
        &agent,
        "POST",
        &format!("{}/acme/v1/alerts/channels", bases[0]),
        Some(&json!({"name": "hook", "type": "webhook", "url": hook.url})),
    );
    assert_eq!(status, 201, "{channel}");
    let rule = json!({
        "name": "5xx ratio", "severity": "critical",
        "condition": {"type": "threshold", "operator": ">", "value": 0.02, "watch": {
            "path": "/stats", "metric": "hits", "window_minutes": 10, "filters": "http_status_code==503",
            "denominator": {"metric": "hits"}}},
        "channels": [channel["id"]]
    });
    let (status, rule) = call(&agent, "POST", &format!("{}/acme/v1/alerts/rules", bases[1]), Some(&rule));
    assert_eq!(status, 201, "{rule}");

    let received = runtime.block_on(hook.wait_for(1, 30));
    assert_eq!(received.len(), 1, "the rule fired and notified");
    // Both replicas go on evaluating every second (each round claimed by one of them in the store): once three
    // more rounds have evaluated the rule, a second notification would be a delivery in the channel's log.
    let rule_url = format!("{}/acme/v1/alerts/rules/{}", bases[0], rule["id"].as_str().unwrap());
    let evaluated = |agent: &ureq::Agent| {
        let (_, got) = call(agent, "GET", &rule_url, None);
        let at = got["status"]["evaluated"].as_str().map(str::to_string).unwrap_or_default();
        chrono::DateTime::parse_from_rfc3339(&at).map(|t| t.timestamp_millis()).unwrap_or(0)
    };
    let notified_round = evaluated(&agent);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while evaluated(&agent) < notified_round + 3_000 {
        assert!(std::time::Instant::now() < deadline, "the replicas evaluated the rule three more rounds");
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = format!("{}/acme/v1/alerts/channels/{}/deliveries", bases[1], channel["id"].as_str().unwrap());
    let (status, deliveries) = call(&agent, "GET", &log, None);
    assert_eq!(status, 200, "{deliveries}");
    assert_eq!(deliveries["total"], 1, "one delivery by the two replicas: {deliveries}");
    assert_eq!(hook.received().len(), 1, "notified once by the two replicas");
    let (_, events) = call(&agent, "GET", &format!("{}/acme/v1/alerts/events", bases[0]), None);
    assert_eq!(events["total"], 1, "{events}");
    assert_eq!(events["items"][0]["to"], "firing");
    // Both replicas did evaluate rounds: each answers the same rule as firing.
    for base in &bases {
        let (_, got) =
            call(&agent, "GET", &format!("{base}/acme/v1/alerts/rules/{}", rule["id"].as_str().unwrap()), None);
        assert_eq!(got["status"]["state"], "firing", "{got}");
    }
    drop(hook);
    drop(cluster);
}
