//! Customers (tenants) and their account: the rows every other resource belongs to.

use async_trait::async_trait;

use super::{
    CustomerId, StoreResult,
    audit::{AuditEvent, Target, insert_audit},
    db::{Row, query},
    sql::{SqlStore, conflict},
    users::{NewUser, insert_user},
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Customer {
    pub id: CustomerId,
    pub name: String,
    pub display_name: String,
    pub contact_email: String,
    pub timezone: String,
    pub created_ms: i64,
}

#[derive(Debug, Clone)]
pub struct NewCustomer {
    pub name: String,
    pub display_name: String,
    pub contact_email: String,
}

/// Changes to a customer's account; `None` keeps the value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountChange {
    pub display_name: Option<String>,
    pub contact_email: Option<String>,
    pub timezone: Option<String>,
}

// A target made from a record is built beside the record: the audit module, which every resource's
// writes use, cannot import the records back.
impl Target {
    pub fn account(c: &Customer) -> Target {
        Target { kind: "account", id: c.name.clone(), name: c.display_name.clone() }
    }
}

/// The columns of the customer a row about one of its resources is joined with (`c` the customers table),
/// named apart from the resource's own; read back by [`joined_customer`].
pub(super) const JOINED_CUSTOMER: &str = "c.name AS c_name, c.display_name AS c_display_name, \
     c.contact_email AS c_contact_email, c.timezone AS c_timezone, c.created_ms AS c_created_ms";

/// The customer `id` of a row that selected [`JOINED_CUSTOMER`].
pub(super) fn joined_customer(row: &Row, id: CustomerId) -> Result<Customer, sqlx::Error> {
    Ok(Customer {
        id,
        name: row.get("c_name")?,
        display_name: row.get("c_display_name")?,
        contact_email: row.get("c_contact_email")?,
        timezone: row.get("c_timezone")?,
        created_ms: row.get("c_created_ms")?,
    })
}

/// Customers and their account.
#[async_trait]
pub trait Customers: Send + Sync {
    async fn customer_count(&self) -> StoreResult<u64>;
    /// Creates a customer and its first users in one transaction: all of them or nothing. The audit record is
    /// written under the new customer (its `customer_id` is ignored).
    async fn create_customer(
        &self,
        customer: NewCustomer,
        users: &[NewUser],
        created_ms: i64,
        audit: &AuditEvent,
    ) -> StoreResult<Customer>;
    async fn customer_by_name(&self, name: &str) -> StoreResult<Option<Customer>>;
    /// Every customer's id and name (for the operator's metrics).
    async fn customer_names(&self) -> StoreResult<Vec<(CustomerId, String)>>;
    /// Sets the fields of `change` that are present, each on its own (a concurrent change of another field
    /// is kept).
    async fn update_customer(
        &self,
        id: CustomerId,
        change: &AccountChange,
        audit: &AuditEvent,
    ) -> StoreResult<Option<Customer>>;
}

#[async_trait]
impl Customers for SqlStore {
    async fn customer_count(&self) -> StoreResult<u64> {
        let n: i64 = query("SELECT COUNT(*) FROM customers").scalar(&self.db).await?;
        Ok(n as u64)
    }

    async fn create_customer(
        &self,
        c: NewCustomer,
        users: &[NewUser],
        created_ms: i64,
        audit: &AuditEvent,
    ) -> StoreResult<Customer> {
        let mut tx = self.db.begin().await?;
        let row = query(
            "INSERT INTO customers (name, display_name, contact_email, created_ms) VALUES ($1, $2, $3, $4)
             RETURNING *",
        )
        .bind(&c.name)
        .bind(&c.display_name)
        .bind(&c.contact_email)
        .bind(created_ms)
        .fetch_one(&mut tx)
        .await
        .map_err(conflict("customer"))?;
        let customer = customer_from_row(&row)?;
        for user in users {
            insert_user(&mut tx, customer.id, user, created_ms).await?;
        }
        insert_audit(&mut tx, &AuditEvent { customer_id: customer.id, ..audit.clone() }).await?;
        tx.commit().await?;
        Ok(customer)
    }

    async fn customer_by_name(&self, name: &str) -> StoreResult<Option<Customer>> {
        let row = query("SELECT * FROM customers WHERE name = $1").bind(name).fetch_optional(&self.db).await?;
        Ok(row.as_ref().map(customer_from_row).transpose()?)
    }

    async fn customer_names(&self) -> StoreResult<Vec<(CustomerId, String)>> {
        let rows = query("SELECT * FROM customers ORDER BY id").fetch_all(&self.db).await?;
        rows.iter().map(|r| customer_from_row(r).map(|c| (c.id, c.name))).collect::<Result<_, _>>().map_err(Into::into)
    }

    async fn update_customer(
        &self,
        id: CustomerId,
        change: &AccountChange,
        audit: &AuditEvent,
    ) -> StoreResult<Option<Customer>> {
        let mut tx = self.db.begin().await?;
        let row = query(
            "UPDATE customers SET display_name = COALESCE($1, display_name),
                                  contact_email = COALESCE($2, contact_email), timezone = COALESCE($3, timezone)
             WHERE id = $4 RETURNING *",
        )
        .bind(&change.display_name)
        .bind(&change.contact_email)
        .bind(&change.timezone)
        .bind(id)
        .fetch_optional(&mut tx)
        .await?;
        let Some(customer) = row.as_ref().map(customer_from_row).transpose()? else { return Ok(None) };
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(Some(customer))
    }
}

pub(super) fn customer_from_row(row: &Row) -> Result<Customer, sqlx::Error> {
    Ok(Customer {
        id: row.get("id")?,
        name: row.get("name")?,
        display_name: row.get("display_name")?,
        contact_email: row.get("contact_email")?,
        timezone: row.get("timezone")?,
        created_ms: row.get("created_ms")?,
    })
}
