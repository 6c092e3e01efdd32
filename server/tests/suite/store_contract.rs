//! The store contract: every method of [`Store`] behaves the same on SQLite and on PostgreSQL — what it stores,
//! reads, refuses and counts — and holds under many tasks at once (compare-and-swap, list limits, the purge
//! rate limit, one-time-code replay, the last administrator, login throttling). Each test runs once per
//! store: `<name>::sqlite` on a new data dir, `<name>::postgres` on a new schema of `$EDGE_TEST_POSTGRES_URL`
//! (or of a throwaway cluster this test process starts).

use crate::common;
#[path = "store_contract/tokens.rs"]
mod tokens;

use std::{future::Future, net::IpAddr, sync::Arc, time::Duration};

use edge_api::{audit::op, config::ReadOnly};
use edge_server::{
    config::{content_hash, etag},
    store::{
        AccountChange, Actor, AuditEvent, AuditFilter, ConfigVersionRecord, Customer, EntryRecord, Location,
        NetworkListRecord, NetworkListUpdate, NewCustomer, NewUser, OtpSeedRecord, PasswordReset, PurgeRecord,
        PurgeSummary, SessionRecord, Store, StoreError, Target, TaskFilter, TaskRecord, TaskStatus, UserUpdate,
    },
    throttle::{self, Decision, Lockout, LoginKey, Outcome, Verdict},
};

const T0: i64 = common::T0;

/// A store of each kind, empty, for one test.
async fn open(kind: &str) -> (Arc<dyn Store>, Option<tempfile::TempDir>) {
    match kind {
        "sqlite" => {
            let dir = tempfile::tempdir().unwrap();
            let location = Location::Sqlite(dir.path().to_path_buf());
            let store = edge_server::store::open(&location, Duration::ZERO).await.unwrap();
            (Arc::new(store), Some(dir))
        }
        _ => {
            let url = common::fresh_schema(&common::postgres_url()).await;
            (Arc::new(edge_server::store::open(&Location::Postgres(url), Duration::ZERO).await.unwrap()), None)
        }
    }
}

/// Runs `test` against a new store of each kind, as `NAME::sqlite` and `NAME::postgres`.
macro_rules! contract {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite() {
                super::run("sqlite", super::$name).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres() {
                super::run("postgres", super::$name).await;
            }
        }
    )*};
}

async fn run<F, Fut>(kind: &str, test: F)
where
    F: FnOnce(Arc<dyn Store>) -> Fut,
    Fut: Future<Output = ()>,
{
    let (store, _dir) = open(kind).await;
    assert_eq!(store.kind(), kind);
    test(store).await;
}

contract!(
    customers_and_the_account,
    users_search_page_and_update,
    the_last_administrator_stays_even_under_concurrent_changes,
    passwords_and_reset_tokens,
    two_factor_and_code_replay,
    tasks_filtered_paged_and_pruned,
    properties_and_compare_and_swap,
    host_claims_are_one_propertys_across_customers,
    purges_and_their_rate_limit,
    network_lists_and_their_limit,
    identity_sources,
    sessions_touched_ended_and_purged,
    a_users_live_sessions_most_recently_used_first,
    audit_records_filtered_and_pruned,
    login_throttling_counts,
    login_throttling_under_parallel_attempts,
    wrong_codes_are_counted_per_account_whatever_the_address,
    text_with_nul_is_refused,
);
use tokens::{
    a_user_holds_a_bounded_number_of_tokens_even_under_parallel_creation,
    tokens_stored_found_changed_rolled_and_revoked,
};
contract!(
    tokens_stored_found_changed_rolled_and_revoked,
    a_user_holds_a_bounded_number_of_tokens_even_under_parallel_creation
);

// Alerting's contract, in a file of its own.
#[path = "store_contract/alerts.rs"]
mod alerts;

fn audit(customer: i64, operation: &str, target: Target) -> AuditEvent {
    AuditEvent::system(customer, T0, operation, target)
}

fn user(id: &str, username: &str, role: &str) -> NewUser {
    NewUser {
        id: id.into(),
        username: username.into(),
        source: "local".into(),
        full_name: format!("{username} Example"),
        email: format!("{username}@example.com"),
        phone_number: String::new(),
        enabled: true,
        role: role.into(),
        password_hash: Some(format!("hash-of-{username}")),
    }
}

/// Customer `acme` with admin `alice` (id `u-alice`).
async fn acme(store: &dyn Store) -> Customer {
    let c = NewCustomer { name: "acme".into(), display_name: "Acme".into(), contact_email: "ops@acme.example".into() };
    let target = Target { kind: "account", id: "acme".into(), name: "acme".into() };
    store
        .create_customer(c, &[user("u-alice", "alice", "admin")], T0, &audit(0, op::CUSTOMER_CREATE, target))
        .await
        .unwrap()
}

fn task(customer: i64, id: &str, operation: &str, begin_ms: i64, end_ms: i64, failed: bool) -> TaskRecord {
    TaskRecord {
        id: id.into(),
        customer_id: customer,
        operation: operation.into(),
        user_id: "u-alice".into(),
        user_name: "alice".into(),
        target_id: "t".into(),
        target_uri: "/acme/v1/t".into(),
        target_name: "T".into(),
        begin_ms,
        end_ms,
        error_info: failed.then(|| "{\"type\":\"deployment_failed\"}".into()),
        purge: None,
    }
}

fn session(token: &str, customer: i64, user: &str, at: i64) -> SessionRecord {
    SessionRecord {
        token_hash: token.into(),
        customer_id: customer,
        user_id: user.into(),
        created_ms: at,
        last_seen_ms: at,
    }
}

/// How many audit records of `operation` the customer has.
async fn recorded(store: &dyn Store, customer: i64, operation: &str) -> u64 {
    let filter = AuditFilter { operation: Some(operation.into()), ..AuditFilter::default() };
    store.audit_records(customer, &filter, 0, 1000).await.unwrap().1
}

async fn customers_and_the_account(store: Arc<dyn Store>) {
    store.ping().await.unwrap();
    assert_eq!(store.customer_count().await.unwrap(), 0);
    let c = acme(store.as_ref()).await;
    assert_eq!((c.name.as_str(), c.timezone.as_str(), c.created_ms), ("acme", "UTC", T0));
    assert_eq!(store.customer_by_name("acme").await.unwrap(), Some(c.clone()));
    assert_eq!(store.customer_by_name("nobody").await.unwrap(), None);
    assert_eq!(recorded(store.as_ref(), c.id, op::CUSTOMER_CREATE).await, 1, "recorded under the new customer");

    // A second customer of the same name: refused, and none of its users written.
    let again = NewCustomer { name: "acme".into(), display_name: "Other".into(), contact_email: String::new() };
    let err = store
        .create_customer(again, &[user("u-x", "x", "admin")], T0, &audit(0, op::CUSTOMER_CREATE, Target::property("x")))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict("customer")), "{err:?}");
    assert_eq!(store.customer_count().await.unwrap(), 1);
    assert_eq!(store.user_by_id(c.id, "u-x").await.unwrap(), None);

    // Fields change on their own.
    let event = audit(c.id, op::ACCOUNT_UPDATE, Target::account(&c));
    let change = AccountChange { timezone: Some("Europe/Berlin".into()), ..AccountChange::default() };
    let updated = store.update_customer(c.id, &change, &event).await.unwrap().unwrap();
    assert_eq!((updated.display_name.as_str(), updated.timezone.as_str()), ("Acme", "Europe/Berlin"));
    let change = AccountChange { display_name: Some("Acme Corp".into()), ..AccountChange::default() };
    let updated = store.update_customer(c.id, &change, &event).await.unwrap().unwrap();
    assert_eq!((updated.display_name.as_str(), updated.timezone.as_str()), ("Acme Corp", "Europe/Berlin"));
    assert_eq!(store.update_customer(c.id + 1000, &change, &event).await.unwrap(), None);
    assert_eq!(recorded(store.as_ref(), c.id, op::ACCOUNT_UPDATE).await, 2);
}

async fn users_search_page_and_update(store: Arc<dyn Store>) {
    let c = acme(store.as_ref()).await;
    let event = |o| audit(c.id, o, Target::property("u"));
    for (id, name) in [("u-bob", "Bob"), ("u-carol", "carol_100%"), ("u-dave", "dave")] {
        store.create_user(c.id, &user(id, name, "viewer"), T0 + 1, &event(op::USER_CREATE)).await.unwrap();
    }
    let err = store.create_user(c.id, &user("u-b2", "Bob", "viewer"), T0, &event(op::USER_CREATE)).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict("username")), "{err:?}");
    assert_eq!(recorded(store.as_ref(), c.id, op::USER_CREATE).await, 3, "the refused one is not recorded");

    let bob = store.user_by_username(c.id, "Bob").await.unwrap().unwrap();
    assert_eq!((bob.id.as_str(), bob.role.as_str(), bob.enabled, bob.otp_enabled), ("u-bob", "viewer", true, false));
    assert_eq!(bob.password_hash.as_deref(), Some("hash-of-Bob"));
    assert_eq!(store.user_by_id(c.id, "u-bob").await.unwrap(), Some(bob.clone()));
    assert_eq!(store.user_by_id(c.id + 1, "u-bob").await.unwrap(), None, "by customer");

    // Ordered by username without regard to case; a page and the total.
    let (page, total) = store.list_users(c.id, None, 0, 2).await.unwrap();
    let names: Vec<_> = page.iter().map(|u| u.username.as_str()).collect();
    assert_eq!((names, total), (vec!["alice", "Bob"], 4));
    let (page, _) = store.list_users(c.id, None, 2, 10).await.unwrap();
    assert_eq!(page.iter().map(|u| u.username.as_str()).collect::<Vec<_>>(), ["carol_100%", "dave"]);
    // Search in username and full name, case-insensitive, with % and _ meaning themselves.
    let (page, total) = store.list_users(c.id, Some("BOB EX"), 0, 10).await.unwrap();
    assert_eq!((page.len(), total, page[0].id.as_str()), (1, 1, "u-bob"));
    assert_eq!(store.list_users(c.id, Some("0%"), 0, 10).await.unwrap().1, 1);
    assert_eq!(store.list_users(c.id, Some("_"), 0, 10).await.unwrap().1, 1);
    assert_eq!(store.list_users(c.id, Some("%"), 0, 10).await.unwrap().1, 1);
    assert_eq!(store.list_users(c.id, Some("zzz"), 0, 10).await.unwrap(), (vec![], 0));

    // Partial updates; a taken username is a conflict; a missing user is None.
    let update =
        UserUpdate { full_name: Some("Robert".into()), role: Some("operator".into()), ..UserUpdate::default() };
    let bob = store.update_user(c.id, "u-bob", &update, &event(op::USER_UPDATE)).await.unwrap().unwrap();
    assert_eq!(
        (bob.full_name.as_str(), bob.role.as_str(), bob.email.as_str()),
        ("Robert", "operator", "Bob@example.com")
    );
    let taken = UserUpdate { username: Some("dave".into()), ..UserUpdate::default() };
    let err = store.update_user(c.id, "u-bob", &taken, &event(op::USER_UPDATE)).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict("username")), "{err:?}");
    assert_eq!(store.update_user(c.id, "nobody", &update, &event(op::USER_UPDATE)).await.unwrap(), None);
    assert_eq!(recorded(store.as_ref(), c.id, op::USER_UPDATE).await, 1);

    // Disabling ends the user's sessions; deleting removes it with its sessions.
    let s = |t: &str, u: &str| session(t, c.id, u, T0);
    store.create_session(&s("s-bob", "u-bob"), &event(op::SESSION_CREATE)).await.unwrap();
    store.create_session(&s("s-dave", "u-dave"), &event(op::SESSION_CREATE)).await.unwrap();
    let disable = UserUpdate { enabled: Some(false), ..UserUpdate::default() };
    assert!(!store.update_user(c.id, "u-bob", &disable, &event(op::USER_UPDATE)).await.unwrap().unwrap().enabled);
    assert!(store.session_with_user("s-bob").await.unwrap().is_none());
    assert!(store.delete_user(c.id, "u-dave", &event(op::USER_DELETE)).await.unwrap());
    assert!(!store.delete_user(c.id, "u-dave", &event(op::USER_DELETE)).await.unwrap());
    assert!(store.session_with_user("s-dave").await.unwrap().is_none());
    assert_eq!(store.user_by_id(c.id, "u-dave").await.unwrap(), None);
    assert_eq!(recorded(store.as_ref(), c.id, op::USER_DELETE).await, 1);
}

async fn the_last_administrator_stays_even_under_concurrent_changes(store: Arc<dyn Store>) {
    let c = acme(store.as_ref()).await;
    let event = audit(c.id, op::USER_UPDATE, Target::property("u"));
    let demote = UserUpdate { role: Some("viewer".into()), ..UserUpdate::default() };
    let disable = UserUpdate { enabled: Some(false), ..UserUpdate::default() };
    for update in [&demote, &disable] {
        let err = store.update_user(c.id, "u-alice", update, &event).await.unwrap_err();
        assert!(matches!(err, StoreError::LastAdmin), "{err:?}");
    }
    assert!(matches!(store.delete_user(c.id, "u-alice", &event).await, Err(StoreError::LastAdmin)));
    assert_eq!(store.user_by_id(c.id, "u-alice").await.unwrap().unwrap().role, "admin", "nothing changed");

    // Many administrators, each demoted by its own task at once: exactly one stays.
    for i in 0..11 {
        store
            .create_user(c.id, &user(&format!("u-admin{i}"), &format!("admin{i}"), "admin"), T0, &event)
            .await
            .unwrap();
    }
    let ids: Vec<String> =
        std::iter::once("u-alice".to_string()).chain((0..11).map(|i| format!("u-admin{i}"))).collect();
    let tasks: Vec<_> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let (store, id, event, demote, disable) =
                (store.clone(), id.clone(), event.clone(), demote.clone(), disable.clone());
            tokio::spawn(async move {
                match i % 3 {
                    0 => store.update_user(c.id, &id, &demote, &event).await.map(|_| ()),
                    1 => store.update_user(c.id, &id, &disable, &event).await.map(|_| ()),
                    _ => store.delete_user(c.id, &id, &event).await.map(|_| ()),
                }
            })
        })
        .collect();
    let mut refused = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(()) => {}
            Err(StoreError::LastAdmin) => refused += 1,
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(refused, 1, "exactly one change would have left no administrator");
    let (users, _) = store.list_users(c.id, None, 0, 100).await.unwrap();
    let admins = users.iter().filter(|u| u.role == "admin" && u.enabled).count();
    assert_eq!(admins, 1);
}

async fn passwords_and_reset_tokens(store: Arc<dyn Store>) {
    let c = acme(store.as_ref()).await;
    let event = |o| audit(c.id, o, Target::property("u"));
    store.create_user(c.id, &user("u-bob", "bob", "viewer"), T0, &event(op::USER_CREATE)).await.unwrap();
    for t in ["s1", "s2", "s3"] {
        store.create_session(&session(t, c.id, "u-bob", T0), &event(op::SESSION_CREATE)).await.unwrap();
    }
    // A change keeps the session it came from.
    assert!(store.set_password(c.id, "u-bob", "new-hash", Some("s1"), &event(op::PASSWORD_CHANGE)).await.unwrap());
    assert!(store.session_with_user("s1").await.unwrap().is_some());
    assert!(store.session_with_user("s2").await.unwrap().is_none());
    assert!(!store.set_password(c.id, "nobody", "h", None, &event(op::PASSWORD_CHANGE)).await.unwrap());
    assert!(store.set_password(c.id, "u-bob", "newer-hash", None, &event(op::PASSWORD_CHANGE)).await.unwrap());
    assert!(store.session_with_user("s1").await.unwrap().is_none(), "without one to keep, all end");

    // A reset voids the password and ends the sessions; its token works once, concurrent uses included.
    store.create_session(&session("s4", c.id, "u-bob", T0), &event(op::SESSION_CREATE)).await.unwrap();
    let reset = |token: &str| PasswordReset {
        token_hash: token.into(),
        customer_id: c.id,
        user_id: "u-bob".into(),
        expires_ms: T0 + 3_600_000,
    };
    assert!(store.reset_password(&reset("r1"), &event(op::PASSWORD_RESET)).await.unwrap());
    assert!(store.reset_password(&reset("r2"), &event(op::PASSWORD_RESET)).await.unwrap());
    let missing = PasswordReset { user_id: "nobody".into(), ..reset("r3") };
    assert!(!store.reset_password(&missing, &event(op::PASSWORD_RESET)).await.unwrap());
    assert_eq!(store.password_reset("r3").await.unwrap(), None, "nothing stored for a missing user");
    assert_eq!(store.user_by_id(c.id, "u-bob").await.unwrap().unwrap().password_hash, None);
    assert!(store.session_with_user("s4").await.unwrap().is_none());
    assert_eq!(store.password_reset("r1").await.unwrap(), Some(reset("r1")));
    let uses: Vec<_> = (0..10)
        .map(|i| {
            let store = store.clone();
            let e = event(op::PASSWORD_RESET_COMPLETE);
            tokio::spawn(async move { store.finish_password_reset("r1", &format!("hash-{i}"), &e).await.unwrap() })
        })
        .collect();
    let mut finished = 0;
    for u in uses {
        finished += u.await.unwrap() as usize;
    }
    assert_eq!(finished, 1, "a token is used once");
    assert!(store.user_by_id(c.id, "u-bob").await.unwrap().unwrap().password_hash.is_some());
    assert_eq!(store.password_reset("r2").await.unwrap(), None, "all the user's tokens go with the first used");
    assert_eq!(recorded(store.as_ref(), c.id, op::PASSWORD_RESET_COMPLETE).await, 1);
}

async fn two_factor_and_code_replay(store: Arc<dyn Store>) {
    let c = acme(store.as_ref()).await;
    let event = |o| audit(c.id, o, Target::property("u"));
    let seed = |id: &str| OtpSeedRecord {
        id: id.into(),
        user_id: "u-alice".into(),
        secret: format!("S-{id}"),
        created_ms: T0,
    };
    store.create_otp_seed(&seed("a"), &event(op::OTP_SEED)).await.unwrap();
    store.create_otp_seed(&seed("b"), &event(op::OTP_SEED)).await.unwrap();
    assert_eq!(store.otp_seed("u-alice", "a").await.unwrap(), None, "replaced by the newer seed");
    assert_eq!(store.otp_seed("u-alice", "b").await.unwrap(), Some(seed("b")));
    assert_eq!(store.otp_seed("u-other", "b").await.unwrap(), None);

    assert!(store.enable_otp("u-alice", "S-b", 100, &event(op::OTP_PAIR)).await.unwrap());
    assert!(!store.enable_otp("u-alice", "S-x", 100, &event(op::OTP_PAIR)).await.unwrap(), "already on");
    assert_eq!(store.otp_seed("u-alice", "b").await.unwrap(), None, "pairing drops the seeds");
    let alice = store.user_by_id(c.id, "u-alice").await.unwrap().unwrap();
    assert_eq!((alice.otp_enabled, alice.otp_secret.as_deref(), alice.otp_last_step), (true, Some("S-b"), 100));
    assert_eq!(recorded(store.as_ref(), c.id, op::OTP_PAIR).await, 1);

    // A step is used once, and never one before it; many attempts at once with the same code: one goes through.
    assert!(!store.consume_otp_step("u-alice", 100).await.unwrap());
    assert!(store.consume_otp_step("u-alice", 101).await.unwrap());
    assert!(!store.consume_otp_step("u-alice", 101).await.unwrap());
    let attempts: Vec<_> = (0..20)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.consume_otp_step("u-alice", 105).await.unwrap() })
        })
        .collect();
    let mut accepted = 0;
    for a in attempts {
        accepted += a.await.unwrap() as usize;
    }
    assert_eq!(accepted, 1, "a code cannot be replayed, even at the same moment");
    assert!(!store.consume_otp_step("u-alice", 104).await.unwrap());

    assert!(store.disable_otp("u-alice", &event(op::OTP_UNPAIR)).await.unwrap());
    assert!(!store.disable_otp("u-alice", &event(op::OTP_UNPAIR)).await.unwrap());
    let alice = store.user_by_id(c.id, "u-alice").await.unwrap().unwrap();
    assert_eq!((alice.otp_enabled, alice.otp_secret, alice.otp_last_step), (false, None, 0));
}

async fn tasks_filtered_paged_and_pruned(store: Arc<dyn Store>) {
    let c = acme(store.as_ref()).await;
    let now = T0 + 100_000;
    let event = audit(c.id, op::PURGE, Target::purge("PURGE"));
    let purge = |task_id: &str| PurgeRecord {
        id: 0,
        customer_id: c.id,
        task_id: task_id.into(),
        action: "PURGE".into(),
        uri_count: 4,
        uris: "[]".into(),
        sample: vec!["www.a.example/1".into(), "www.a.example/2".into(), "www.a.example/3".into()],
        username: "alice".into(),
    };
    // Completed long ago, failed, running, queued.
    let all = [
        task(c.id, "t-old", "purge", T0 - 40 * 86_400_000, T0 - 40 * 86_400_000 + 5000, false),
        task(c.id, "t-failed", "config.deploy", now - 90_000, now - 30_000, true),
        task(c.id, "t-running", "purge", now - 1000, now + 5000, false),
        task(c.id, "t-queued", "networklist.deploy", now + 10_000, now + 20_000, false),
    ];
    for t in &all {
        store.create_purge(&purge(&t.id), t, &event).await.unwrap();
    }
    // Read back with who started it, what it changed, and the purge it tracks (its number and first patterns).
    let summary = PurgeSummary { id: 3, action: "PURGE".into(), uri_count: 4, sample: purge("t-running").sample };
    let running = TaskRecord { purge: Some(summary.clone()), ..all[2].clone() };
    assert_eq!(store.task(c.id, "t-running").await.unwrap(), Some(running.clone()));
    assert_eq!(store.task(c.id + 1, "t-running").await.unwrap(), None);
    let filter = |status: Option<TaskStatus>, since: Option<i64>, operation: Option<&str>| TaskFilter {
        now_ms: now,
        since_ms: since,
        status,
        operation: operation.map(str::to_string),
    };
    fn ids(found: (Vec<TaskRecord>, u64)) -> (Vec<String>, u64) {
        (found.0.into_iter().map(|t| t.id).collect(), found.1)
    }
    fn named(ids: &[&str], total: u64) -> (Vec<String>, u64) {
        (ids.iter().map(|s| s.to_string()).collect(), total)
    }
    let page = store.tasks(c.id, &filter(None, None, None), 1, 1).await.unwrap();
    assert_eq!(page.0, vec![running], "the page's tasks carry their purges");
    let newest_first = vec!["t-queued", "t-running", "t-failed", "t-old"];
    assert_eq!(ids(store.tasks(c.id, &filter(None, None, None), 0, 10).await.unwrap()), named(&newest_first, 4));
    assert_eq!(
        ids(store.tasks(c.id, &filter(None, None, None), 1, 2).await.unwrap()),
        named(&["t-running", "t-failed"], 4)
    );
    for (status, id) in [
        (TaskStatus::Queued, "t-queued"),
        (TaskStatus::Running, "t-running"),
        (TaskStatus::Failed, "t-failed"),
        (TaskStatus::Completed, "t-old"),
    ] {
        assert_eq!(ids(store.tasks(c.id, &filter(Some(status), None, None), 0, 10).await.unwrap()), named(&[id], 1));
    }
    let since = ids(store.tasks(c.id, &filter(None, Some(now - 60_000), None), 0, 10).await.unwrap());
    assert_eq!(since, named(&["t-queued", "t-running", "t-failed"], 3), "updated after the time");
    let purges = ids(store.tasks(c.id, &filter(None, None, Some("purge")), 0, 10).await.unwrap());
    assert_eq!(purges, named(&["t-running", "t-old"], 2));

    assert_eq!(store.prune_tasks(T0 - 30 * 86_400_000).await.unwrap(), 1);
    assert_eq!(store.task(c.id, "t-old").await.unwrap(), None);
    assert_eq!(store.recent_purges(c.id, 10).await.unwrap().len(), 3, "with its purge transaction");
    assert_eq!(store.prune_tasks(T0 - 30 * 86_400_000).await.unwrap(), 0);
}

fn version(v: u64, config: &str) -> ConfigVersionRecord {
    ConfigVersionRecord {
        version: v,
        etag: etag(v, config),
        config: config.into(),
        author: "alice".into(),
        created_ms: T0 + v as i64,
        comment: format!("v{v}"),
    }
}

fn node(key: &str) -> ReadOnly {
    ReadOnly {
        kind: "origin".into(),
        key: key.into(),
        created: "2026-01-01T00:00:00.000Z".into(),
        author: "alice".into(),
    }
}

async fn properties_and_compare_and_swap(store: Arc<dyn Store>) {
    let c = acme(store.as_ref()).await;
    let event = audit(c.id, op::CONFIG_UPDATE, Target::property("shop"));
    let deploy = |id: &str| task(c.id, id, "config.deploy", T0, T0 + 5000, false);
    let first = version(1, r#"{"name":"shop","n":1}"#);
    let p = store.create_property(c.id, "shop", &first, &[node("k1")], &deploy("d1"), &event).await.unwrap();
    assert_eq!((p.name.as_str(), p.version), ("shop", 1));
    let err = store.create_property(c.id, "shop", &first, &[], &deploy("d1b"), &event).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict("property")), "{err:?}");
    assert_eq!(store.task(c.id, "d1b").await.unwrap(), None, "nothing of a refused creation is stored");
    store.create_property(c.id, "blog", &version(1, "{}"), &[], &deploy("d2"), &event).await.unwrap();
    let names: Vec<_> = store.properties(c.id).await.unwrap().into_iter().map(|(p, _)| p.name).collect();
    assert_eq!(names, ["blog", "shop"]);
    let (found, current) = store.property(c.id, "shop").await.unwrap().unwrap();
    assert_eq!((found, current), (p.clone(), first.clone()));
    assert_eq!(store.property(c.id + 1, "shop").await.unwrap(), None);

    // Compare and swap: from version 1, many updates at once; exactly one becomes version 2.
    let attempts: Vec<_> = (0..16)
        .map(|i| {
            let (store, event) = (store.clone(), event.clone());
            tokio::spawn(async move {
                let next = version(2, &format!(r#"{{"name":"shop","n":{}}}"#, 100 + i));
                store
                    .update_property_config(p.id, 1, &next, &[node(&format!("k-{i}"))], &deploy_task(c.id, i), &event)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut won = 0;
    for a in attempts {
        won += a.await.unwrap() as usize;
    }
    assert_eq!(won, 1, "one update per version");
    let (p2, v2) = store.property(c.id, "shop").await.unwrap().unwrap();
    assert_eq!(p2.version, 2);
    let keys: Vec<String> = std::iter::once("k1".to_string()).chain((0..16).map(|i| format!("k-{i}"))).collect();
    let nodes = store.property_nodes(p.id, &keys).await.unwrap();
    assert_eq!(nodes.len(), 2, "the first version's node and the winner's: {nodes:?}");
    let many: Vec<String> = (0..1200).map(|i| format!("key-{i}")).chain(["k1".to_string()]).collect();
    assert_eq!(store.property_nodes(p.id, &many).await.unwrap(), vec![node("k1")], "keys in chunks");
    assert_eq!(recorded(store.as_ref(), c.id, op::CONFIG_UPDATE).await, 3, "two creations and the one update");

    // The history: newest first, without the configurations; one version with it; versions by content.
    let history = store.config_versions(p.id).await.unwrap();
    assert_eq!(history.iter().map(|v| (v.version, v.config.as_str())).collect::<Vec<_>>(), [(2, ""), (1, "")]);
    assert_eq!(store.config_version(p.id, 2).await.unwrap(), Some(v2.clone()));
    assert_eq!(store.config_version(p.id, 3).await.unwrap(), None);
    let hash = content_hash(&first.config);
    assert_eq!(store.config_version_with_content(p.id, &hash).await.unwrap(), Some(1));
    let v3 = version(3, &first.config);
    assert!(store.update_property_config(p.id, 2, &v3, &[], &deploy("d3"), &event).await.unwrap());
    assert_eq!(store.config_version_with_content(p.id, &hash).await.unwrap(), Some(3), "the newest");
    assert_eq!(store.config_version_with_content(p.id, "0000000000000000").await.unwrap(), None);
}

/// Customer `globex` with admin `gina` (id `u-gina`).
async fn globex(store: &dyn Store) -> Customer {
    let c = NewCustomer { name: "globex".into(), display_name: "Globex".into(), contact_email: String::new() };
    let target = Target { kind: "account", id: "globex".into(), name: "globex".into() };
    store
        .create_customer(c, &[user("u-gina", "gina", "admin")], T0, &audit(0, op::CUSTOMER_CREATE, target))
        .await
        .unwrap()
}

/// A configuration of property `name` with these host patterns, as stored.
fn hosts_config(name: &str, hosts: &[&str]) -> String {
    let patterns: Vec<_> = hosts.iter().map(|h| serde_json::json!({"id": h, "pattern": h})).collect();
    serde_json::json!({"name": name, "host_patterns": patterns}).to_string()
}

/// Creates property `name` of `c` claiming `hosts`.
async fn create_with_hosts(
    store: Arc<dyn Store>,
    c: Customer,
    name: String,
    hosts: Vec<String>,
) -> Result<edge_server::store::PropertyRecord, StoreError> {
    let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let event = audit(c.id, op::PROPERTY_CREATE, Target::property(&name));
    let task = task(c.id, &format!("{}-{name}", c.name), "config.deploy", T0, T0 + 5000, false);
    store.create_property(c.id, &name, &version(1, &hosts_config(&name, &hosts)), &[], &task, &event).await
}

async fn host_claims_are_one_propertys_across_customers(store: Arc<dyn Store>) {
    let (acme, globex) = (acme(store.as_ref()).await, globex(store.as_ref()).await);
    let create = |c: &Customer, name: &str, hosts: &[&str]| {
        create_with_hosts(store.clone(), c.clone(), name.to_string(), hosts.iter().map(|h| h.to_string()).collect())
    };
    let claimed = |e: Result<_, StoreError>| matches!(e, Err(StoreError::HostClaimed(_)));
    let shop = create(&acme, "shop", &["www.shop.example", "*.img.shop.example"]).await.unwrap();
    assert_eq!(store.host_claims(acme.id).await.unwrap(), ["*.img.shop.example", "www.shop.example"]);
    let (owner, property) = store.host_claim("www.shop.example").await.unwrap().unwrap();
    assert_eq!((owner.name.as_str(), property.name.as_str()), ("acme", "shop"));
    assert_eq!(store.host_claim("shop.example").await.unwrap(), None);

    // Another customer: not the same pattern, nor one covering or covered by acme's; nothing of it is stored.
    for hosts in [&["www.shop.example"][..], &["*.shop.example"], &["a.img.shop.example"], &["*.x.img.shop.example"]] {
        assert!(claimed(create(&globex, "shop", hosts).await), "{hosts:?}");
    }
    assert_eq!(store.property(globex.id, "shop").await.unwrap(), None);
    assert_eq!(store.task(globex.id, "globex-shop").await.unwrap(), None);
    assert!(store.host_claims(globex.id).await.unwrap().is_empty());
    // The same account: an overlapping pattern in another property is its own routing; the same one is not.
    create(&acme, "cdn", &["a.img.shop.example"]).await.unwrap();
    assert!(claimed(create(&acme, "blog", &["www.shop.example"]).await));

    // An update releases what it no longer lists and claims what it adds, refused like a creation.
    let event = audit(acme.id, op::CONFIG_UPDATE, Target::property("shop"));
    let next = version(2, &hosts_config("shop", &["*.img.shop.example", "m.shop.example"]));
    assert!(
        store
            .update_property_config(
                shop.id,
                1,
                &next,
                &[],
                &task(acme.id, "u2", "config.deploy", T0, T0, false),
                &event
            )
            .await
            .unwrap()
    );
    assert_eq!(
        store.host_claims(acme.id).await.unwrap(),
        ["*.img.shop.example", "a.img.shop.example", "m.shop.example"]
    );
    create(&globex, "shop", &["www.shop.example"]).await.unwrap();
    let taken = version(3, &hosts_config("shop", &["*.img.shop.example", "www.shop.example"]));
    let refused = store
        .update_property_config(shop.id, 2, &taken, &[], &task(acme.id, "u3", "config.deploy", T0, T0, false), &event)
        .await;
    assert!(matches!(refused, Err(StoreError::HostClaimed(_))), "{refused:?}");
    assert_eq!(
        store.property(acme.id, "shop").await.unwrap().unwrap().0.version,
        2,
        "the refused update stored nothing"
    );

    // Two customers claiming overlapping patterns at once: one of them gets them all.
    let racers: Vec<_> = (0..12)
        .map(|i| {
            let (c, hosts) = if i % 2 == 0 {
                (acme.clone(), vec!["*.race.example".to_string()])
            } else {
                (globex.clone(), vec![format!("h{i}.race.example")])
            };
            let store = store.clone();
            tokio::spawn(async move {
                let name = c.name.clone();
                create_with_hosts(store, c, format!("race-{i}"), hosts).await.is_ok().then_some(name)
            })
        })
        .collect();
    let mut winners = Vec::new();
    for r in racers {
        winners.extend(r.await.unwrap());
    }
    assert!(!winners.is_empty());
    assert!(winners.iter().all(|w| *w == winners[0]), "one customer owns race.example: {winners:?}");
}

fn deploy_task(customer: i64, i: usize) -> TaskRecord {
    task(customer, &format!("cas-{i}"), "config.deploy", T0, T0 + 5000, false)
}

async fn purges_and_their_rate_limit(store: Arc<dyn Store>) {
    let c = acme(store.as_ref()).await;
    let event = audit(c.id, op::PURGE, Target::purge("PURGE"));
    let mut ids = Vec::new();
    for i in 0..3 {
        let t = task(c.id, &format!("p{i}"), "purge", T0 + i, T0 + i + 5000, false);
        let purge = PurgeRecord {
            id: 0,
            customer_id: c.id,
            task_id: t.id.clone(),
            action: "PURGE".into(),
            uri_count: 2,
            uris: r#"["a","b"]"#.into(),
            sample: vec!["a".into(), "b".into()],
            username: "alice".into(),
        };
        ids.push(store.create_purge(&purge, &t, &event).await.unwrap());
    }
    assert_eq!(ids, [1, 2, 3], "numbered per customer");
    let (purge, t) = store.purge(c.id, ids[1]).await.unwrap().unwrap();
    assert_eq!((purge.id, purge.task_id.as_str(), purge.uri_count, t.id.as_str()), (ids[1], "p1", 2, "p1"));
    assert_eq!(purge.sample, ["a", "b"], "its first patterns, read without the whole request");
    assert_eq!(store.purge(c.id + 1, ids[1]).await.unwrap(), None);
    let recent: Vec<i64> = store.recent_purges(c.id, 2).await.unwrap().into_iter().map(|(p, _)| p.id).collect();
    assert_eq!(recent, [ids[2], ids[1]]);
    let (records, _) = store.audit_records(c.id, &AuditFilter::default(), 0, 10).await.unwrap();
    assert!(records.iter().any(|r| r.event.target_id == ids[0].to_string()), "the record names the transaction");

    // 2 a second with a burst of 2, per customer.
    let take = |customer, at| {
        let store = store.clone();
        async move { store.take_purge_token(customer, at).await.unwrap() }
    };
    assert_eq!(take(c.id, T0).await, Ok(()));
    assert_eq!(take(c.id, T0).await, Ok(()));
    assert_eq!(take(c.id, T0).await, Err(500));
    let other = store
        .create_customer(
            NewCustomer { name: "globex".into(), display_name: "G".into(), contact_email: String::new() },
            &[],
            T0,
            &audit(0, op::CUSTOMER_CREATE, Target::property("g")),
        )
        .await
        .unwrap();
    assert_eq!(take(other.id, T0).await, Ok(()), "another customer has its own bucket");
    // ...and its own transaction numbers, from 1.
    let t = task(other.id, "g0", "purge", T0, T0 + 5000, false);
    let purge = PurgeRecord {
        id: 0,
        customer_id: other.id,
        task_id: t.id.clone(),
        action: "PURGE".into(),
        uri_count: 1,
        uris: "[]".into(),
        sample: vec![],
        username: "gina".into(),
    };
    let event = audit(other.id, op::PURGE, Target::purge("PURGE"));
    assert_eq!(store.create_purge(&purge, &t, &event).await.unwrap(), 1);
    assert_eq!(store.purge(other.id, 1).await.unwrap().map(|(p, _)| p.task_id), Some("g0".to_string()));
    assert_eq!(store.purge(c.id, 1).await.unwrap().map(|(p, _)| p.task_id), Some("p0".to_string()));
    assert_eq!(take(c.id, T0 + 250).await, Err(250));
    assert_eq!(take(c.id, T0 + 500).await, Ok(()));
    assert_eq!(take(c.id, T0 + 10_000).await, Ok(()));
    assert_eq!(take(c.id, T0 + 10_000).await, Ok(()));
    assert_eq!(take(c.id, T0 + 10_000).await, Err(500));
    // Many requests at once after a quiet time: the burst and no more.
    let at = T0 + 60_000;
    let all: Vec<_> = (0..20).map(|_| tokio::spawn(take(c.id, at))).collect();
    let mut taken = 0;
    for t in all {
        taken += t.await.unwrap().is_ok() as usize;
    }
    assert_eq!(taken, 2);
}

fn entry(id: &str, value: &str) -> EntryRecord {
    EntryRecord { id: id.into(), value: value.into(), added_by: "alice".into(), created_ms: T0 }
}

async fn network_lists_and_their_limit(store: Arc<dyn Store>) {
    let c = acme(store.as_ref()).await;
    let event = |o| audit(c.id, o, Target::network_list("l", "L"));
    let deploy = |id: &str| task(c.id, id, "networklist.deploy", T0, T0 + 5000, false);
    let list = |id: &str, name: &str, kind: &str| NetworkListRecord {
        id: id.into(),
        customer_id: c.id,
        name: name.into(),
        list_type: kind.into(),
        description: format!("{name} list"),
        deprecated: false,
        created_ms: T0,
        modified_ms: None,
        entry_count: 0,
    };
    let first = [entry("e1", "192.0.2.1"), entry("e2", "192.0.2.2")];
    store
        .create_network_list(&list("ip1", "blocked", "IP"), &first, &deploy("c1"), &event(op::LIST_CREATE))
        .await
        .unwrap();
    store
        .create_network_list(&list("geo1", "Embargo", "GEO"), &[], &deploy("c2"), &event(op::LIST_CREATE))
        .await
        .unwrap();
    store
        .create_network_list(&list("ip2", "allowed", "IP"), &[], &deploy("c3"), &event(op::LIST_CREATE))
        .await
        .unwrap();

    let found = store.network_list(c.id, "ip1").await.unwrap().unwrap();
    assert_eq!((found.name.as_str(), found.entry_count, found.deprecated), ("blocked", 2, false));
    assert_eq!(store.network_list(c.id + 1, "ip1").await.unwrap(), None);
    let names =
        |found: (Vec<NetworkListRecord>, u64)| (found.0.into_iter().map(|l| l.name).collect::<Vec<_>>(), found.1);
    assert_eq!(
        names(store.network_lists(c.id, None, true, 0, 10).await.unwrap()),
        (vec!["allowed".into(), "blocked".into(), "Embargo".into()], 3)
    );
    assert_eq!(names(store.network_lists(c.id, Some("IP"), true, 1, 10).await.unwrap()), (vec!["blocked".into()], 2));

    let update = NetworkListUpdate { deprecated: Some(true), ..NetworkListUpdate::default() };
    let updated =
        store.update_network_list(c.id, "ip2", &update, T0 + 5, &event(op::LIST_UPDATE)).await.unwrap().unwrap();
    assert_eq!((updated.name.as_str(), updated.deprecated, updated.modified_ms), ("allowed", true, Some(T0 + 5)));
    assert_eq!(names(store.network_lists(c.id, None, false, 0, 10).await.unwrap()).1, 2, "without deprecated ones");
    assert_eq!(store.update_network_list(c.id, "none", &update, T0, &event(op::LIST_UPDATE)).await.unwrap(), None);

    // Adding: values already there are counted, not added; beyond the limit nothing is written.
    let added = store
        .add_entries(
            "ip1",
            &[entry("e3", "192.0.2.3"), entry("e1b", "192.0.2.1")],
            10,
            T0 + 6,
            &deploy("a1"),
            &event(op::ENTRIES_ADD),
        )
        .await
        .unwrap();
    assert_eq!((added.added, added.already_present), (1, 1));
    let too_many: Vec<EntryRecord> = (0..8).map(|i| entry(&format!("x{i}"), &format!("198.51.100.{i}"))).collect();
    let err = store.add_entries("ip1", &too_many, 10, T0, &deploy("a2"), &event(op::ENTRIES_ADD)).await.unwrap_err();
    assert!(matches!(err, StoreError::Limit(_)), "{err:?}");
    assert_eq!(store.network_list(c.id, "ip1").await.unwrap().unwrap().entry_count, 3);
    assert_eq!(store.task(c.id, "a2").await.unwrap(), None, "nor its task");
    assert_eq!(recorded(store.as_ref(), c.id, op::ENTRIES_ADD).await, 1);

    assert_eq!(store.entry_values("ip1").await.unwrap(), ["192.0.2.1", "192.0.2.2", "192.0.2.3"], "oldest first");
    let (page, total) = store.entries("ip1", Some(".2"), 1, 10).await.unwrap();
    assert_eq!((page.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), total), (vec!["e2", "e3"], 3));
    assert_eq!(store.entries("ip1", Some("2.3"), 0, 10).await.unwrap().1, 1);
    assert_eq!(store.entry("ip1", "e2").await.unwrap(), Some(entry("e2", "192.0.2.2")));
    assert!(store.delete_entry("ip1", "e2", T0 + 7, &deploy("d1"), &event(op::ENTRY_DELETE)).await.unwrap());
    assert!(!store.delete_entry("ip1", "e2", T0 + 7, &deploy("d2"), &event(op::ENTRY_DELETE)).await.unwrap());
    assert_eq!(store.task(c.id, "d2").await.unwrap(), None, "no task for nothing deleted");
    assert_eq!(store.clear_entries("ip1", T0 + 8, &deploy("cl"), &event(op::ENTRIES_CLEAR)).await.unwrap(), 2);
    let cleared = store.network_list(c.id, "ip1").await.unwrap().unwrap();
    assert_eq!((cleared.entry_count, cleared.modified_ms), (0, Some(T0 + 8)));

    // Many additions at once to one list with room for 50: whole additions fit or are refused, never more.
    let batches: Vec<_> = (0..12)
        .map(|b| {
            let store = store.clone();
            let e = event(op::ENTRIES_ADD);
            tokio::spawn(async move {
                let entries: Vec<EntryRecord> =
                    (0..10).map(|i| entry(&format!("b{b}-{i}"), &format!("10.{b}.0.{i}"))).collect();
                store.add_entries("ip1", &entries, 50, T0 + 9, &deploy_list_task(c.id, b), &e).await
            })
        })
        .collect();
    let mut accepted = 0;
    for b in batches {
        match b.await.unwrap() {
            Ok(added) => {
                assert_eq!(added.added, 10);
                accepted += 1;
            }
            Err(StoreError::Limit(_)) => {}
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(accepted, 5, "exactly as many whole additions as fit");
    let values = store.entry_values("ip1").await.unwrap();
    assert_eq!(values.len(), 50);
    let (page, _) = store.entries("ip1", None, 0, 100).await.unwrap();
    assert_eq!(page.len(), 50);

    assert!(store.delete_network_list(c.id, "ip1", &deploy("del"), &event(op::LIST_DELETE)).await.unwrap());
    assert!(!store.delete_network_list(c.id, "ip1", &deploy("del2"), &event(op::LIST_DELETE)).await.unwrap());
    assert_eq!(store.entry_values("ip1").await.unwrap(), Vec::<String>::new(), "its entries went with it");
}

fn deploy_list_task(customer: i64, b: usize) -> TaskRecord {
    task(customer, &format!("batch-{b}"), "networklist.deploy", T0, T0 + 5000, false)
}

async fn identity_sources(store: Arc<dyn Store>) {
    let c = acme(store.as_ref()).await;
    let event = audit(c.id, op::IDENTITY_SOURCE_CREATE, Target::identity_source("corp"));
    assert_eq!(store.identity_sources(c.id).await.unwrap(), vec![]);
    store.add_identity_source(c.id, "corp", r#"{"type":"saml"}"#, &event).await.unwrap();
    store.add_identity_source(c.id, "abc", "{}", &event).await.unwrap();
    let err = store.add_identity_source(c.id, "corp", "{}", &event).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict("identity source")), "{err:?}");
    let found = store.identity_sources(c.id).await.unwrap();
    assert_eq!(found, [("abc".to_string(), "{}".to_string()), ("corp".into(), r#"{"type":"saml"}"#.into())]);
    assert_eq!(recorded(store.as_ref(), c.id, op::IDENTITY_SOURCE_CREATE).await, 2);
}

async fn sessions_touched_ended_and_purged(store: Arc<dyn Store>) {
    let c = acme(store.as_ref()).await;
    let event = |o| audit(c.id, o, Target::session("h", "alice"));
    store.create_session(&session("h1", c.id, "u-alice", T0), &event(op::SESSION_CREATE)).await.unwrap();
    store
        .create_session(&session("h2", c.id, "u-alice", T0 - 2 * 86_400_000), &event(op::SESSION_CREATE))
        .await
        .unwrap();
    let (s, customer, user) = store.session_with_user("h1").await.unwrap().unwrap();
    assert_eq!(
        (s, customer.name.as_str(), user.username.as_str()),
        (session("h1", c.id, "u-alice", T0), "acme", "alice")
    );
    assert!(store.session_with_user("nothing").await.unwrap().is_none());

    // The last use only moves forward, whichever replica saw the later request first.
    store.touch_session("h1", T0 + 2000).await.unwrap();
    store.touch_session("h1", T0 + 1000).await.unwrap();
    assert_eq!(store.session_with_user("h1").await.unwrap().unwrap().0.last_seen_ms, T0 + 2000);

    // Expired ones go, each recorded once, even when two replicas purge at the same moment.
    let purges: Vec<_> = (0..2)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.purge_sessions(T0 - 1000, T0 - 86_400_000, T0 + 3000).await.unwrap() })
        })
        .collect();
    let mut purged = 0;
    for p in purges {
        purged += p.await.unwrap();
    }
    assert_eq!(purged, 1);
    assert_eq!(recorded(store.as_ref(), c.id, op::SESSION_EXPIRE).await, 1);
    assert!(store.session_with_user("h2").await.unwrap().is_none());

    assert!(store.delete_session("h1", &event(op::SESSION_DELETE)).await.unwrap());
    assert!(!store.delete_session("h1", &event(op::SESSION_DELETE)).await.unwrap());
    assert_eq!(recorded(store.as_ref(), c.id, op::SESSION_DELETE).await, 1, "nothing recorded for nothing deleted");
}

async fn a_users_live_sessions_most_recently_used_first(store: Arc<dyn Store>) {
    let c = acme(store.as_ref()).await;
    let event = |o| audit(c.id, o, Target::session("h", "alice"));
    store.create_user(c.id, &user("u-bob", "bob", "viewer"), T0, &event(op::USER_CREATE)).await.unwrap();
    for (hash, user, at) in [
        ("h1", "u-alice", T0),
        ("h2", "u-alice", T0 + 10),
        ("h3", "u-alice", T0 + 20),
        ("idle", "u-alice", T0 - 3_600_000),
        ("old", "u-alice", T0 - 2 * 86_400_000),
        ("bobs", "u-bob", T0 + 30),
    ] {
        store.create_session(&session(hash, c.id, user, at), &event(op::SESSION_CREATE)).await.unwrap();
    }
    // `old` was used lately but created too long ago; `idle` not used lately.
    store.touch_session("old", T0).await.unwrap();
    store.touch_session("h1", T0 + 100).await.unwrap();
    let live = |limit| store.user_sessions("u-alice", T0 - 60_000, T0 - 86_400_000, limit);
    let (sessions, total) = live(2).await.unwrap();
    let hashes: Vec<&str> = sessions.iter().map(|s| s.token_hash.as_str()).collect();
    assert_eq!((hashes, total), (vec!["h1", "h3"], 3));
    assert_eq!(sessions[0], SessionRecord { last_seen_ms: T0 + 100, ..session("h1", c.id, "u-alice", T0) });
    let (sessions, total) = live(100).await.unwrap();
    assert_eq!((sessions.len(), total), (3, 3));
    assert_eq!(store.user_sessions("u-nobody", 0, 0, 10).await.unwrap(), (vec![], 0));
}

async fn audit_records_filtered_and_pruned(store: Arc<dyn Store>) {
    let c = acme(store.as_ref()).await;
    let alice = Actor::User { id: "u-alice".into(), name: "alice".into() };
    let record = |at: i64, actor: Actor, operation: &str, target: Target| {
        AuditEvent::new(c.id, at, actor, "203.0.113.5".into(), operation, target).detail("n", at - T0)
    };
    store.record_audit(&record(T0 + 10, alice.clone(), op::USER_UPDATE, Target::property("shop"))).await.unwrap();
    store.record_audit(&record(T0 + 20, alice.clone(), op::USER_CREATE, Target::account(&c))).await.unwrap();
    store
        .record_audit(
            &record(T0 + 30, Actor::Unknown("mallory".into()), op::LOGIN_FAILURE, Target::property("x")).failure(),
        )
        .await
        .unwrap();
    store.record_audit(&record(T0 + 40, alice.clone(), "user_x.other", Target::property("gone"))).await.unwrap();

    let find = |f: AuditFilter| {
        let store = store.clone();
        async move {
            let (records, total) = store.audit_records(c.id, &f, 0, 100).await.unwrap();
            (records.into_iter().map(|r| r.event.time_ms - T0).collect::<Vec<_>>(), total)
        }
    };
    // Newest first; the customer.create record of acme() is at T0.
    assert_eq!(find(AuditFilter::default()).await, (vec![40, 30, 20, 10, 0], 5));
    assert_eq!(
        find(AuditFilter { from_ms: Some(T0 + 20), to_ms: Some(T0 + 40), ..Default::default() }).await,
        (vec![30, 20], 2)
    );
    assert_eq!(find(AuditFilter { actor: Some("u-alice".into()), ..Default::default() }).await.1, 3);
    assert_eq!(find(AuditFilter { actor: Some("mallory".into()), ..Default::default() }).await, (vec![30], 1));
    assert_eq!(
        find(AuditFilter { operation: Some("user".into()), ..Default::default() }).await,
        (vec![20, 10], 2),
        "a prefix up to a dot"
    );
    assert_eq!(find(AuditFilter { operation: Some("user_".into()), ..Default::default() }).await.1, 0, "_ is itself");
    let by_target =
        AuditFilter { target_type: Some("property".into()), target_id: Some("shop".into()), ..Default::default() };
    assert_eq!(find(by_target).await, (vec![10], 1));
    let (page, total) = store.audit_records(c.id, &AuditFilter::default(), 1, 2).await.unwrap();
    assert_eq!((page.len(), total), (2, 5));
    let (records, _) = store.audit_records(c.id, &AuditFilter::default(), 0, 100).await.unwrap();
    let failure = records.iter().find(|r| r.event.operation == op::LOGIN_FAILURE).unwrap();
    assert_eq!((&failure.event.actor, failure.event.success), (&Actor::Unknown("mallory".into()), false));
    assert_eq!(failure.event.details.get("n"), Some(&serde_json::json!(30)));
    let account = records.iter().find(|r| r.event.target_type == "account").unwrap();
    assert!(account.target_exists, "the account exists");
    assert!(!records.iter().find(|r| r.event.target_id == "gone").unwrap().target_exists);
    assert_eq!(store.audit_records(c.id + 1, &AuditFilter::default(), 0, 10).await.unwrap().1, 0);

    assert_eq!(store.prune_audit(T0 + 25).await.unwrap(), 3);
    assert_eq!(find(AuditFilter::default()).await, (vec![40, 30], 2));
}

fn key(user: &str, addr: &str) -> LoginKey {
    LoginKey::new("acme", user, addr.parse::<IpAddr>().unwrap())
}

/// Reserves an attempt that must go ahead, and fails it.
async fn fail(store: &dyn Store, now: i64, k: &LoginKey) -> Vec<Lockout> {
    assert!(matches!(store.reserve_login(now, k).await.unwrap(), Decision::Proceed { .. }), "{k:?} held back");
    store.settle_login(now, k, Outcome::Failed).await.unwrap()
}

async fn login_throttling_counts(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let bob = key("bob", "203.0.113.7");
    for i in 0..3 {
        assert_eq!(s.reserve_login(0, &bob).await.unwrap(), Decision::Proceed { doublings: None }, "attempt {i}");
        s.settle_login(0, &bob, Outcome::Failed).await.unwrap();
    }
    assert_eq!(s.reserve_login(0, &bob).await.unwrap(), Decision::Proceed { doublings: Some(0) }, "slowed after 3");
    assert!(s.settle_login(0, &bob, Outcome::Failed).await.unwrap().is_empty());
    // Usernames count without regard to case.
    let verdict =
        throttle::reserve(s, &throttle::Waits::default(), 0, &key("BOB", "203.0.113.7"), Duration::from_millis(100))
            .await
            .unwrap();
    assert_eq!(verdict, Verdict::Proceed(Duration::from_millis(200)));
    s.settle_login(0, &bob, Outcome::Failed).await.unwrap();
    for _ in 0..4 {
        assert!(fail(s, 1000, &bob).await.is_empty());
    }
    assert_eq!(fail(s, 1000, &bob).await, [Lockout::UsernameFromAddress], "the 10th failure locks, once");
    assert_eq!(s.reserve_login(1000, &bob).await.unwrap(), Decision::Refuse { retry_after_secs: 900 });
    // The same user from elsewhere, and another user from here, go on.
    assert!(matches!(s.reserve_login(1000, &key("bob", "198.51.100.1")).await.unwrap(), Decision::Proceed { .. }));
    s.settle_login(1000, &key("bob", "198.51.100.1"), Outcome::Released).await.unwrap();
    let carol = key("carol", "203.0.113.7");
    assert_eq!(s.reserve_login(1000, &carol).await.unwrap(), Decision::Proceed { doublings: None });
    s.settle_login(1000, &carol, Outcome::Released).await.unwrap();
    assert_eq!(
        s.reserve_login(999 + throttle::WINDOW_MS, &bob).await.unwrap(),
        Decision::Refuse { retry_after_secs: 1 }
    );
    assert_eq!(s.reserve_login(1000 + throttle::WINDOW_MS, &bob).await.unwrap(), Decision::Proceed { doublings: None });
    s.settle_login(1000 + throttle::WINDOW_MS, &bob, Outcome::Released).await.unwrap();

    // The right password without the code is released: the failures stay; only a complete login clears.
    let dave = key("dave", "203.0.113.8");
    for _ in 0..9 {
        fail(s, 0, &dave).await;
    }
    assert!(matches!(s.reserve_login(0, &dave).await.unwrap(), Decision::Proceed { .. }));
    s.settle_login(0, &dave, Outcome::Released).await.unwrap();
    assert_eq!(fail(s, 0, &dave).await, [Lockout::UsernameFromAddress]);
    let erin = key("erin", "203.0.113.9");
    for _ in 0..9 {
        fail(s, 0, &erin).await;
    }
    assert!(matches!(s.reserve_login(0, &erin).await.unwrap(), Decision::Proceed { .. }));
    s.settle_login(0, &erin, Outcome::Succeeded).await.unwrap();
    for _ in 0..9 {
        assert!(fail(s, 0, &erin).await.is_empty(), "cleared by the complete login");
    }

    // An address is locked after many usernames; IPv6 counts by /64.
    for i in 0..throttle::ADDR_LOCK_AFTER - 1 {
        assert!(fail(s, 0, &key(&format!("user{i}"), &format!("2001:db8:0:1::{:x}", i + 1))).await.is_empty());
    }
    assert_eq!(fail(s, 0, &key("last", "2001:db8:0:1:ffff::1")).await, [Lockout::Address]);
    assert!(matches!(
        s.reserve_login(0, &key("someone", "2001:db8:0:1::abcd")).await.unwrap(),
        Decision::Refuse { .. }
    ));
    assert!(matches!(s.reserve_login(0, &key("someone", "2001:db8:0:2::1")).await.unwrap(), Decision::Proceed { .. }));

    // Counts past their window and expired reservations are forgotten.
    let later = 2 * throttle::WINDOW_MS;
    assert!(s.prune_logins(later).await.unwrap() > 0);
    assert_eq!(s.prune_logins(later).await.unwrap(), 0);
    assert_eq!(s.reserve_login(later, &erin).await.unwrap(), Decision::Proceed { doublings: None });
}

async fn login_throttling_under_parallel_attempts(store: Arc<dyn Store>) {
    // 30 guesses at once for one username from one address: exactly the limit is checked, the rest refused.
    // Settlements wake the waiting attempts of this process, as the server's do.
    let bob = key("bob", "203.0.113.7");
    let waits = Arc::new(throttle::Waits::default());
    let guesses: Vec<_> = (0..30)
        .map(|_| {
            let (store, bob, waits) = (store.clone(), bob.clone(), waits.clone());
            tokio::spawn(async move {
                match throttle::reserve(store.as_ref(), &waits, 0, &bob, Duration::ZERO).await.unwrap() {
                    Verdict::Proceed(_) => {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        let locked = store.settle_login(0, &bob, Outcome::Failed).await.unwrap();
                        waits.settled(&bob, !locked.is_empty());
                        true
                    }
                    Verdict::Refuse { .. } => false,
                }
            })
        })
        .collect();
    let mut checked = 0;
    for g in guesses {
        checked += g.await.unwrap() as usize;
    }
    assert_eq!(checked, throttle::PAIR_LOCK_AFTER as usize);
    assert_eq!(waits.keys_kept(), 0, "nothing kept once no one waits");

    // With the right password they are released: all go through, waiting for pending ones rather than refused.
    // Each waits on its own, as on replicas of their own: only the back-off finds the settlements.
    let carol = key("carol", "203.0.113.8");
    let logins: Vec<_> = (0..30)
        .map(|_| {
            let (store, carol) = (store.clone(), carol.clone());
            tokio::spawn(async move {
                let waits = throttle::Waits::default();
                let verdict = throttle::reserve(store.as_ref(), &waits, 0, &carol, Duration::ZERO).await.unwrap();
                store.settle_login(0, &carol, Outcome::Succeeded).await.unwrap();
                verdict
            })
        })
        .collect();
    for l in logins {
        assert!(matches!(l.await.unwrap(), Verdict::Proceed(_)));
    }
}

async fn wrong_codes_are_counted_per_account_whatever_the_address(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let with_code = |addr: &str| key("dave", addr).with_code(true);
    // A wrong password with a code is no guess of the code.
    assert!(matches!(s.reserve_login(0, &with_code("198.51.100.1")).await.unwrap(), Decision::Proceed { .. }));
    assert!(s.settle_login(0, &with_code("198.51.100.1"), Outcome::Failed).await.unwrap().is_empty());
    // Wrong codes, each from its own address: the fifth locks the account's codes, reported once.
    for i in 1..=throttle::CODE_LOCK_AFTER {
        let k = with_code(&format!("203.0.113.{i}"));
        assert!(matches!(s.reserve_login(i.into(), &k).await.unwrap(), Decision::Proceed { .. }), "code {i}");
        let locks = s.settle_login(i.into(), &k, Outcome::FailedCode).await.unwrap();
        assert_eq!(locks, if i == throttle::CODE_LOCK_AFTER { vec![Lockout::Codes] } else { vec![] }, "code {i}");
    }
    let fresh = with_code("192.0.2.1");
    assert_eq!(s.reserve_login(1000, &fresh).await.unwrap(), Decision::Refuse { retry_after_secs: 900 });
    assert_eq!(s.login_decision(1000, &fresh).await.unwrap(), Decision::Refuse { retry_after_secs: 900 });
    // The password alone is not held back by it.
    assert!(matches!(s.reserve_login(1000, &key("dave", "192.0.2.1")).await.unwrap(), Decision::Proceed { .. }));
    s.settle_login(1000, &key("dave", "192.0.2.1"), Outcome::Released).await.unwrap();
    // Pending code checks count against the limit: with four wrong ones, a second at once waits.
    let eve = |addr: &str| key("eve", addr).with_code(true);
    for i in 1..throttle::CODE_LOCK_AFTER {
        let k = eve(&format!("203.0.113.{i}"));
        s.reserve_login(0, &k).await.unwrap();
        s.settle_login(0, &k, Outcome::FailedCode).await.unwrap();
    }
    assert!(matches!(s.reserve_login(0, &eve("192.0.2.7")).await.unwrap(), Decision::Proceed { .. }));
    assert_eq!(s.reserve_login(0, &eve("192.0.2.8")).await.unwrap(), Decision::Wait);
    assert_eq!(s.login_decision(0, &eve("192.0.2.8")).await.unwrap(), Decision::Wait);
    s.settle_login(0, &eve("192.0.2.7"), Outcome::Released).await.unwrap();
    // An administrator's reset forgives them; so does a window without wrong codes.
    s.forgive_logins("acme", "DAVE").await.unwrap();
    assert!(matches!(s.reserve_login(1000, &fresh).await.unwrap(), Decision::Proceed { .. }));
    s.settle_login(1000, &fresh, Outcome::Released).await.unwrap();
    let later = throttle::WINDOW_MS + 10;
    assert!(matches!(s.reserve_login(later, &eve("192.0.2.9")).await.unwrap(), Decision::Proceed { .. }));
}

async fn text_with_nul_is_refused(store: Arc<dyn Store>) {
    let c = acme(store.as_ref()).await;
    let event = audit(c.id, op::USER_CREATE, Target::property("u"));
    let err = store.create_user(c.id, &user("u-nul", "nul\0name", "viewer"), T0, &event).await.unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)), "{err:?}");
    assert!(matches!(store.customer_by_name("a\0b").await, Err(StoreError::Invalid(_))));
    assert_eq!(store.list_users(c.id, None, 0, 10).await.unwrap().1, 1, "nothing written");
    assert_eq!(recorded(store.as_ref(), c.id, op::USER_CREATE).await, 0);
}
