//! Alerting's storage: rules with their evaluation state, channels, silences, the events of the rules' states,
//! and deliveries (the outbox senders claim, and each channel's log); the round one replica at a time claims.
//! Definitions, statuses and payloads are JSON text the domain reads (`domain::alerts`); the store keeps the
//! bounds that need counting (rules, channels, silences per customer) and the compare-and-swap of evaluations.

use async_trait::async_trait;
use edge_api::alerts::{DELIVERY_LOG_PER_CHANNEL, MAX_CHANNELS, MAX_EVENTS_PER_CUSTOMER, MAX_RULES, MAX_SILENCES};

mod rows;

pub use rows::{
    AttemptOutcome, ChannelRecord, ClaimedDelivery, DeliveryRecord, Evaluation, EventFilter, EventRecord, RuleCounts,
    RuleRecord, SilenceRecord,
};
use rows::{
    RULE_COLUMNS, addresses_json, channel_from_row, delivery_from_row, event_from_row, insert_delivery_query,
    insert_event, rule_from_row, silence_from_row, within_limit,
};

use super::{
    CustomerId, StoreResult,
    audit::{AuditEvent, insert_audit},
    db::query,
    sql::{PRUNE_BATCH, SqlStore, filtered_page, prune_in_batches},
};

/// Alerting's storage.
#[async_trait]
pub trait Alerts: Send + Sync {
    /// A page of the customer's rules by name, and how many there are.
    async fn alert_rules(&self, customer: CustomerId, offset: u64, limit: u64) -> StoreResult<(Vec<RuleRecord>, u64)>;
    async fn alert_rule(&self, customer: CustomerId, id: &str) -> StoreResult<Option<RuleRecord>>;
    /// Creates a rule; [`StoreError::Limit`] when the customer has [`MAX_RULES`].
    async fn create_alert_rule(&self, rule: &RuleRecord, audit: &AuditEvent) -> StoreResult<()>;
    /// Replaces a rule's definition, name, enabled, state and status (and sets `modified_ms`, `author`);
    /// false when it does not exist.
    async fn update_alert_rule(&self, rule: &RuleRecord, audit: &AuditEvent) -> StoreResult<bool>;
    async fn delete_alert_rule(&self, customer: CustomerId, id: &str, audit: &AuditEvent) -> StoreResult<bool>;
    async fn alert_rule_counts(&self, customer: CustomerId) -> StoreResult<RuleCounts>;

    async fn alert_channels(
        &self,
        customer: CustomerId,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<ChannelRecord>, u64)>;
    async fn alert_channel(&self, customer: CustomerId, id: &str) -> StoreResult<Option<ChannelRecord>>;
    /// Creates a channel; [`StoreError::Limit`] when the customer has [`MAX_CHANNELS`].
    async fn create_alert_channel(&self, channel: &ChannelRecord, audit: &AuditEvent) -> StoreResult<()>;
    /// Replaces name, addresses, URL and secret; false when it does not exist.
    async fn update_alert_channel(&self, channel: &ChannelRecord, audit: &AuditEvent) -> StoreResult<bool>;
    /// Deletes a channel with its delivery log.
    async fn delete_alert_channel(&self, customer: CustomerId, id: &str, audit: &AuditEvent) -> StoreResult<bool>;

    /// A page of the customer's silences, newest first; with `in_force_at`, only those not expired then.
    async fn alert_silences(
        &self,
        customer: CustomerId,
        in_force_at: Option<i64>,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<SilenceRecord>, u64)>;
    async fn alert_silence(&self, customer: CustomerId, id: &str) -> StoreResult<Option<SilenceRecord>>;
    /// Creates a silence; [`StoreError::Limit`] when the customer has [`MAX_SILENCES`] not expired at
    /// `silence.created_ms`.
    async fn create_alert_silence(&self, silence: &SilenceRecord, audit: &AuditEvent) -> StoreResult<()>;
    async fn delete_alert_silence(&self, customer: CustomerId, id: &str, audit: &AuditEvent) -> StoreResult<bool>;

    /// A page of the customer's events, newest first, and how many match.
    async fn alert_events(
        &self,
        customer: CustomerId,
        filter: &EventFilter,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<EventRecord>, u64)>;

    /// Claims the round starting at `round_ms` for `server`: true for the one caller that moves the round
    /// forward, false for every other (another replica has it, or it is past).
    async fn claim_alert_round(&self, round_ms: i64, server: &str) -> StoreResult<bool>;
    /// Every enabled rule of every customer (at most [`MAX_RULES`] each).
    async fn rules_to_evaluate(&self) -> StoreResult<Vec<RuleRecord>>;
    /// Writes an evaluation with its events and deliveries, if the rule is still as read (see [`Evaluation`]);
    /// false (and nothing written) otherwise.
    async fn record_evaluation(&self, evaluation: &Evaluation) -> StoreResult<bool>;

    /// Claims up to `max` deliveries due at `now_ms` (pending ones, and those whose sender's lease passed),
    /// leasing them until `lease_ms` and counting an attempt.
    async fn claim_deliveries(&self, now_ms: i64, lease_ms: i64, max: u64) -> StoreResult<Vec<ClaimedDelivery>>;
    /// Records how an attempt ended, if the delivery is still leased as claimed; false otherwise.
    async fn finish_delivery(&self, id: &str, lease_ms: i64, outcome: &AttemptOutcome) -> StoreResult<bool>;
    /// Adds a delivery (a test's, or one made outside an evaluation).
    async fn insert_delivery(&self, delivery: &DeliveryRecord) -> StoreResult<()>;
    /// A page of a channel's delivery log, newest first.
    async fn channel_deliveries(
        &self,
        customer: CustomerId,
        channel: &str,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<DeliveryRecord>, u64)>;
    async fn delivery(&self, customer: CustomerId, id: &str) -> StoreResult<Option<DeliveryRecord>>;

    /// Deletes events before `before_ms` and beyond [`MAX_EVENTS_PER_CUSTOMER`] a customer, and finished
    /// deliveries before `before_ms` and beyond [`DELIVERY_LOG_PER_CHANNEL`] a channel; returns how many.
    async fn prune_alerts(&self, before_ms: i64) -> StoreResult<u64>;
}

#[async_trait]
impl Alerts for SqlStore {
    async fn alert_rules(&self, customer: CustomerId, offset: u64, limit: u64) -> StoreResult<(Vec<RuleRecord>, u64)> {
        let count = "SELECT COUNT(*) FROM alert_rules WHERE customer_id = $1".to_string();
        let page = format!(
            "SELECT {RULE_COLUMNS} FROM alert_rules WHERE customer_id = $1 ORDER BY name, id LIMIT $2 OFFSET $3"
        );
        filtered_page(&self.db, |sql| query(sql).bind(customer), count, page, (limit, offset), rule_from_row).await
    }

    async fn alert_rule(&self, customer: CustomerId, id: &str) -> StoreResult<Option<RuleRecord>> {
        let row = query(format!("SELECT {RULE_COLUMNS} FROM alert_rules WHERE customer_id = $1 AND id = $2"))
            .bind(customer)
            .bind(id)
            .fetch_optional(&self.db)
            .await?;
        Ok(row.as_ref().map(rule_from_row).transpose()?)
    }

    async fn create_alert_rule(&self, r: &RuleRecord, audit: &AuditEvent) -> StoreResult<()> {
        let mut tx = self.db.begin().await?;
        within_limit(&mut tx, "alert_rules", r.customer_id, None, MAX_RULES, "alert rules").await?;
        query(format!(
            "INSERT INTO alert_rules ({RULE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
        ))
        .bind(&r.id)
        .bind(r.customer_id)
        .bind(&r.name)
        .bind(&r.definition)
        .bind(r.enabled)
        .bind(r.created_ms)
        .bind(r.modified_ms)
        .bind(&r.author)
        .bind(&r.state)
        .bind(&r.status)
        .bind(r.evaluated_ms)
        .execute(&mut tx)
        .await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn update_alert_rule(&self, r: &RuleRecord, audit: &AuditEvent) -> StoreResult<bool> {
        let mut tx = self.db.begin().await?;
        let changed = query(
            "UPDATE alert_rules SET name = $3, definition = $4, enabled = $5, modified_ms = $6, author = $7,
                                    state = $8, status = $9
             WHERE customer_id = $1 AND id = $2",
        )
        .bind(r.customer_id)
        .bind(&r.id)
        .bind(&r.name)
        .bind(&r.definition)
        .bind(r.enabled)
        .bind(r.modified_ms)
        .bind(&r.author)
        .bind(&r.state)
        .bind(&r.status)
        .execute(&mut tx)
        .await?;
        if changed == 0 {
            return Ok(false);
        }
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn delete_alert_rule(&self, customer: CustomerId, id: &str, audit: &AuditEvent) -> StoreResult<bool> {
        delete_one(&self.db, "alert_rules", customer, id, audit).await
    }

    async fn alert_rule_counts(&self, customer: CustomerId) -> StoreResult<RuleCounts> {
        let row = query(
            "SELECT COUNT(*) AS rules,
                    COALESCE(SUM(CASE WHEN state = 'firing' AND enabled THEN 1 ELSE 0 END), 0) AS firing,
                    COALESCE(SUM(CASE WHEN state = 'pending' AND enabled THEN 1 ELSE 0 END), 0) AS pending
             FROM alert_rules WHERE customer_id = $1",
        )
        .bind(customer)
        .fetch_one(&self.db)
        .await?;
        let n = |name: &str| -> Result<u64, sqlx::Error> { Ok(row.get::<i64>(name)?.max(0) as u64) };
        Ok(RuleCounts { rules: n("rules")?, firing: n("firing")?, pending: n("pending")? })
    }

    async fn alert_channels(
        &self,
        customer: CustomerId,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<ChannelRecord>, u64)> {
        let count = "SELECT COUNT(*) FROM alert_channels WHERE customer_id = $1".to_string();
        let page =
            "SELECT * FROM alert_channels WHERE customer_id = $1 ORDER BY name, id LIMIT $2 OFFSET $3".to_string();
        filtered_page(&self.db, |sql| query(sql).bind(customer), count, page, (limit, offset), channel_from_row).await
    }

    async fn alert_channel(&self, customer: CustomerId, id: &str) -> StoreResult<Option<ChannelRecord>> {
        let row = query("SELECT * FROM alert_channels WHERE customer_id = $1 AND id = $2")
            .bind(customer)
            .bind(id)
            .fetch_optional(&self.db)
            .await?;
        Ok(row.as_ref().map(channel_from_row).transpose()?)
    }

    async fn create_alert_channel(&self, c: &ChannelRecord, audit: &AuditEvent) -> StoreResult<()> {
        let mut tx = self.db.begin().await?;
        within_limit(&mut tx, "alert_channels", c.customer_id, None, MAX_CHANNELS, "alert channels").await?;
        query(
            "INSERT INTO alert_channels (id, customer_id, name, kind, addresses, url, secret, created_ms, modified_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(&c.id)
        .bind(c.customer_id)
        .bind(&c.name)
        .bind(&c.kind)
        .bind(addresses_json(&c.addresses))
        .bind(&c.url)
        .bind(&c.secret)
        .bind(c.created_ms)
        .bind(c.modified_ms)
        .execute(&mut tx)
        .await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn update_alert_channel(&self, c: &ChannelRecord, audit: &AuditEvent) -> StoreResult<bool> {
        let mut tx = self.db.begin().await?;
        let changed = query(
            "UPDATE alert_channels SET name = $3, addresses = $4, url = $5, secret = $6, modified_ms = $7
             WHERE customer_id = $1 AND id = $2",
        )
        .bind(c.customer_id)
        .bind(&c.id)
        .bind(&c.name)
        .bind(addresses_json(&c.addresses))
        .bind(&c.url)
        .bind(&c.secret)
        .bind(c.modified_ms)
        .execute(&mut tx)
        .await?;
        if changed == 0 {
            return Ok(false);
        }
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn delete_alert_channel(&self, customer: CustomerId, id: &str, audit: &AuditEvent) -> StoreResult<bool> {
        let mut tx = self.db.begin().await?;
        // Its log goes with it (the foreign key cascades on PostgreSQL; said here for both).
        query("DELETE FROM alert_deliveries WHERE customer_id = $1 AND channel_id = $2")
            .bind(customer)
            .bind(id)
            .execute(&mut tx)
            .await?;
        let deleted = query("DELETE FROM alert_channels WHERE customer_id = $1 AND id = $2")
            .bind(customer)
            .bind(id)
            .execute(&mut tx)
            .await?;
        if deleted == 0 {
            return Ok(false);
        }
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn alert_silences(
        &self,
        customer: CustomerId,
        in_force_at: Option<i64>,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<SilenceRecord>, u64)> {
        let filter = "customer_id = $1 AND ($2 IS NULL OR expires_ms IS NULL OR expires_ms > $2)";
        let count = format!("SELECT COUNT(*) FROM alert_silences WHERE {filter}");
        let page =
            format!("SELECT * FROM alert_silences WHERE {filter} ORDER BY created_ms DESC, id LIMIT $3 OFFSET $4");
        let bound = |sql: String| query(sql).bind(customer).bind(in_force_at);
        filtered_page(&self.db, bound, count, page, (limit, offset), silence_from_row).await
    }

    async fn alert_silence(&self, customer: CustomerId, id: &str) -> StoreResult<Option<SilenceRecord>> {
        let row = query("SELECT * FROM alert_silences WHERE customer_id = $1 AND id = $2")
            .bind(customer)
            .bind(id)
            .fetch_optional(&self.db)
            .await?;
        Ok(row.as_ref().map(silence_from_row).transpose()?)
    }

    async fn create_alert_silence(&self, s: &SilenceRecord, audit: &AuditEvent) -> StoreResult<()> {
        let mut tx = self.db.begin().await?;
        let in_force = ("(expires_ms IS NULL OR expires_ms > $2)", s.created_ms);
        within_limit(&mut tx, "alert_silences", s.customer_id, Some(in_force), MAX_SILENCES, "silences in force")
            .await?;
        query(
            "INSERT INTO alert_silences (id, customer_id, comment, rule_id, labels, starts_ms, ends_ms, repeat,
                                         repeat_until_ms, expires_ms, created_ms, author)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .bind(&s.id)
        .bind(s.customer_id)
        .bind(&s.comment)
        .bind(&s.rule_id)
        .bind(&s.labels)
        .bind(s.starts_ms)
        .bind(s.ends_ms)
        .bind(&s.repeat)
        .bind(s.repeat_until_ms)
        .bind(s.expires_ms)
        .bind(s.created_ms)
        .bind(&s.author)
        .execute(&mut tx)
        .await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn delete_alert_silence(&self, customer: CustomerId, id: &str, audit: &AuditEvent) -> StoreResult<bool> {
        delete_one(&self.db, "alert_silences", customer, id, audit).await
    }

    async fn alert_events(
        &self,
        customer: CustomerId,
        f: &EventFilter,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<EventRecord>, u64)> {
        let filter = "customer_id = $1 AND ($2 IS NULL OR rule_id = $2) AND ($3 IS NULL OR time_ms >= $3)
                      AND ($4 IS NULL OR time_ms < $4) AND ($5 IS NULL OR to_state = $5)";
        let count = format!("SELECT COUNT(*) FROM alert_events WHERE {filter}");
        let page =
            format!("SELECT * FROM alert_events WHERE {filter} ORDER BY time_ms DESC, seq DESC LIMIT $6 OFFSET $7");
        let bound =
            |sql: String| query(sql).bind(customer).bind(&f.rule_id).bind(f.from_ms).bind(f.to_ms).bind(&f.to_state);
        filtered_page(&self.db, bound, count, page, (limit, offset), event_from_row).await
    }

    async fn claim_alert_round(&self, round_ms: i64, server: &str) -> StoreResult<bool> {
        let mut tx = self.db.begin().await?;
        tx.lock_keys(&["job:alerts:round"]).await?;
        let current: Option<i64> =
            query("SELECT round_ms FROM alert_rounds WHERE name = 'evaluate'").optional_scalar(&mut tx).await?;
        let claimed = match current {
            Some(r) if r >= round_ms => false,
            Some(_) => {
                query("UPDATE alert_rounds SET round_ms = $1, server = $2 WHERE name = 'evaluate'")
                    .bind(round_ms)
                    .bind(server)
                    .execute(&mut tx)
                    .await?;
                true
            }
            None => {
                query("INSERT INTO alert_rounds (name, round_ms, server) VALUES ('evaluate', $1, $2)")
                    .bind(round_ms)
                    .bind(server)
                    .execute(&mut tx)
                    .await?;
                true
            }
        };
        tx.commit().await?;
        Ok(claimed)
    }

    async fn rules_to_evaluate(&self) -> StoreResult<Vec<RuleRecord>> {
        let rows = query(format!("SELECT {RULE_COLUMNS} FROM alert_rules WHERE enabled ORDER BY customer_id, id"))
            .fetch_all(&self.db)
            .await?;
        Ok(rows.iter().map(rule_from_row).collect::<Result<_, _>>()?)
    }

    async fn record_evaluation(&self, e: &Evaluation) -> StoreResult<bool> {
        let mut tx = self.db.begin().await?;
        let changed = query(
            "UPDATE alert_rules SET state = $4, status = $5, evaluated_ms = $6
             WHERE customer_id = $1 AND id = $2 AND evaluated_ms = $3 AND enabled",
        )
        .bind(e.customer_id)
        .bind(&e.rule_id)
        .bind(e.expected_ms)
        .bind(&e.state)
        .bind(&e.status)
        .bind(e.evaluated_ms)
        .execute(&mut tx)
        .await?;
        if changed == 0 {
            return Ok(false);
        }
        for event in &e.events {
            insert_event(event).execute(&mut tx).await?;
        }
        for delivery in &e.deliveries {
            // A channel deleted since the rule was read has no log to write to: its notification is dropped.
            let exists: Option<String> = query("SELECT id FROM alert_channels WHERE customer_id = $1 AND id = $2")
                .bind(delivery.customer_id)
                .bind(&delivery.channel_id)
                .optional_scalar(&mut tx)
                .await?;
            if exists.is_some() {
                insert_delivery_query(delivery).execute(&mut tx).await?;
            }
        }
        tx.commit().await?;
        Ok(true)
    }

    async fn claim_deliveries(&self, now_ms: i64, lease_ms: i64, max: u64) -> StoreResult<Vec<ClaimedDelivery>> {
        let mut tx = self.db.begin().await?;
        tx.lock_keys(&["job:alerts:deliveries"]).await?;
        let rows = query(
            "SELECT d.*, c.name AS c_name, c.kind AS c_kind, c.addresses AS c_addresses, c.url AS c_url,
                    c.secret AS c_secret, c.created_ms AS c_created_ms, c.modified_ms AS c_modified_ms
             FROM alert_deliveries d JOIN alert_channels c ON c.id = d.channel_id
             WHERE (d.status = 'pending' AND d.next_attempt_ms <= $1) OR (d.status = 'sending' AND d.lease_ms <= $1)
             ORDER BY d.seq LIMIT $2",
        )
        .bind(now_ms)
        .bind(max)
        .fetch_all(&mut tx)
        .await?;
        let mut claimed = Vec::with_capacity(rows.len());
        for row in &rows {
            let mut delivery = delivery_from_row(row)?;
            let addresses: String = row.get("c_addresses")?;
            let channel = ChannelRecord {
                id: delivery.channel_id.clone(),
                customer_id: delivery.customer_id,
                name: row.get("c_name")?,
                kind: row.get("c_kind")?,
                addresses: serde_json::from_str(&addresses).unwrap_or_default(),
                url: row.get("c_url")?,
                secret: row.get("c_secret")?,
                created_ms: row.get("c_created_ms")?,
                modified_ms: row.get("c_modified_ms")?,
            };
            delivery.attempts += 1;
            delivery.status = "sending".into();
            delivery.lease_ms = lease_ms;
            query("UPDATE alert_deliveries SET status = 'sending', lease_ms = $2, attempts = $3 WHERE id = $1")
                .bind(&delivery.id)
                .bind(lease_ms)
                .bind(delivery.attempts)
                .execute(&mut tx)
                .await?;
            claimed.push(ClaimedDelivery { delivery, channel });
        }
        tx.commit().await?;
        Ok(claimed)
    }

    async fn finish_delivery(&self, id: &str, lease_ms: i64, o: &AttemptOutcome) -> StoreResult<bool> {
        let changed = query(
            "UPDATE alert_deliveries SET status = $3, next_attempt_ms = $4, response_status = $5, error = $6,
                                         sent_ms = $7
             WHERE id = $1 AND status = 'sending' AND lease_ms = $2",
        )
        .bind(id)
        .bind(lease_ms)
        .bind(&o.status)
        .bind(o.next_attempt_ms)
        .bind(o.response_status.map(i64::from))
        .bind(&o.error)
        .bind(o.sent_ms)
        .execute(&self.db)
        .await?;
        Ok(changed > 0)
    }

    async fn insert_delivery(&self, d: &DeliveryRecord) -> StoreResult<()> {
        insert_delivery_query(d).execute(&self.db).await?;
        Ok(())
    }

    async fn channel_deliveries(
        &self,
        customer: CustomerId,
        channel: &str,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<DeliveryRecord>, u64)> {
        let filter = "customer_id = $1 AND channel_id = $2";
        let count = format!("SELECT COUNT(*) FROM alert_deliveries WHERE {filter}");
        let page = format!("SELECT * FROM alert_deliveries WHERE {filter} ORDER BY seq DESC LIMIT $3 OFFSET $4");
        let bound = |sql: String| query(sql).bind(customer).bind(channel);
        filtered_page(&self.db, bound, count, page, (limit, offset), delivery_from_row).await
    }

    async fn delivery(&self, customer: CustomerId, id: &str) -> StoreResult<Option<DeliveryRecord>> {
        let row = query("SELECT * FROM alert_deliveries WHERE customer_id = $1 AND id = $2")
            .bind(customer)
            .bind(id)
            .fetch_optional(&self.db)
            .await?;
        Ok(row.as_ref().map(delivery_from_row).transpose()?)
    }

    async fn prune_alerts(&self, before_ms: i64) -> StoreResult<u64> {
        let mut total = prune_in_batches(&self.db, "alert_events", "seq", "time_ms", before_ms).await?;
        // Beyond the count a customer keeps: its oldest events.
        total += prune_beyond(
            &self.db,
            "alert_events",
            "SELECT customer_id AS owner, COUNT(*) AS n FROM alert_events GROUP BY customer_id",
            "customer_id",
            "",
            MAX_EVENTS_PER_CUSTOMER,
        )
        .await?;
        // Finished deliveries: by age, then beyond each channel's log.
        let finished = "status IN ('sent', 'failed', 'silenced')";
        let mut tx = self.db.begin().await?;
        tx.lock_keys(&["job:prune:alert_deliveries"]).await?;
        total += query(format!("DELETE FROM alert_deliveries WHERE {finished} AND created_ms < $1"))
            .bind(before_ms)
            .execute(&mut tx)
            .await?;
        tx.commit().await?;
        total += prune_beyond(
            &self.db,
            "alert_deliveries",
            &format!(
                "SELECT channel_id AS owner, COUNT(*) AS n FROM alert_deliveries WHERE {finished} GROUP BY channel_id"
            ),
            "channel_id",
            &format!("AND {finished}"),
            DELIVERY_LOG_PER_CHANNEL,
        )
        .await?;
        Ok(total)
    }
}

/// Deletes, for every owner (`owner_column`) with more than `keep` rows of `table` (counted by `counts`), its
/// oldest rows beyond `keep` (by `seq`), in batches.
async fn prune_beyond(
    db: &super::db::Db,
    table: &str,
    counts: &str,
    owner_column: &str,
    extra: &str,
    keep: u64,
) -> StoreResult<u64> {
    let rows = query(counts.to_string()).fetch_all(db).await?;
    let mut total = 0;
    for row in rows {
        let n: i64 = row.get("n")?;
        let excess = (n.max(0) as u64).saturating_sub(keep);
        if excess == 0 {
            continue;
        }
        let owner: super::db::Value = match owner_column {
            "customer_id" => row.get::<i64>("owner")?.into(),
            _ => row.get::<String>("owner")?.into(),
        };
        let mut left = excess;
        while left > 0 {
            let batch = left.min(PRUNE_BATCH as u64);
            let mut tx = db.begin().await?;
            tx.lock_keys(&[&format!("job:prune:{table}")]).await?;
            let done = query(format!(
                "DELETE FROM {table} WHERE seq IN
                 (SELECT seq FROM {table} WHERE {owner_column} = $1 {extra} ORDER BY seq LIMIT $2)"
            ))
            .bind(owner.clone())
            .bind(batch)
            .execute(&mut tx)
            .await?;
            tx.commit().await?;
            total += done;
            if done == 0 {
                break;
            }
            left = left.saturating_sub(done);
        }
    }
    Ok(total)
}

/// Deletes one row of the customer's `table` by id, with its audit record; false when there is none.
async fn delete_one(
    db: &super::db::Db,
    table: &str,
    customer: CustomerId,
    id: &str,
    audit: &AuditEvent,
) -> StoreResult<bool> {
    let mut tx = db.begin().await?;
    let deleted = query(format!("DELETE FROM {table} WHERE customer_id = $1 AND id = $2"))
        .bind(customer)
        .bind(id)
        .execute(&mut tx)
        .await?;
    if deleted == 0 {
        return Ok(false);
    }
    insert_audit(&mut tx, audit).await?;
    tx.commit().await?;
    Ok(true)
}
