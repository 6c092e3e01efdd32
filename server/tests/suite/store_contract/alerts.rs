//! The store contract of alerting (`store::Alerts`), on both stores: rules and their limit, evaluations written
//! by compare-and-swap with their events and deliveries, the round one caller claims, deliveries claimed,
//! leased and finished, silences in force, and pruning to the bounds.

use std::sync::Arc;

use edge_api::{alerts::MAX_RULES, audit::op};
use edge_server::store::{
    AttemptOutcome, ChannelRecord, DeliveryRecord, Evaluation, EventFilter, EventRecord, RuleRecord, SilenceRecord,
    Store, StoreError, Target,
};

use super::{T0, acme, audit, globex, run};

contract!(
    alert_rules_are_one_customers_and_bounded,
    an_evaluation_is_written_once_for_the_rule_as_read,
    one_caller_claims_each_round,
    deliveries_are_claimed_leased_and_finished,
    silences_in_force_and_their_limit,
    alert_events_and_delivery_logs_are_pruned_to_their_bounds,
);

fn rule(customer: i64, id: &str) -> RuleRecord {
    RuleRecord {
        id: id.into(),
        customer_id: customer,
        name: format!("rule {id}"),
        definition: "{}".into(),
        enabled: true,
        created_ms: T0,
        modified_ms: T0,
        author: "alice".into(),
        state: "ok".into(),
        status: "{}".into(),
        evaluated_ms: 0,
    }
}

fn channel(customer: i64, id: &str) -> ChannelRecord {
    ChannelRecord {
        id: id.into(),
        customer_id: customer,
        name: format!("channel {id}"),
        kind: "webhook".into(),
        addresses: vec![],
        url: Some("https://hooks.example/x".into()),
        secret: Some("s".into()),
        created_ms: T0,
        modified_ms: T0,
    }
}

fn delivery(customer: i64, id: &str, channel: &str, at: i64) -> DeliveryRecord {
    DeliveryRecord {
        id: id.into(),
        customer_id: customer,
        channel_id: channel.into(),
        rule_id: Some("r1".into()),
        rule_name: "rule r1".into(),
        kind: "firing".into(),
        created_ms: at,
        status: "pending".into(),
        attempts: 0,
        next_attempt_ms: at,
        lease_ms: 0,
        response_status: None,
        error: None,
        sent_ms: None,
        payload: "{}".into(),
    }
}

fn event(customer: i64, id: &str, at: i64) -> EventRecord {
    EventRecord {
        id: id.into(),
        customer_id: customer,
        rule_id: "r1".into(),
        rule_name: "rule r1".into(),
        severity: "critical".into(),
        time_ms: at,
        from_state: "ok".into(),
        to_state: "firing".into(),
        value: Some("0.05".into()),
        silenced: false,
        details: "{}".into(),
    }
}

fn target(id: &str) -> Target {
    Target::alert("alert_rule", id, id)
}

async fn alert_rules_are_one_customers_and_bounded(store: Arc<dyn Store>) {
    let (a, g) = (acme(&*store).await.id, globex(&*store).await.id);
    for i in 0..MAX_RULES {
        let id = format!("r{i:03}");
        store.create_alert_rule(&rule(a, &id), &audit(a, op::ALERT_RULE_CREATE, target(&id))).await.unwrap();
    }
    let over = store.create_alert_rule(&rule(a, "over"), &audit(a, op::ALERT_RULE_CREATE, target("over"))).await;
    assert!(matches!(over, Err(StoreError::Limit(_))), "{over:?}");
    store.create_alert_rule(&rule(g, "g1"), &audit(g, op::ALERT_RULE_CREATE, target("g1"))).await.unwrap();
    let (page, total) = store.alert_rules(a, 10, 5).await.unwrap();
    assert_eq!(
        (page.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), total),
        (vec!["r010", "r011", "r012", "r013", "r014"], 200)
    );
    assert!(store.alert_rule(g, "r001").await.unwrap().is_none(), "another customer's rule is not found");
    let mut changed = rule(a, "r001");
    changed.state = "firing".into();
    changed.name = "renamed".into();
    assert!(store.update_alert_rule(&changed, &audit(a, op::ALERT_RULE_UPDATE, target("r001"))).await.unwrap());
    changed.customer_id = g;
    assert!(!store.update_alert_rule(&changed, &audit(g, op::ALERT_RULE_UPDATE, target("r001"))).await.unwrap());
    let counts = store.alert_rule_counts(a).await.unwrap();
    assert_eq!((counts.rules, counts.firing, counts.pending), (200, 1, 0));
    assert!(!store.delete_alert_rule(g, "r001", &audit(g, op::ALERT_RULE_DELETE, target("r001"))).await.unwrap());
    assert!(store.delete_alert_rule(a, "r001", &audit(a, op::ALERT_RULE_DELETE, target("r001"))).await.unwrap());
    assert_eq!(store.rules_to_evaluate().await.unwrap().len(), 200, "199 of acme's and globex's one");
}

async fn an_evaluation_is_written_once_for_the_rule_as_read(store: Arc<dyn Store>) {
    let a = acme(&*store).await.id;
    store.create_alert_rule(&rule(a, "r1"), &audit(a, op::ALERT_RULE_CREATE, target("r1"))).await.unwrap();
    store.create_alert_channel(&channel(a, "c1"), &audit(a, op::ALERT_CHANNEL_CREATE, target("c1"))).await.unwrap();
    let evaluation = |id: &str| Evaluation {
        customer_id: a,
        rule_id: "r1".into(),
        expected_ms: 0,
        evaluated_ms: T0,
        state: "firing".into(),
        status: "{}".into(),
        events: vec![event(a, id, T0)],
        deliveries: vec![delivery(a, id, "c1", T0), delivery(a, &format!("{id}-gone"), "deleted channel", T0)],
    };
    // Two evaluations of the same round at once (two replicas): one is written.
    let (s1, s2) = (store.clone(), store.clone());
    let (e1, e2) = (evaluation("e1"), evaluation("e2"));
    let (one, two) = tokio::join!(
        tokio::spawn(async move { s1.record_evaluation(&e1).await.unwrap() }),
        tokio::spawn(async move { s2.record_evaluation(&e2).await.unwrap() })
    );
    assert_eq!([one.unwrap(), two.unwrap()].iter().filter(|w| **w).count(), 1);
    let (events, total) = store.alert_events(a, &EventFilter::default(), 0, 10).await.unwrap();
    assert_eq!((events.len(), total), (1, 1));
    let (log, _) = store.channel_deliveries(a, "c1", 0, 10).await.unwrap();
    assert_eq!(log.len(), 1, "the delivery to a channel that does not exist is dropped");
    assert_eq!(store.alert_rule(a, "r1").await.unwrap().unwrap().state, "firing");
    // A disabled rule takes no evaluation.
    let mut off = store.alert_rule(a, "r1").await.unwrap().unwrap();
    off.enabled = false;
    store.update_alert_rule(&off, &audit(a, op::ALERT_RULE_UPDATE, target("r1"))).await.unwrap();
    let next = Evaluation {
        expected_ms: T0,
        evaluated_ms: T0 + 60_000,
        events: vec![],
        deliveries: vec![],
        ..evaluation("e3")
    };
    assert!(!store.record_evaluation(&next).await.unwrap());
    let filter = EventFilter { to_state: Some("resolved".into()), ..EventFilter::default() };
    assert_eq!(store.alert_events(a, &filter, 0, 10).await.unwrap().1, 0);
}

async fn one_caller_claims_each_round(store: Arc<dyn Store>) {
    let claims = (0..8).map(|i| {
        let store = store.clone();
        tokio::spawn(async move { store.claim_alert_round(T0, &format!("server {i}")).await.unwrap() })
    });
    let mut won = 0;
    for claim in claims {
        won += claim.await.unwrap() as usize;
    }
    assert_eq!(won, 1);
    assert!(!store.claim_alert_round(T0 - 60_000, "late").await.unwrap(), "a past round is not claimed");
    assert!(store.claim_alert_round(T0 + 60_000, "next").await.unwrap());
}

async fn deliveries_are_claimed_leased_and_finished(store: Arc<dyn Store>) {
    let a = acme(&*store).await.id;
    store.create_alert_channel(&channel(a, "c1"), &audit(a, op::ALERT_CHANNEL_CREATE, target("c1"))).await.unwrap();
    for i in 0..3 {
        store.insert_delivery(&delivery(a, &format!("d{i}"), "c1", T0 + i)).await.unwrap();
    }
    let claimed = store.claim_deliveries(T0 + 10, T0 + 60_000, 2).await.unwrap();
    assert_eq!(claimed.iter().map(|c| c.delivery.id.as_str()).collect::<Vec<_>>(), ["d0", "d1"]);
    assert_eq!((claimed[0].delivery.attempts, claimed[0].channel.url.as_deref()), (1, Some("https://hooks.example/x")));
    // Leased: another sender claims only the third.
    let other = store.claim_deliveries(T0 + 10, T0 + 60_000, 10).await.unwrap();
    assert_eq!(other.iter().map(|c| c.delivery.id.as_str()).collect::<Vec<_>>(), ["d2"]);
    let sent = AttemptOutcome {
        status: "sent".into(),
        next_attempt_ms: 0,
        response_status: Some(204),
        error: None,
        sent_ms: Some(T0 + 20),
    };
    assert!(store.finish_delivery("d0", T0 + 60_000, &sent).await.unwrap());
    let retry = AttemptOutcome {
        status: "pending".into(),
        next_attempt_ms: T0 + 30_000,
        response_status: Some(503),
        error: Some("503".into()),
        sent_ms: None,
    };
    assert!(store.finish_delivery("d1", T0 + 60_000, &retry).await.unwrap());
    // d2's sender died: once its lease passes, another takes it over, and the first's late word is ignored.
    let taken = store.claim_deliveries(T0 + 60_000, T0 + 120_000, 10).await.unwrap();
    assert_eq!(taken.iter().map(|c| c.delivery.id.as_str()).collect::<Vec<_>>(), ["d1", "d2"]);
    assert_eq!(taken[1].delivery.attempts, 2);
    assert!(!store.finish_delivery("d2", T0 + 60_000, &sent).await.unwrap());
    let d0 = store.delivery(a, "d0").await.unwrap().unwrap();
    assert_eq!((d0.status.as_str(), d0.response_status, d0.sent_ms), ("sent", Some(204), Some(T0 + 20)));
    assert!(store.delivery(globex(&*store).await.id, "d0").await.unwrap().is_none());
}

async fn silences_in_force_and_their_limit(store: Arc<dyn Store>) {
    let a = acme(&*store).await.id;
    let silence = |id: &str, expires: Option<i64>| SilenceRecord {
        id: id.into(),
        customer_id: a,
        comment: String::new(),
        rule_id: None,
        labels: "{\"team\":\"edge\"}".into(),
        starts_ms: T0,
        ends_ms: T0 + 3_600_000,
        repeat: None,
        repeat_until_ms: None,
        expires_ms: expires,
        created_ms: T0,
        author: "alice".into(),
    };
    store
        .create_alert_silence(&silence("old", Some(T0 - 1)), &audit(a, op::ALERT_SILENCE_CREATE, target("old")))
        .await
        .unwrap();
    for i in 0..edge_api::alerts::MAX_SILENCES {
        let s = silence(&format!("s{i}"), if i % 2 == 0 { None } else { Some(T0 + 3_600_000) });
        store.create_alert_silence(&s, &audit(a, op::ALERT_SILENCE_CREATE, target("s"))).await.unwrap();
    }
    let over =
        store.create_alert_silence(&silence("over", None), &audit(a, op::ALERT_SILENCE_CREATE, target("o"))).await;
    assert!(matches!(over, Err(StoreError::Limit(_))), "{over:?}");
    assert_eq!(store.alert_silences(a, Some(T0), 0, 1).await.unwrap().1, 200, "the expired one is not in force");
    assert_eq!(store.alert_silences(a, None, 0, 1).await.unwrap().1, 201);
}

async fn alert_events_and_delivery_logs_are_pruned_to_their_bounds(store: Arc<dyn Store>) {
    let a = acme(&*store).await.id;
    store.create_alert_channel(&channel(a, "c1"), &audit(a, op::ALERT_CHANNEL_CREATE, target("c1"))).await.unwrap();
    for i in 0..5 {
        store.insert_delivery(&delivery(a, &format!("old{i}"), "c1", T0 - 100 * 86_400_000)).await.unwrap();
    }
    let sent = AttemptOutcome {
        status: "sent".into(),
        next_attempt_ms: 0,
        response_status: Some(200),
        error: None,
        sent_ms: Some(T0),
    };
    let claimed = store.claim_deliveries(T0, T0 + 60_000, 100).await.unwrap();
    for c in &claimed[..4] {
        store.finish_delivery(&c.delivery.id, T0 + 60_000, &sent).await.unwrap();
    }
    for i in 0..(edge_api::alerts::DELIVERY_LOG_PER_CHANNEL + 3) {
        let mut d = delivery(a, &format!("new{i}"), "c1", T0 + i as i64);
        d.status = "silenced".into();
        store.insert_delivery(&d).await.unwrap();
    }
    let pruned = store.prune_alerts(T0 - 90 * 86_400_000).await.unwrap();
    // The 4 old ones sent go by age (the 5th is still being sent: kept), then 3 beyond the log's 200.
    assert_eq!(pruned, 7);
    let (log, total) = store.channel_deliveries(a, "c1", 0, 1000).await.unwrap();
    assert_eq!(total, edge_api::alerts::DELIVERY_LOG_PER_CHANNEL + 1);
    assert!(log.iter().any(|d| d.id == "old4") && !log.iter().any(|d| d.id == "new0" || d.id == "new2"));
}
