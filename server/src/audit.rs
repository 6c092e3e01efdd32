//! Audit records as handlers make them: the operations, the targets, and who acted from where. A record is
//! handed to the store method that makes the change, which writes both in one transaction.

use std::borrow::Cow;

use edge_api::limits::{MAX_AUDIT_TEXT_BYTES, cut};
use serde_json::{Map, Value};

use crate::{
    auth::Caller,
    store::{Actor, AuditEvent, Customer, CustomerId, UserRecord},
};

/// The operations' names (the one list is `edge_api::audit::AuditOperation`).
pub use edge_api::audit::op;

/// What a change is made to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub kind: &'static str,
    pub id: String,
    pub name: String,
}

impl Target {
    pub fn user(u: &UserRecord) -> Target {
        Target { kind: "user", id: u.id.clone(), name: u.username.clone() }
    }

    /// A session, named by the start of its stored hash (which cannot be used to log in) and its user's name.
    pub fn session(token_hash: &str, username: &str) -> Target {
        Target { kind: "session", id: token_hash.chars().take(16).collect(), name: username.to_string() }
    }

    pub fn property(name: &str) -> Target {
        Target { kind: "property", id: name.to_string(), name: name.to_string() }
    }

    pub fn network_list(id: &str, name: &str) -> Target {
        Target { kind: "network_list", id: id.to_string(), name: name.to_string() }
    }

    /// A purge; its id, the transaction id, is filled in by the store.
    pub fn purge(action: &str) -> Target {
        Target { kind: "purge", id: String::new(), name: action.to_string() }
    }

    pub fn account(c: &Customer) -> Target {
        Target { kind: "account", id: c.name.clone(), name: c.display_name.clone() }
    }

    pub fn identity_source(id: &str) -> Target {
        Target { kind: "identity_source", id: id.to_string(), name: id.to_string() }
    }
}

impl AuditEvent {
    /// A change made by the caller of a request, now.
    pub fn by(caller: &Caller, now_ms: i64, operation: &str, target: Target) -> AuditEvent {
        let actor = Actor::User { id: caller.user.id.clone(), name: caller.user.username.clone() };
        AuditEvent::new(caller.customer.id, now_ms, actor, caller.addr.to_string(), operation, target)
    }

    /// A change made by the server itself or its operator.
    pub fn system(customer_id: CustomerId, now_ms: i64, operation: &str, target: Target) -> AuditEvent {
        AuditEvent::new(customer_id, now_ms, Actor::System, String::new(), operation, target)
    }

    pub fn new(
        customer_id: CustomerId,
        time_ms: i64,
        actor: Actor,
        source: String,
        operation: &str,
        target: Target,
    ) -> AuditEvent {
        AuditEvent {
            customer_id,
            time_ms,
            actor,
            source,
            operation: operation.to_string(),
            target_type: target.kind.to_string(),
            target_id: target.id,
            target_name: target.name,
            success: true,
            details: Map::new(),
        }
    }

    /// Adds a detail: what changed, a count, a version number.
    pub fn detail(mut self, key: &str, value: impl Into<Value>) -> AuditEvent {
        self.details.insert(key.to_string(), value.into());
        self
    }

    /// The record as stored: each text of it — the actor's name, the source, the target's id and name, the
    /// texts of the details — at most [`MAX_AUDIT_TEXT_BYTES`], cut ones ending with `…` and named in the detail
    /// `cut` (e.g. `["actor.name"]`). Much of it was typed by someone else (a failed login's username, a
    /// purge's first URI), and each record is kept for the audit retention.
    pub fn bounded(mut self) -> AuditEvent {
        let mut cut_fields: Vec<Value> = Vec::new();
        let mut bound = |text: &mut String, field: &str| {
            if let Cow::Owned(cut) = cut(text, MAX_AUDIT_TEXT_BYTES) {
                *text = cut;
                cut_fields.push(field.into());
            }
        };
        if let Actor::User { name, .. } | Actor::Unknown(name) = &mut self.actor {
            bound(name, "actor.name");
        }
        bound(&mut self.source, "source_address");
        bound(&mut self.target_id, "target.id");
        bound(&mut self.target_name, "target.name");
        for (key, value) in self.details.iter_mut() {
            if let Value::String(text) = value {
                bound(text, &format!("details.{key}"));
            }
        }
        if !cut_fields.is_empty() {
            self.details.insert("cut".into(), Value::Array(cut_fields));
        }
        self
    }

    /// Marks a failed login or a lockout.
    pub fn failure(mut self) -> AuditEvent {
        self.success = false;
        self
    }
}
