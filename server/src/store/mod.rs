//! State storage behind one interface, [`Store`]: handlers never see SQL, so a PostgreSQL implementation can be
//! added beside the embedded SQLite one without touching them.

mod sqlite;

use async_trait::async_trait;

pub use sqlite::SqliteStore;

pub type CustomerId = i64;

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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRecord {
    pub id: String,
    pub customer_id: CustomerId,
    pub username: String,
    pub source: String,
    pub full_name: String,
    pub email: String,
    pub phone_number: String,
    pub enabled: bool,
    pub role: String,
    pub password_hash: Option<String>,
    pub otp_enabled: bool,
    pub otp_secret: Option<String>,
    pub created_ms: i64,
}

/// A user to create; the store adds the customer and the creation time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewUser {
    pub id: String,
    pub username: String,
    pub source: String,
    pub full_name: String,
    pub email: String,
    pub phone_number: String,
    pub enabled: bool,
    pub role: String,
    pub password_hash: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    /// Hex SHA-256 of the session id; the id itself is never stored.
    pub token_hash: String,
    pub customer_id: CustomerId,
    pub user_id: String,
    pub created_ms: i64,
    pub last_seen_ms: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A uniqueness rule refused the write (the string names what already exists).
    #[error("{0} already exists")]
    Conflict(&'static str),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        StoreError::Other(e.into())
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

#[async_trait]
pub trait Store: Send + Sync + 'static {
    async fn customer_count(&self) -> StoreResult<u64>;
    /// Creates a customer and its first users in one transaction: all of them or nothing.
    async fn create_customer(&self, customer: NewCustomer, users: &[NewUser], created_ms: i64)
    -> StoreResult<Customer>;
    async fn customer_by_name(&self, name: &str) -> StoreResult<Option<Customer>>;

    async fn create_user(&self, customer: CustomerId, user: &NewUser, created_ms: i64) -> StoreResult<UserRecord>;
    async fn user_by_username(&self, customer: CustomerId, username: &str) -> StoreResult<Option<UserRecord>>;
    async fn user_by_id(&self, customer: CustomerId, id: &str) -> StoreResult<Option<UserRecord>>;

    async fn create_session(&self, session: &SessionRecord) -> StoreResult<()>;
    async fn session(&self, token_hash: &str) -> StoreResult<Option<SessionRecord>>;
    async fn touch_session(&self, token_hash: &str, last_seen_ms: i64) -> StoreResult<()>;
    /// Deletes a session; false when there was none.
    async fn delete_session(&self, token_hash: &str) -> StoreResult<bool>;
    /// Deletes sessions idle since before `idle_before_ms` or created before `created_before_ms`.
    async fn purge_sessions(&self, idle_before_ms: i64, created_before_ms: i64) -> StoreResult<u64>;
}
