//! The store contract of API tokens (see the suite's module): stored by the hash of their secret, found with
//! their customer and user in one read, listed newest first, changed, rolled, revoked, touched now and then,
//! bounded per user even under parallel creation, and gone with their user.

use std::sync::Arc;

use edge_api::{audit::op, tokens::MAX_TOKENS_PER_USER};
use edge_server::store::{NewToken, Store, StoreError, Target, TokenChange, UserUpdate};

use super::{T0, acme, audit, recorded, user};

fn token(id: &str, customer: i64, user: &str, at: i64) -> NewToken {
    NewToken {
        id: id.into(),
        customer_id: customer,
        user_id: user.into(),
        secret_hash: format!("hash-{id}"),
        hint: "edge_AbCd".into(),
        name: format!("token {id}"),
        scopes: vec!["stats:read".into(), "purge".into()],
        allowed_cidrs: vec!["10.0.0.0/8".into()],
        expires_ms: Some(at + 3_600_000),
        created_ms: at,
    }
}

pub async fn tokens_stored_found_changed_rolled_and_revoked(store: Arc<dyn Store>) {
    let c = acme(store.as_ref()).await;
    let event = |o| audit(c.id, o, Target { kind: "token", id: "t".into(), name: "t".into() });
    store.create_user(c.id, &user("u-bob", "bob", "operator"), T0, &event(op::USER_CREATE)).await.unwrap();
    let made = store.create_token(&token("t1", c.id, "u-alice", T0), &event(op::TOKEN_CREATE)).await.unwrap().unwrap();
    assert_eq!((made.username.as_str(), made.scopes.len(), made.last_used_ms), ("alice", 2, None));
    assert_eq!(made.allowed_cidrs, ["10.0.0.0/8"]);
    store.create_token(&token("t2", c.id, "u-bob", T0 + 1), &event(op::TOKEN_CREATE)).await.unwrap();
    assert_eq!(store.create_token(&token("t3", c.id, "u-nobody", T0), &event(op::TOKEN_CREATE)).await.unwrap(), None);
    assert_eq!(recorded(store.as_ref(), c.id, op::TOKEN_CREATE).await, 2, "nothing recorded for nothing made");

    // Found by the hash of the secret, with its customer and user.
    let (found, customer, owner) = store.token_by_secret("hash-t1").await.unwrap().unwrap();
    assert_eq!((found, customer.name.as_str(), owner.username.as_str()), (made.clone(), "acme", "alice"));
    assert!(store.token_by_secret("hash-nothing").await.unwrap().is_none());
    assert_eq!(store.token(c.id, "t1").await.unwrap(), Some(made.clone()));
    assert_eq!(store.token(c.id + 1, "t1").await.unwrap(), None, "by customer");

    // Newest first, of the customer or of one user, a page and the total.
    let (page, total) = store.list_tokens(c.id, None, 0, 1).await.unwrap();
    assert_eq!((page[0].id.as_str(), total), ("t2", 2));
    let (page, total) = store.list_tokens(c.id, Some("u-alice"), 0, 10).await.unwrap();
    assert_eq!((page.len(), page[0].id.as_str(), total), (1, "t1", 1));
    assert_eq!(store.list_tokens(c.id + 1, None, 0, 10).await.unwrap().1, 0);

    // Fields change on their own; an expiry can be taken away.
    let change = TokenChange { name: Some("deploy".into()), expires_ms: Some(None), ..TokenChange::default() };
    let changed = store.update_token(c.id, "t1", &change, &event(op::TOKEN_UPDATE)).await.unwrap().unwrap();
    assert_eq!(
        (changed.name.as_str(), changed.expires_ms, changed.scopes.clone()),
        ("deploy", None, made.scopes.clone())
    );
    let change = TokenChange {
        scopes: Some(vec!["audit:read".into()]),
        allowed_cidrs: Some(vec![]),
        expires_ms: Some(Some(T0 + 5)),
        ..TokenChange::default()
    };
    let changed = store.update_token(c.id, "t1", &change, &event(op::TOKEN_UPDATE)).await.unwrap().unwrap();
    assert_eq!((changed.name.as_str(), changed.expires_ms), ("deploy", Some(T0 + 5)));
    assert_eq!((changed.scopes, changed.allowed_cidrs), (vec!["audit:read".to_string()], vec![]));
    assert_eq!(store.update_token(c.id + 1, "t1", &change, &event(op::TOKEN_UPDATE)).await.unwrap(), None);
    assert_eq!(recorded(store.as_ref(), c.id, op::TOKEN_UPDATE).await, 2);

    // A use is written unless one was at or after the given time: replicas racing write it about once.
    store.touch_token("t1", T0 + 10, "192.0.2.1", T0 + 10 - 60_000).await.unwrap();
    store.touch_token("t1", T0 + 20, "192.0.2.2", T0 + 20 - 60_000).await.unwrap();
    let t = store.token(c.id, "t1").await.unwrap().unwrap();
    assert_eq!((t.last_used_ms, t.last_used_from.as_deref()), (Some(T0 + 10), Some("192.0.2.1")));
    store.touch_token("t1", T0 + 70_000, "192.0.2.3", T0 + 10_001).await.unwrap();
    assert_eq!(store.token(c.id, "t1").await.unwrap().unwrap().last_used_ms, Some(T0 + 70_000));

    // Rolled: the old secret finds nothing, the new one the same token.
    let rolled = store.roll_token(c.id, "t1", "hash-new", "edge_WxYz", &event(op::TOKEN_ROLL)).await.unwrap().unwrap();
    assert_eq!((rolled.id.as_str(), rolled.hint.as_str()), ("t1", "edge_WxYz"));
    assert!(store.token_by_secret("hash-t1").await.unwrap().is_none());
    assert_eq!(store.token_by_secret("hash-new").await.unwrap().unwrap().0.id, "t1");
    assert_eq!(store.roll_token(c.id + 1, "t1", "h", "e", &event(op::TOKEN_ROLL)).await.unwrap(), None);

    assert!(store.delete_token(c.id, "t1", &event(op::TOKEN_DELETE)).await.unwrap());
    assert!(!store.delete_token(c.id, "t1", &event(op::TOKEN_DELETE)).await.unwrap());
    assert!(store.token_by_secret("hash-new").await.unwrap().is_none());
    assert_eq!(recorded(store.as_ref(), c.id, op::TOKEN_DELETE).await, 1, "nothing recorded for nothing revoked");

    // Disabling a user revokes its tokens; so does deleting one.
    let disable = UserUpdate { enabled: Some(false), ..UserUpdate::default() };
    store.update_user(c.id, "u-bob", &disable, &event(op::USER_UPDATE)).await.unwrap().unwrap();
    assert!(store.token_by_secret("hash-t2").await.unwrap().is_none());
    store.create_user(c.id, &user("u-carol", "carol", "operator"), T0, &event(op::USER_CREATE)).await.unwrap();
    store.create_token(&token("t4", c.id, "u-carol", T0), &event(op::TOKEN_CREATE)).await.unwrap().unwrap();
    assert!(store.delete_user(c.id, "u-carol", &event(op::USER_DELETE)).await.unwrap());
    assert_eq!(store.list_tokens(c.id, None, 0, 10).await.unwrap().1, 0);
}

pub async fn a_user_holds_a_bounded_number_of_tokens_even_under_parallel_creation(store: Arc<dyn Store>) {
    let c = acme(store.as_ref()).await;
    let event = audit(c.id, op::TOKEN_CREATE, Target { kind: "token", id: "t".into(), name: "t".into() });
    let below = MAX_TOKENS_PER_USER - 5;
    for i in 0..below {
        store.create_token(&token(&format!("a{i}"), c.id, "u-alice", T0), &event).await.unwrap().unwrap();
    }
    let attempts: Vec<_> = (0..12)
        .map(|i| {
            let (store, event) = (store.clone(), event.clone());
            tokio::spawn(async move { store.create_token(&token(&format!("p{i}"), c.id, "u-alice", T0), &event).await })
        })
        .collect();
    let (mut made, mut refused) = (0, 0);
    for a in attempts {
        match a.await.unwrap() {
            Ok(Some(_)) => made += 1,
            Err(StoreError::Limit(_)) => refused += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((made, refused), (5, 7));
    assert_eq!(store.list_tokens(c.id, Some("u-alice"), 0, 1000).await.unwrap().1, MAX_TOKENS_PER_USER);
    assert_eq!(recorded(store.as_ref(), c.id, op::TOKEN_CREATE).await, MAX_TOKENS_PER_USER);
}
