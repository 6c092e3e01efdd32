//! `edge config get|put`: a property's configuration as a file, and back. The file is the API's whole answer —
//! `config`, and the `etag` and `version` it was read at — so that `put` sends it with `If-Match` from the read:
//! when someone changed the property since, the server answers 409 and `put` shows which fields both changed.

use edge_api::config::{ConfigDocument, merge3};
use serde_json::{Value, json};

use crate::{
    client::{Client, Exit, Failure, Result},
    output::Out,
};

fn config_path(property: &str) -> String {
    format!("/properties/{property}/config")
}

/// The configuration document of `property` (a version of its history with `version`) on stdout.
pub fn get(client: &mut Client, property: &str, version: Option<u64>) -> Result<()> {
    let path = match version {
        Some(v) => format!("{}/versions/{v}", config_path(property)),
        None => config_path(property),
    };
    let doc: Value = client.get(&path)?;
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &doc)?;
    std::io::Write::write_all(&mut out, b"\n")?;
    Ok(())
}

/// Sends the file's `config` with `If-Match` from its `etag`; `comment` (or the file's) as the version's
/// comment.
pub fn put(client: &mut Client, out: Out, property: &str, file: &str, comment: Option<String>) -> Result<()> {
    let text = std::fs::read_to_string(file).map_err(|e| Failure::new(Exit::Failure, format!("{file}: {e}")))?;
    let doc: Value =
        serde_json::from_str(&text).map_err(|e| Failure::new(Exit::Invalid, format!("{file} is not JSON: {e}")))?;
    let (Some(config), Some(etag)) = (doc.get("config"), doc["etag"].as_str()) else {
        return Err(Failure::new(
            Exit::Invalid,
            format!("{file} is not what `edge config get` writes: it needs `config` and the `etag` it was read at"),
        ));
    };
    let comment = comment.or_else(|| doc["comment"].as_str().map(str::to_string)).unwrap_or_default();
    let body = json!({"config": config, "comment": comment});
    let quoted = if etag.starts_with('"') { etag.to_string() } else { format!("\"{etag}\"") };
    let sent = client.send("PUT", &config_path(property), Some(&body), &[("If-Match", &quoted)]);
    match sent {
        Ok(reply) => {
            let saved: ConfigDocument = crate::client::parse(reply.body.clone(), "the update")?;
            out.result(&reply.body, || {
                vec![format!("Saved {property}: version {} (etag {}), as {}.", saved.version, saved.etag, saved.author)]
            })
        }
        Err(f) if f.status == Some(409) => Err(conflict(client, property, &doc, f)),
        Err(f) => Err(f),
    }
}

/// A 409: what changed on the server since the file was read, and which of those fields the file changed too.
fn conflict(client: &mut Client, property: &str, mine: &Value, failure: Failure) -> Failure {
    let read_version = mine["version"].as_u64();
    let base: Option<Value> =
        read_version.and_then(|v| client.get::<Value>(&format!("{}/versions/{v}", config_path(property))).ok());
    let current: Option<Value> = client.get::<Value>(&config_path(property)).ok();
    let (Some(base), Some(current)) = (base, current) else {
        return Failure {
            message: format!("{property} was changed since it was read: {}", failure.message),
            ..failure
        };
    };
    let theirs = &current["config"];
    let (_, conflicts) = merge3(&base["config"], theirs, &mine["config"]);
    let theirs_changed = edge_api::config::diff(&base["config"], theirs);
    let mut details: Vec<String> = conflicts
        .iter()
        .map(|c| {
            let show = |v: &Option<Value>| v.as_ref().map(|v| v.to_string()).unwrap_or_else(|| "(absent)".into());
            format!("{}: yours {}, theirs {} (was {})", c.path, show(&c.mine), show(&c.theirs), show(&c.base))
        })
        .collect();
    if details.is_empty() {
        details = theirs_changed.iter().map(|c| format!("{} ({} by them; not by you)", c.path, c.op)).collect();
    }
    let message = format!(
        "{property} was changed since version {} was read (now version {} by {}): {} field{} changed by both; \
         nothing was saved. Read it again (edge config get) and redo your change.",
        read_version.unwrap_or_default(),
        current["version"],
        current["author"].as_str().unwrap_or("?"),
        conflicts.len(),
        if conflicts.len() == 1 { "" } else { "s" },
    );
    Failure { exit: Exit::Conflict, message, details, status: failure.status, kind: failure.kind }
}
