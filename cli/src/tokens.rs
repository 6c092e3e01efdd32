//! `edge tokens`: a person's API tokens — listed, made (the secret printed once, alone on stdout, so that
//! `export EDGE_TOKEN=$(edge tokens create …)` works), rolled and revoked — and the scopes there are.

use chrono::Utc;
use edge_api::{ApiToken, Scope, TokenInput, TokenPage};
use serde_json::json;

use crate::{
    client::{Client, Exit, Failure, Result},
    output::{Out, table},
    stats::parse_duration,
};

fn row(t: &ApiToken) -> Vec<String> {
    let expires = match (&t.expires, t.expired) {
        (None, _) => "never".to_string(),
        (Some(e), true) => format!("expired {e}"),
        (Some(e), false) => e.clone(),
    };
    let used = match (&t.last_used_at, &t.last_used_from) {
        (Some(at), Some(from)) => format!("{at} from {from}"),
        _ => "never".into(),
    };
    vec![t.id.clone(), t.name.clone(), format!("{}…", t.hint), t.username.clone(), t.scopes.join(" "), expires, used]
}

const HEADER: [&str; 7] = ["id", "name", "secret", "user", "scopes", "expires", "last used"];

pub fn list(client: &mut Client, out: Out, user: Option<&str>) -> Result<()> {
    let mut path = "/tokens?count=1000".to_string();
    if let Some(u) = user {
        path.push_str(&format!("&user={u}"));
    }
    let page: TokenPage = client.get(&path)?;
    out.result(&serde_json::to_value(&page)?, || {
        let rows: Vec<Vec<String>> = page.items.iter().map(row).collect();
        let mut lines = table(&HEADER.map(String::from), &rows);
        if page.total > page.items.len() as u64 {
            lines.push(format!("({} of {})", page.items.len(), page.total));
        }
        lines
    })
}

pub fn show(client: &mut Client, out: Out, id: &str) -> Result<()> {
    let token: ApiToken = client.get(&format!("/tokens/{id}"))?;
    out.result(&serde_json::to_value(&token)?, || {
        HEADER
            .iter()
            .zip(row(&token))
            .map(|(h, v)| format!("{h:>10}: {v}"))
            .chain([format!(
                "{:>10}: {}",
                "ranges",
                if token.allowed_cidrs.is_empty() { "any address".into() } else { token.allowed_cidrs.join(" ") }
            )])
            .collect()
    })
}

pub struct CreateArgs {
    pub name: String,
    pub scopes: Vec<String>,
    /// `30d`, `12h`, or a time (`2027-01-31T00:00:00Z`).
    pub expires: Option<String>,
    pub allow: Vec<String>,
}

/// An expiry as given: a duration from now, or an RFC 3339 time as it is.
fn expiry(text: &str) -> Result<String> {
    if text.contains('T') {
        return Ok(text.to_string());
    }
    Ok((Utc::now() + parse_duration(text)?).format("%Y-%m-%dT%H:%M:%SZ").to_string())
}

/// The secret of a token just made or rolled: alone on stdout (or the whole token with `--json`), and what it
/// is on stderr.
fn print_secret(out: Out, token: &ApiToken, what: &str) -> Result<()> {
    if out.json {
        return out.json(&serde_json::to_value(token)?);
    }
    let secret = token.secret.as_deref().unwrap_or_default();
    eprintln!(
        "{what} token {:?} ({}), scopes {}; its secret, shown this once:",
        token.name,
        token.id,
        token.scopes.join(" ")
    );
    println!("{secret}");
    Ok(())
}

pub fn create(client: &mut Client, out: Out, args: CreateArgs) -> Result<()> {
    let input = TokenInput {
        name: Some(args.name),
        scopes: Some(args.scopes),
        expires: Some(args.expires.as_deref().map(expiry).transpose()?),
        allowed_cidrs: Some(args.allow),
    };
    let token: ApiToken = client.post("/tokens", &input)?;
    print_secret(out, &token, "Made")
}

pub fn roll(client: &mut Client, out: Out, id: &str) -> Result<()> {
    let token: ApiToken = client.post(&format!("/tokens/{id}/roll"), &json!({}))?;
    print_secret(out, &token, "Rolled")
}

pub fn revoke(client: &mut Client, out: Out, id: &str) -> Result<()> {
    client.send("DELETE", &format!("/tokens/{id}"), None, &[])?;
    out.result(&json!({"revoked": id}), || vec![format!("Revoked token {id}: it no longer works.")])
}

/// The scopes, what each allows, and the operations each opens (edge-api's table).
pub fn scopes(out: Out) -> Result<()> {
    let value: Vec<_> = Scope::ALL
        .iter()
        .map(|s| {
            let ops: Vec<String> = edge_api::OPERATION_SCOPES
                .iter()
                .filter(|(_, _, a)| *a == edge_api::TokenAccess::Scope(*s))
                .map(|(m, p, _)| format!("{m} {p}"))
                .collect();
            json!({"scope": s.as_str(), "allows": s.label(), "operations": ops})
        })
        .collect();
    out.result(&json!(value), || {
        let rows: Vec<Vec<String>> =
            Scope::ALL.iter().map(|s| vec![s.as_str().to_string(), s.label().to_string()]).collect();
        table(&["scope".into(), "allows".into()], &rows)
    })
}

/// A token id as the API writes them (16 hex digits), checked before it goes into a path.
pub fn check_id(id: &str) -> Result<&str> {
    if id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(id)
    } else {
        Err(Failure::new(Exit::Usage, format!("{id:?} is not a token id (16 hex digits; see edge tokens list)")))
    }
}
