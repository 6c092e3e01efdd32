//! Statements and the values bound to their `?`s, and how inserts are sent: dictionary rows, and the settings
//! under which an insert writes whole parts.

/// A value bound to a `?` of a statement.
#[derive(Clone, Debug)]
pub(super) enum Arg {
    Text(String),
    Int(i64),
    Unsigned(u64),
}

/// A statement and the values of its `?`s, in order.
#[derive(Default, Clone)]
pub(super) struct Sql {
    pub(super) text: String,
    pub(super) args: Vec<Arg>,
}

impl Sql {
    pub(super) fn push(&mut self, s: &str) -> &mut Self {
        self.text.push_str(s);
        self
    }
    pub(super) fn text(&mut self, v: &str) -> &mut Self {
        self.text.push('?');
        self.args.push(Arg::Text(v.to_string()));
        self
    }
    pub(super) fn int(&mut self, v: i64) -> &mut Self {
        self.text.push('?');
        self.args.push(Arg::Int(v));
        self
    }
    pub(super) fn unsigned(&mut self, v: u64) -> &mut Self {
        self.text.push('?');
        self.args.push(Arg::Unsigned(v));
        self
    }
    pub(super) fn append(&mut self, other: Sql) -> &mut Self {
        self.text.push_str(&other.text);
        self.args.extend(other.args);
        self
    }
    /// The statement and its values as one text: the same text for the same statement.
    pub(super) fn key(&self) -> String {
        format!("{}\n{:?}", self.text, self.args)
    }
}

pub(super) async fn insert_dict(client: &clickhouse::Client, dict: Vec<u8>) -> Result<(), clickhouse::error::Error> {
    let mut insert = client.insert_formatted_with("INSERT INTO dict_in (customer, dim, value, seq) FORMAT RowBinary");
    insert.send(dict.into()).await?;
    insert.end().await
}

/// Settings under which an insert, and each view it feeds, writes one block — one part per partition (day),
/// each whole or not at all — however many rows it has: rows are read and squashed into one block, and
/// aggregation stays single-level (two-level aggregation answers in 256 blocks).
const ONE_BLOCK: [(&str, &str); 5] = [
    ("max_insert_block_size", "4294967295"),
    ("min_insert_block_size_rows", "4294967295"),
    ("min_insert_block_size_bytes", "1099511627776"),
    ("group_by_two_level_threshold", "0"),
    ("group_by_two_level_threshold_bytes", "0"),
];

pub(super) fn one_block(
    mut insert: clickhouse::insert_formatted::InsertFormatted,
) -> clickhouse::insert_formatted::InsertFormatted {
    for (name, value) in ONE_BLOCK {
        insert = insert.with_setting(name, value);
    }
    insert
}

pub(super) fn one_block_query(mut query: clickhouse::query::Query) -> clickhouse::query::Query {
    for (name, value) in ONE_BLOCK {
        query = query.with_setting(name, value);
    }
    query
}

pub(super) fn bind(mut q: clickhouse::query::Query, args: Vec<Arg>) -> clickhouse::query::Query {
    for a in args {
        q = match a {
            Arg::Text(s) => q.bind(s),
            Arg::Int(i) => q.bind(i),
            Arg::Unsigned(u) => q.bind(u),
        };
    }
    q
}
