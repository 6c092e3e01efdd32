//! Logins held back by throttling cost nothing while they wait (issue 19's review, finding 4: they polled the
//! database every 20 ms, and 1,200 of them made every other request slow). On its own in this test binary,
//! because it measures the process's CPU time.

#[path = "suite/common/mod.rs"]
mod common;

use std::{sync::Arc, time::Duration};

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::json;

fn login(customer: &str, user: &str, password: &str) -> Req {
    req(Method::POST, &format!("/{customer}/v1/sessions")).basic(user, password)
}

/// CPU time this process has used (user and system).
fn cpu_time() -> Duration {
    // SAFETY: getrusage writes into the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Waits until `done` holds (checked every 10 ms), failing after 60 s.
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{what}: not within 60 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The median of `samples`.
fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// `n` reads and `n` changes of the account with `session`, one after the other: how long each took.
async fn account_requests(app: &TestApp, session: &str, n: usize) -> (Vec<Duration>, Vec<Duration>) {
    let (mut reads, mut writes) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let started = std::time::Instant::now();
        let reply = app.send(req(Method::GET, "/globex/v1/account").cookie(session).done()).await;
        reads.push(started.elapsed());
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        let started = std::time::Instant::now();
        let body = json!({"display_name": format!("Globex {i}")});
        let reply = app.send(req(Method::PUT, "/globex/v1/account").cookie(session).json(&body).done()).await;
        writes.push(started.elapsed());
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    }
    (reads, writes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_held_logins_leave_other_requests_unaffected() {
    use edge_server::throttle::{LoginKey, Outcome};
    // The pending attempt is held 32 s: long enough for 500 others to be decided and wait behind it, which on
    // PostgreSQL in a debug build beside other tests took more than the 9.6 s of a 300 ms slow-down.
    let app = Arc::new(TestApp::with(|s| s.login_slowdown = Duration::from_secs(1)).await);
    let session = app.login("globex", "gina", PASSWORD).await;
    // alice from one address has failed nine times: the next attempt is slowed down (32 x 1 s), and while it
    // is pending every further attempt from there waits for it (it could be the tenth failure).
    let key = LoginKey::new("acme", "alice", "203.0.113.7".parse().unwrap());
    for _ in 0..9 {
        app.state.store.reserve_login(T0, &key).await.unwrap();
        app.state.store.settle_login(T0, &key, Outcome::Failed).await.unwrap();
    }
    let cpu = cpu_time();
    let (reads, writes) = account_requests(&app, &session, 40).await;
    let requests_cpu = cpu_time() - cpu;
    let before = (median(reads), median(writes));
    let attempt = || login("acme", "alice", "wrong password!!").peer("203.0.113.7");
    let first = {
        let app = app.clone();
        tokio::spawn(async move { app.send(attempt().done()).await.status })
    };
    // The first attempt is reserved (pending under its keys) before the others come.
    until("the first attempt is pending", || app.state.login_waits.keys_kept() > 0).await;
    let held: Vec<_> = (0..500)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move { app.send(attempt().done()).await.status })
        })
        .collect();
    // Each is decided once when it comes (one after the other, under the keys' locks: on PostgreSQL in a debug
    // build on a busy machine that takes seconds); then it waits on the pending attempt's keys.
    until("the 500 attempts wait", || app.state.login_waits.most_waiting() == 500).await;
    assert!(!first.is_finished() && held.iter().all(|h| !h.is_finished()), "the attempts are held");
    // The same 80 requests beside the 500 waiting attempts: waiting costs (next to) nothing. The old code polled
    // the database every 20 ms for each of them, which took most of a core.
    // Each waiting attempt looks at the store again every 2.5 to 5 s (in case the pending one's server died):
    // for 500 that is 100 to 200 reads a second, which the CPU beside them includes. What is left for the
    // waiting itself must be a small part of one core; the old polling took most of it (or more than one).
    let (cpu, wall) = (cpu_time(), std::time::Instant::now());
    let (reads, writes) = account_requests(&app, &session, 40).await;
    let (during_cpu, wall) = (cpu_time() - cpu, wall.elapsed());
    let during = (median(reads), median(writes));
    let waiting_share = during_cpu.saturating_sub(requests_cpu).as_secs_f64() / wall.as_secs_f64();
    println!(
        "CPU of 80 account requests: {requests_cpu:?} alone, {during_cpu:?} in {wall:?} beside 500 held logins \
         (the waiting: {:.1} % of a core)",
        waiting_share * 100.0
    );
    assert!(
        waiting_share < 0.25,
        "500 held logins took {:.0} % of a core while 80 requests ran: those took {during_cpu:?} of CPU in {wall:?} \
         beside them, {requests_cpu:?} alone",
        waiting_share * 100.0
    );
    assert!(!first.is_finished() && held.iter().all(|h| !h.is_finished()), "the attempts were held throughout");
    let ratio = |i: usize| [during.0, during.1][i].as_secs_f64() / [before.0, before.1][i].as_secs_f64();
    println!(
        "GET /account median: {:?} alone, {:?} beside 500 held logins ({:.2}x); PUT /account: {:?}, {:?} ({:.2}x)",
        before.0,
        during.0,
        ratio(0),
        before.1,
        during.1,
        ratio(1)
    );
    assert!(ratio(0) < 10.0 && ratio(1) < 10.0, "held logins slow other requests down: {before:?} alone, {during:?}");
    // The pending attempt fails (the tenth failure): every held one is refused at once, none was checked.
    assert_eq!(first.await.unwrap(), StatusCode::UNAUTHORIZED);
    let settled = std::time::Instant::now();
    for h in held {
        assert_eq!(h.await.unwrap(), StatusCode::TOO_MANY_REQUESTS);
    }
    println!("the 500 held attempts were answered {:?} after the pending one", settled.elapsed());
    assert!(settled.elapsed() < Duration::from_secs(2), "{:?}", settled.elapsed());
}
