//! `edge-bench load`: a realistic request mix against a demo server over loopback for a bounded time —
//! session-authenticated statistics queries (delivery and security), user listings, configuration reads,
//! network list listings, and purges at the rate limit — then the same number of connections against a bare
//! axum handler in a process of its own, in the same run. Prints requests/s, p50/p99 latency and errors of
//! each, and their ratio. Fails when anything but the purge limit's intended 429s went wrong.
//!
//! With `--cluster`, the mix also runs through a load balancer in front of two replicas on one PostgreSQL
//! (throwaway cluster, HAProxy or nginx), in the same run; the server CPU is then the replicas' and PostgreSQL's.
//!
//! Usage: edge-bench load --work DIR --server PATH/edge-server [--seconds N] [--connections N] [--cluster]

use std::{
    process::{Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use edge_api::stats::format_time;

use crate::{Args, server::Server};

const PASSWORD: &str = "load-password-12345";
/// Purges per second the load sends: the API's limit is 2 per second per customer.
const PURGES_PER_SECOND: u64 = 2;

/// What one kind of request did.
#[derive(Default)]
struct Tally {
    latencies_us: Vec<u32>,
    /// 429 answers to purges (the limit doing its job).
    intended_429: u64,
    errors: u64,
    first_error: Option<String>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        self.latencies_us.extend(other.latencies_us);
        self.intended_429 += other.intended_429;
        self.errors += other.errors;
        self.first_error = self.first_error.take().or(other.first_error);
    }

    fn percentile(&self, p: f64) -> f64 {
        if self.latencies_us.is_empty() {
            return f64::NAN;
        }
        let i = ((self.latencies_us.len() - 1) as f64 * p).round() as usize;
        f64::from(self.latencies_us[i]) / 1000.0
    }
}

/// One request of the mix.
struct Target {
    name: &'static str,
    path: String,
    /// Share of the mix, in percent.
    weight: u32,
}

fn mix(properties: &[String]) -> Vec<Target> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    let end = now - now.rem_euclid(3_600_000);
    let (day, week) = (format_time(end - 86_400_000), format_time(end - 7 * 86_400_000));
    let end = format_time(end);
    let mut targets = vec![
        Target {
            name: "delivery statistics, 24 h by domain and status",
            path: format!(
                "/stats/data?starttime={day}&endtime={end}&metrics=hits,last_mile_bandwidth_bytes&dimensions=domain,http_status_code&granularity=hour&sortby=-hits"
            ),
            weight: 25,
        },
        Target {
            name: "delivery statistics, 7 days by domain and country",
            path: format!(
                "/stats/data?starttime={week}&endtime={end}&metrics=hits&dimensions=domain,country&granularity=day"
            ),
            weight: 10,
        },
        Target {
            name: "WAF trends, 24 h",
            path: format!(
                "/stats/security/waf/trends/data?starttime={day}&endtime={end}&metrics=hits&granularity=hour"
            ),
            weight: 10,
        },
        Target { name: "user listing", path: "/users".into(), weight: 20 },
        Target { name: "network list listing", path: "/config/networklists".into(), weight: 10 },
    ];
    let each = 25 / properties.len().max(1) as u32;
    for p in properties {
        targets.push(Target {
            name: "configuration read",
            path: format!("/properties/{p}/config"),
            weight: each.max(1),
        });
    }
    targets
}

/// The target whose share of the mix contains `point` (from 0 to the sum of the weights).
fn pick(targets: &[Target], mut point: u32) -> usize {
    for (i, t) in targets.iter().enumerate() {
        if point < t.weight {
            return i;
        }
        point -= t.weight;
    }
    0
}

/// Sends GETs from `connections` threads until `stop`, each on its own keep-alive connection.
fn drive(
    base: &str,
    cookie: &str,
    targets: &Arc<Vec<Target>>,
    connections: usize,
    stop: &Arc<AtomicBool>,
) -> Vec<thread::JoinHandle<Vec<Tally>>> {
    (0..connections)
        .map(|worker| {
            let (base, cookie, targets, stop) = (base.to_string(), cookie.to_string(), targets.clone(), stop.clone());
            thread::spawn(move || {
                let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(30)).redirects(0).build();
                let total: u32 = targets.iter().map(|t| t.weight).sum();
                let mut tallies: Vec<Tally> = targets.iter().map(|_| Tally::default()).collect();
                let mut seed = 0x9E37_79B9u32.wrapping_mul(worker as u32 + 1);
                while !stop.load(Ordering::Relaxed) {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    let i = pick(&targets, seed % total.max(1));
                    let t = Instant::now();
                    let answer = agent.get(&format!("{base}{}", targets[i].path)).set("Cookie", &cookie).call();
                    let elapsed = t.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
                    let tally = &mut tallies[i];
                    match answer {
                        Ok(reply) => {
                            // Read the whole body, as a client would, so the connection is reused.
                            let _ = reply.into_string();
                            tally.latencies_us.push(elapsed);
                        }
                        Err(e) => {
                            tally.errors += 1;
                            if tally.first_error.is_none() {
                                let detail = match e {
                                    ureq::Error::Status(code, reply) => {
                                        format!("{code} {}", reply.into_string().unwrap_or_default())
                                    }
                                    e => e.to_string(),
                                };
                                tally.first_error = Some(format!("{}: {detail}", targets[i].path));
                            }
                        }
                    }
                }
                tallies
            })
        })
        .collect()
}

/// Posts purges at the rate limit until `stop`.
fn purge_at_the_limit(base: &str, cookie: &str, stop: &Arc<AtomicBool>) -> thread::JoinHandle<Tally> {
    let (base, cookie, stop) = (base.to_string(), cookie.to_string(), stop.clone());
    thread::spawn(move || {
        let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(30)).redirects(0).build();
        let mut tally = Tally::default();
        let interval = Duration::from_millis(1000 / PURGES_PER_SECOND);
        let mut next = Instant::now();
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let body = serde_json::json!({"purge_request": {"action": "PURGE", "uris": [
                {"uri_pattern": format!("www.shop.example/load/{n}.html"), "match_mode": "EXACT_LITERAL"}
            ]}});
            n += 1;
            let t = Instant::now();
            match agent.post(&format!("{base}/cache/purge")).set("Cookie", &cookie).send_json(body) {
                Ok(reply) if reply.status() == 303 => tally.latencies_us.push(t.elapsed().as_micros() as u32),
                Err(ureq::Error::Status(429, _)) => tally.intended_429 += 1,
                Ok(reply) => {
                    tally.errors += 1;
                    tally.first_error.get_or_insert_with(|| format!("purge answered {}", reply.status()));
                }
                Err(e) => {
                    tally.errors += 1;
                    tally.first_error.get_or_insert_with(|| format!("purge: {e}"));
                }
            }
            next += interval;
            thread::sleep(next.saturating_duration_since(Instant::now()));
        }
        tally
    })
}

struct Outcome {
    requests: u64,
    seconds: f64,
    /// Server CPU seconds (user + system) used during the run.
    cpu: f64,
    all: Tally,
    by_kind: Vec<(&'static str, Tally)>,
}

/// What the load is sent to, and whose CPU time it costs.
trait Endpoint {
    fn base(&self) -> String;
    fn cpu_seconds(&self) -> f64;
}

impl Endpoint for Server {
    fn base(&self) -> String {
        self.base.clone()
    }

    fn cpu_seconds(&self) -> f64 {
        Server::cpu_seconds(self)
    }
}

/// Two replicas on one PostgreSQL behind the balancer: the CPU time of the replicas and of PostgreSQL's
/// processes (not the balancer's).
impl Endpoint for edge_cluster::Cluster {
    fn base(&self) -> String {
        self.url()
    }

    fn cpu_seconds(&self) -> f64 {
        let replicas: f64 = self.replicas.iter().filter_map(|r| r.pid()).map(crate::server::cpu_seconds).sum();
        let postmaster = std::fs::read_to_string(self.postgres.dir().join("data/postmaster.pid"))
            .ok()
            .and_then(|text| text.lines().next()?.trim().parse::<u32>().ok());
        let postgres: f64 = postmaster.map_or(0.0, |pid| {
            let children = std::fs::read_dir("/proc").into_iter().flatten().filter_map(|e| {
                let child: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).ok()?;
                let ppid: u32 = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
                (ppid == pid).then_some(child)
            });
            crate::server::cpu_seconds(pid) + children.map(crate::server::cpu_seconds).sum::<f64>()
        });
        replicas + postgres
    }
}

fn measure(server: &dyn Endpoint, path: &str, cookie: &str, targets: Vec<Target>, run: Run) -> Outcome {
    let Run { connections, seconds, purge } = run;
    let base = &format!("{}{path}", server.base());
    let cpu = server.cpu_seconds();
    let targets = Arc::new(targets);
    let stop = Arc::new(AtomicBool::new(false));
    let t = Instant::now();
    let workers = drive(base, cookie, &targets, connections, &stop);
    let purger = purge.then(|| purge_at_the_limit(base, cookie, &stop));
    thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    let mut by_kind: Vec<(&'static str, Tally)> = Vec::new();
    for w in workers {
        for (i, tally) in w.join().unwrap_or_default().into_iter().enumerate() {
            let name = targets[i].name;
            match by_kind.iter_mut().find(|(n, _)| *n == name) {
                Some((_, t)) => t.merge(tally),
                None => by_kind.push((name, tally)),
            }
        }
    }
    if let Some(p) = purger {
        by_kind.push(("purge (2/s, the limit)", p.join().unwrap_or_default()));
    }
    let seconds = t.elapsed().as_secs_f64();
    let cpu = server.cpu_seconds() - cpu;
    let mut all = Tally::default();
    for (_, t) in &mut by_kind {
        t.latencies_us.sort_unstable();
        all.merge(Tally {
            latencies_us: t.latencies_us.clone(),
            intended_429: t.intended_429,
            errors: t.errors,
            first_error: t.first_error.clone(),
        });
    }
    all.latencies_us.sort_unstable();
    let requests = all.latencies_us.len() as u64 + all.intended_429 + all.errors;
    Outcome { requests, seconds, cpu, all, by_kind }
}

#[derive(Clone, Copy)]
struct Run {
    connections: usize,
    seconds: u64,
    purge: bool,
}

impl Outcome {
    /// Server CPU time per request, in microseconds: unlike requests/s, it hardly depends on what else the
    /// shared machine is doing.
    fn cpu_us_per_request(&self) -> f64 {
        self.cpu * 1e6 / self.requests.max(1) as f64
    }
}

pub fn run(args: &Args) -> Result<()> {
    let work = args.path("--work")?;
    let server_bin = args.path("--server")?;
    let seconds: u64 = args.number("--seconds")?.unwrap_or(20);
    let connections: usize = args.number("--connections")?.unwrap_or(16);
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;

    let t = Instant::now();
    let server = Server::start(
        &server_bin,
        &work.join("data"),
        &["--demo", "--demo-days", "8"],
        &[("EDGE_DEMO_PASSWORD", PASSWORD)],
    )?;
    println!("load: demo server with 8 days of traffic ready in {:.1} s at {}", t.elapsed().as_secs_f64(), server.base);
    let cookie = server.login("demo", "admin", PASSWORD)?;
    let api = format!("{}/demo/v1", server.base);
    let listing: serde_json::Value =
        ureq::get(&format!("{api}/properties")).set("Cookie", &cookie).call()?.into_json()?;
    let properties: Vec<String> = listing
        .as_array()
        .or(listing["items"].as_array())
        .context("property listing")?
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_string))
        .collect();
    let run = Run { connections, seconds, purge: true };
    let edge = measure(&server, "/demo/v1", &cookie, mix(&properties), run);
    // Each kind of request alone for a few seconds: where the server's time goes.
    let mut alone: Vec<(&'static str, Outcome)> = Vec::new();
    for target in mix(&properties) {
        if alone.iter().any(|(n, _)| *n == target.name) {
            continue;
        }
        let name = target.name;
        let quick = Run { connections, seconds: (seconds / 4).max(2), purge: false };
        alone.push((name, measure(&server, "/demo/v1", &cookie, vec![target], quick)));
    }
    drop(server);

    // The same mix through a load balancer in front of two replicas on PostgreSQL.
    let replicated = if args.flag("--cluster") {
        let t = Instant::now();
        let dir = work.join("cluster");
        std::fs::create_dir_all(&dir)?;
        // The postgres user (initdb runs as it when we are root) must reach the cluster's directory.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o755))?;
        let cluster = edge_cluster::Cluster::start(&edge_cluster::ClusterSpec {
            binary: server_bin.clone(),
            dir,
            postgres_dir: None,
            replicas: 2,
            listen: None,
            server_args: ["--demo", "--demo-days", "8"].map(String::from).to_vec(),
            env: vec![("EDGE_DEMO_PASSWORD".into(), PASSWORD.into())],
        })?;
        println!(
            "load: two replicas on PostgreSQL behind {} ready in {:.1} s at {}",
            cluster.balancer.kind.name(),
            t.elapsed().as_secs_f64(),
            cluster.url()
        );
        let cookie = crate::server::login(&cluster.url(), "demo", "admin", PASSWORD)?;
        Some((cluster.balancer.kind.name(), measure(&cluster, "/demo/v1", &cookie, mix(&properties), run)))
    } else {
        None
    };

    let bare = Command::new(std::env::current_exe()?).arg("bare").stdout(Stdio::piped()).spawn()?;
    let bare = Server::wait_for_address(bare, "bare axum: ")?;
    let hello = vec![Target { name: "bare axum handler", path: "/hello".into(), weight: 1 }];
    let baseline = measure(&bare, "", "", hello, Run { purge: false, ..run });
    drop(bare);

    println!();
    println!(
        "{connections} connections, {seconds} s each, over loopback; both servers on this machine, one after the other"
    );
    println!();
    println!(
        "| request | count | p50 (ms) | p99 (ms) | 429 (intended) | errors | alone: requests/s | alone: server CPU/request (µs) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (name, t) in &edge.by_kind {
        let solo = alone.iter().find(|(n, _)| n == name).map(|(_, o)| o);
        let (rate, cpu) =
            solo.map_or((f64::NAN, f64::NAN), |o| (o.requests as f64 / o.seconds, o.cpu_us_per_request()));
        println!(
            "| {name} | {} | {:.2} | {:.2} | {} | {} | {rate:.0} | {cpu:.0} |",
            t.latencies_us.len(),
            t.percentile(0.5),
            t.percentile(0.99),
            t.intended_429,
            t.errors
        );
    }
    println!();
    println!("| server | requests/s | p50 (ms) | p99 (ms) | server CPU/request (µs) | errors |");
    println!("|---|---|---|---|---|---|");
    let replicated_name = replicated.as_ref().map(|(balancer, _)| {
        format!("2 × edge-server on PostgreSQL behind {balancer}, realistic mix (CPU: replicas + PostgreSQL)")
    });
    let rows = [("edge-server, realistic mix".to_string(), &edge), ("bare axum handler".to_string(), &baseline)]
        .into_iter()
        .chain(replicated_name.into_iter().zip(replicated.as_ref().map(|(_, o)| o)));
    for (name, o) in rows {
        println!(
            "| {name} | {:.0} | {:.2} | {:.2} | {:.0} | {} |",
            o.requests as f64 / o.seconds,
            o.all.percentile(0.5),
            o.all.percentile(0.99),
            o.cpu_us_per_request(),
            o.all.errors
        );
    }
    let ratio = (edge.requests as f64 / edge.seconds) / (baseline.requests as f64 / baseline.seconds);
    println!();
    println!("edge-server serves {:.1} % of the bare handler's requests/s with the realistic mix", ratio * 100.0);
    if let Some((_, o)) = &replicated {
        let ratio = (o.requests as f64 / o.seconds) / (edge.requests as f64 / edge.seconds);
        println!("two replicas on PostgreSQL serve {:.1} % of the embedded server's requests/s", ratio * 100.0);
    }
    for o in
        [&edge, &baseline].into_iter().chain(replicated.as_ref().map(|(_, o)| o)).chain(alone.iter().map(|(_, o)| o))
    {
        if o.all.errors > 0 {
            bail!("{} requests failed; the first: {}", o.all.errors, o.all.first_error.clone().unwrap_or_default());
        }
    }
    Ok(())
}

/// `edge-bench bare`: a bare axum handler on a loopback port, for the baseline.
pub fn bare() -> Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let app = axum::Router::new()
            .route("/hello", axum::routing::get(|| async { axum::Json(serde_json::json!({"hello": "world"})) }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        println!("bare axum: http://{}/", listener.local_addr()?);
        axum::serve(listener, app).await?;
        anyhow::Ok(())
    })
}
