//! Logins held back by throttling cost nothing while they wait (issue 19's review, finding 4: they polled the
//! database every 20 ms, and 1,200 of them made every other request slow). On its own in this test binary,
//! because it measures the process's CPU time.

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
    let app = Arc::new(TestApp::with(|s| s.login_slowdown = Duration::from_millis(300)).await);
    let session = app.login("globex", "gina", PASSWORD).await;
    // alice from one address has failed nine times: the next attempt is slowed down (32 x 300 ms), and while it
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
    tokio::time::sleep(Duration::from_millis(200)).await;
    let held: Vec<_> = (0..500)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move { app.send(attempt().done()).await.status })
        })
        .collect();
    // Each is decided once when it comes (one after the other, under the keys' locks: on PostgreSQL in a debug
    // build on a busy machine that takes seconds); then they wait. The old code never went quiet.
    for _ in 0..16 {
        let cpu = cpu_time();
        tokio::time::sleep(Duration::from_millis(250)).await;
        if cpu_time() - cpu < Duration::from_millis(10) {
            break;
        }
    }
    assert!(!first.is_finished() && held.iter().all(|h| !h.is_finished()), "the attempts are held");
    let cpu = cpu_time();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let held_cpu = cpu_time() - cpu;
    println!("CPU while 500 logins are held for 1 s: {held_cpu:?}; for 80 account requests: {requests_cpu:?}");
    // Waiting costs (next to) nothing: they used to poll the database every 20 ms, which took most of a core.
    assert!(held_cpu < requests_cpu, "holding 500 logins for 1 s: {held_cpu:?} of CPU; 80 requests: {requests_cpu:?}");
    let (reads, writes) = account_requests(&app, &session, 40).await;
    let during = (median(reads), median(writes));
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
