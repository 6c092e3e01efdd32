//! SQLite and PostgreSQL behind one small interface, so that the store is written once: a query is SQL text
//! with `$1`, `$2`, … parameters (both databases read them) and its bound values; it runs on the pool or in a
//! transaction of either database, and its rows are read by column name. Where the two databases differ in
//! what a transaction guarantees, [`Tx`] says so in one place ([`Tx::lock_row`], [`Tx::lock_keys`]).

use std::borrow::Cow;

use sqlx::{PgPool, Postgres, Sqlite, SqlitePool, Transaction, postgres::PgRow, sqlite::SqliteRow};

/// A pool of connections to one of the two databases.
#[derive(Clone, Debug)]
pub enum Db {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Which database a [`Db`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sqlite,
    Postgres,
}

/// A value bound to a parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(Option<i64>),
    Text(Option<String>),
    Bool(Option<bool>),
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(Some(v))
    }
}

impl From<Option<i64>> for Value {
    fn from(v: Option<i64>) -> Self {
        Value::Int(v)
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Self {
        Value::Int(Some(v.into()))
    }
}

/// Counts and offsets: beyond `i64::MAX` they mean "all", which `i64::MAX` says as well.
impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::Int(Some(v.min(i64::MAX as u64) as i64))
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(Some(v))
    }
}

impl From<Option<bool>> for Value {
    fn from(v: Option<bool>) -> Self {
        Value::Bool(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(Some(v.to_string()))
    }
}

impl From<&String> for Value {
    fn from(v: &String) -> Self {
        Value::Text(Some(v.clone()))
    }
}

impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(Some(v))
    }
}

impl From<Option<&str>> for Value {
    fn from(v: Option<&str>) -> Self {
        Value::Text(v.map(str::to_string))
    }
}

impl From<&Option<String>> for Value {
    fn from(v: &Option<String>) -> Self {
        Value::Text(v.clone())
    }
}

impl From<Option<String>> for Value {
    fn from(v: Option<String>) -> Self {
        Value::Text(v)
    }
}

/// A query: SQL text with `$n` parameters and their values.
#[derive(Debug, Clone)]
pub struct Query {
    sql: Cow<'static, str>,
    args: Vec<Value>,
}

pub fn query(sql: impl Into<Cow<'static, str>>) -> Query {
    Query { sql: sql.into(), args: Vec::new() }
}

/// A transaction of either database: committed by [`Tx::commit`], rolled back when dropped.
pub enum Tx {
    Sqlite(Transaction<'static, Sqlite>),
    Postgres(Transaction<'static, Postgres>),
}

/// Where a query runs.
pub enum On<'a> {
    Pool(&'a Db),
    Tx(&'a mut Tx),
}

impl<'a> From<&'a Db> for On<'a> {
    fn from(db: &'a Db) -> Self {
        On::Pool(db)
    }
}

impl<'a> From<&'a mut Tx> for On<'a> {
    fn from(tx: &'a mut Tx) -> Self {
        On::Tx(tx)
    }
}

/// The sqlx query of `sql` with `args` bound, for either database.
fn bind<'q, DB>(sql: &'q str, args: &'q [Value]) -> sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments<'q>>
where
    DB: sqlx::Database,
    Option<i64>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<&'q str>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<bool>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    args.iter().fold(sqlx::query(sql), |q, arg| match arg {
        Value::Int(v) => q.bind(*v),
        Value::Text(v) => q.bind(v.as_deref()),
        Value::Bool(v) => q.bind(*v),
    })
}

/// Text with the NUL character, which PostgreSQL cannot store: refused by both databases alike, before the
/// query runs (see [`crate::store::StoreError::Invalid`]).
#[derive(Debug, thiserror::Error)]
#[error("text may not contain the NUL character (U+0000)")]
pub struct NulInText;

impl Query {
    pub fn bind(mut self, value: impl Into<Value>) -> Self {
        self.args.push(value.into());
        self
    }

    fn check(&self) -> Result<(), sqlx::Error> {
        let nul = self.args.iter().any(|a| matches!(a, Value::Text(Some(t)) if t.contains('\0')));
        if nul { Err(sqlx::Error::Encode(Box::new(NulInText))) } else { Ok(()) }
    }

    /// Runs a statement; returns how many rows it changed.
    pub async fn execute<'a>(self, on: impl Into<On<'a>>) -> Result<u64, sqlx::Error> {
        self.check()?;
        let (sql, args) = (&*self.sql, &self.args[..]);
        Ok(match on.into() {
            On::Pool(Db::Sqlite(p)) => bind::<Sqlite>(sql, args).execute(p).await?.rows_affected(),
            On::Pool(Db::Postgres(p)) => bind::<Postgres>(sql, args).execute(p).await?.rows_affected(),
            On::Tx(Tx::Sqlite(t)) => bind::<Sqlite>(sql, args).execute(&mut **t).await?.rows_affected(),
            On::Tx(Tx::Postgres(t)) => bind::<Postgres>(sql, args).execute(&mut **t).await?.rows_affected(),
        })
    }

    pub async fn fetch_all<'a>(self, on: impl Into<On<'a>>) -> Result<Vec<Row>, sqlx::Error> {
        self.check()?;
        let (sql, args) = (&*self.sql, &self.args[..]);
        Ok(match on.into() {
            On::Pool(Db::Sqlite(p)) => bind(sql, args).fetch_all(p).await?.into_iter().map(Row::Sqlite).collect(),
            On::Pool(Db::Postgres(p)) => bind(sql, args).fetch_all(p).await?.into_iter().map(Row::Postgres).collect(),
            On::Tx(Tx::Sqlite(t)) => bind(sql, args).fetch_all(&mut **t).await?.into_iter().map(Row::Sqlite).collect(),
            On::Tx(Tx::Postgres(t)) => {
                bind(sql, args).fetch_all(&mut **t).await?.into_iter().map(Row::Postgres).collect()
            }
        })
    }

    pub async fn fetch_optional<'a>(self, on: impl Into<On<'a>>) -> Result<Option<Row>, sqlx::Error> {
        self.check()?;
        let (sql, args) = (&*self.sql, &self.args[..]);
        Ok(match on.into() {
            On::Pool(Db::Sqlite(p)) => bind(sql, args).fetch_optional(p).await?.map(Row::Sqlite),
            On::Pool(Db::Postgres(p)) => bind(sql, args).fetch_optional(p).await?.map(Row::Postgres),
            On::Tx(Tx::Sqlite(t)) => bind(sql, args).fetch_optional(&mut **t).await?.map(Row::Sqlite),
            On::Tx(Tx::Postgres(t)) => bind(sql, args).fetch_optional(&mut **t).await?.map(Row::Postgres),
        })
    }

    pub async fn fetch_one<'a>(self, on: impl Into<On<'a>>) -> Result<Row, sqlx::Error> {
        self.fetch_optional(on).await?.ok_or(sqlx::Error::RowNotFound)
    }

    /// The first column of the one row the query returns.
    pub async fn scalar<'a, T: Column>(self, on: impl Into<On<'a>>) -> Result<T, sqlx::Error> {
        self.fetch_one(on).await?.at(0)
    }

    /// The first column of the first row, if there is one.
    pub async fn optional_scalar<'a, T: Column>(self, on: impl Into<On<'a>>) -> Result<Option<T>, sqlx::Error> {
        self.fetch_optional(on).await?.map(|row| row.at(0)).transpose()
    }
}

/// What a column can be read as in both databases.
pub trait Column:
    for<'r> sqlx::Decode<'r, Sqlite> + sqlx::Type<Sqlite> + for<'r> sqlx::Decode<'r, Postgres> + sqlx::Type<Postgres>
{
}

impl<T> Column for T where
    T: for<'r> sqlx::Decode<'r, Sqlite>
        + sqlx::Type<Sqlite>
        + for<'r> sqlx::Decode<'r, Postgres>
        + sqlx::Type<Postgres>
{
}

/// A row of either database.
pub enum Row {
    Sqlite(SqliteRow),
    Postgres(PgRow),
}

impl Row {
    /// The column named `name`.
    pub fn get<T: Column>(&self, name: &str) -> Result<T, sqlx::Error> {
        use sqlx::Row as _;
        match self {
            Row::Sqlite(r) => r.try_get(name),
            Row::Postgres(r) => r.try_get(name),
        }
    }

    /// The column at `index`.
    pub fn at<T: Column>(&self, index: usize) -> Result<T, sqlx::Error> {
        use sqlx::Row as _;
        match self {
            Row::Sqlite(r) => r.try_get(index),
            Row::Postgres(r) => r.try_get(index),
        }
    }

    /// Whether the row has a column named `name`.
    pub fn has(&self, name: &str) -> bool {
        use sqlx::Row as _;
        match self {
            Row::Sqlite(r) => r.try_column(name).is_ok(),
            Row::Postgres(r) => r.try_column(name).is_ok(),
        }
    }
}

impl Db {
    pub fn kind(&self) -> Kind {
        match self {
            Db::Sqlite(_) => Kind::Sqlite,
            Db::Postgres(_) => Kind::Postgres,
        }
    }

    /// A transaction for a change. SQLite's takes the write lock at once (`BEGIN IMMEDIATE`, waiting up to the
    /// busy timeout): a deferred transaction that reads and then writes fails with SQLITE_BUSY_SNAPSHOT when
    /// another writer committed in between. So on SQLite writers run one at a time; PostgreSQL's (READ
    /// COMMITTED) run side by side, and what must not interleave takes [`Tx::lock_row`] or [`Tx::lock_keys`].
    pub async fn begin(&self) -> Result<Tx, sqlx::Error> {
        Ok(match self {
            Db::Sqlite(p) => Tx::Sqlite(p.begin_with("BEGIN IMMEDIATE").await?),
            Db::Postgres(p) => Tx::Postgres(p.begin().await?),
        })
    }

    /// Closes every connection (waiting for those in use).
    pub async fn close(&self) {
        match self {
            Db::Sqlite(p) => p.close().await,
            Db::Postgres(p) => p.close().await,
        }
    }
}

impl Tx {
    pub async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            Tx::Sqlite(t) => t.commit().await,
            Tx::Postgres(t) => t.commit().await,
        }
    }

    /// Holds the row of `table` whose `column` is `value` until the transaction ends, so that transactions
    /// that read something of it and then write (a count checked against a limit, the next sequence number)
    /// run one after the other. SQLite's write transactions already do.
    pub async fn lock_row(&mut self, table: &str, column: &str, value: impl Into<Value>) -> Result<(), sqlx::Error> {
        if let Tx::Postgres(_) = self {
            query(format!("SELECT 1 FROM {table} WHERE {column} = $1 FOR UPDATE")).bind(value).execute(self).await?;
        }
        Ok(())
    }

    /// Holds a lock on each of `keys` (names of things that have no row yet) until the transaction ends, taken
    /// in one order by everyone so that two transactions cannot wait for each other. SQLite's write
    /// transactions already run one at a time.
    pub async fn lock_keys(&mut self, keys: &[&str]) -> Result<(), sqlx::Error> {
        if let Tx::Postgres(_) = self {
            let mut ids: Vec<i64> = keys.iter().map(|k| lock_id(k)).collect();
            ids.sort_unstable();
            ids.dedup();
            for id in ids {
                query("SELECT pg_advisory_xact_lock($1)").bind(id).execute(&mut *self).await?;
            }
        }
        Ok(())
    }

    /// Takes the lock on `key` if no one holds it, until the transaction ends; false when another holds it.
    /// SQLite's write transactions already run one at a time: always true there.
    pub async fn try_lock_key(&mut self, key: &str) -> Result<bool, sqlx::Error> {
        match self {
            Tx::Postgres(_) => query("SELECT pg_try_advisory_xact_lock($1)").bind(lock_id(key)).scalar(self).await,
            Tx::Sqlite(_) => Ok(true),
        }
    }
}

/// A PostgreSQL advisory lock id for a name: the first 8 bytes of its SHA-256, the same in every replica.
pub fn lock_id(name: &str) -> i64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(name.as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    i64::from_le_bytes(bytes)
}
