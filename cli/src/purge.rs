//! `edge purge`: URLs from the command line or a file, sent in requests of 500 (as the console sends them) paced
//! under the customer's limit of 2 a second, then followed until every transaction has succeeded.

use std::time::{Duration, Instant};

use edge_api::{PurgeBody, PurgeRequest, PurgeResponse, PurgeUri, TransactionStatus, limits::MAX_URI_CHARS};
use serde_json::json;

use crate::{
    client::{Client, Exit, Failure, Result},
    output::{Out, read_lines},
};

/// URIs per request: the console's chunk.
pub const CHUNK: usize = 500;

pub struct PurgeArgs {
    pub urls: Vec<String>,
    pub file: Option<String>,
    pub prefix: bool,
    pub expire: bool,
    pub wait: bool,
    pub timeout: Duration,
}

/// The URIs to purge, each with where it came from (for messages), checked for what needs no server.
fn gather(args: &PurgeArgs) -> Result<Vec<(String, String)>> {
    let mut uris: Vec<(String, String)> =
        args.urls.iter().enumerate().map(|(i, u)| (format!("argument {}", i + 1), u.trim().to_string())).collect();
    if let Some(file) = &args.file {
        uris.extend(read_lines(file)?.into_iter().map(|(n, l)| (format!("{file}:{n}"), l)));
    }
    if uris.is_empty() {
        return Err(Failure::new(Exit::Usage, "nothing to purge: give URLs or --file FILE"));
    }
    let problems: Vec<String> = uris
        .iter()
        .filter(|(_, u)| u.chars().count() > MAX_URI_CHARS || u.contains(char::is_whitespace) || !u.contains('/'))
        .map(|(at, u)| {
            format!("{at}: {:?} is not host/path (at most {MAX_URI_CHARS} characters)", edge_api::limits::cut(u, 80))
        })
        .collect();
    if !problems.is_empty() {
        return Err(Failure::new(Exit::Invalid, "some URLs cannot be purged; nothing was sent").with_details(problems));
    }
    Ok(uris)
}

pub fn run(client: &mut Client, out: Out, args: PurgeArgs) -> Result<()> {
    let uris = gather(&args)?;
    let mode = if args.prefix { "PREFIX_LITERAL" } else { "EXACT_LITERAL" };
    let action = if args.expire { "EXPIRE" } else { "PURGE" };
    let chunks: Vec<&[(String, String)]> = uris.chunks(CHUNK).collect();
    let bar = out.bar(chunks.len() as u64, "purging");
    let mut transactions = Vec::new();
    for chunk in &chunks {
        let body = PurgeRequest {
            purge_request: PurgeBody {
                action: action.into(),
                uris: chunk
                    .iter()
                    .map(|(_, u)| PurgeUri {
                        uri_pattern: u.clone(),
                        match_mode: mode.into(),
                        cache_key_modifier_regex: None,
                    })
                    .collect(),
            },
        };
        let sent: std::result::Result<PurgeResponse, Failure> = client.post("/cache/purge", &body);
        let answer = sent.map_err(|mut f| {
            // `uris[3]: …` names a URI of this chunk: say where it came from.
            f.details = f.details.iter().map(|d| locate(d, chunk)).collect();
            f.message =
                format!("{} ({} of {} URLs were submitted before)", f.message, transactions.len() * CHUNK, uris.len());
            f
        })?;
        transactions.push(answer.transaction_id);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let mut statuses = Vec::new();
    if args.wait {
        statuses = wait_all(client, out, &transactions, args.timeout)?;
    }
    let value = json!({
        "urls": uris.len(),
        "requests": chunks.len(),
        "action": action,
        "match_mode": mode,
        "transactions": transactions.iter().enumerate().map(|(i, id)| json!({
            "id": id,
            "status": statuses.get(i).cloned().unwrap_or_else(|| "SUBMITTED".to_string()),
        })).collect::<Vec<_>>(),
    });
    out.result(&value, || {
        let ids: Vec<String> = transactions.iter().map(|t| t.to_string()).collect();
        let state = if args.wait { "done" } else { "submitted (not waited for)" };
        vec![format!(
            "{} {} URL{} in {} request{}: transaction{} {} {state}",
            if args.expire { "Expired" } else { "Purged" },
            uris.len(),
            if uris.len() == 1 { "" } else { "s" },
            chunks.len(),
            if chunks.len() == 1 { "" } else { "s" },
            if ids.len() == 1 { "" } else { "s" },
            ids.join(", ")
        )]
    })
}

/// `uris[i]: …` of a chunk's answer, with the file line or argument the URI came from.
fn locate(detail: &str, chunk: &[(String, String)]) -> String {
    let index = detail
        .strip_prefix("uris[")
        .and_then(|r| r.split_once(']'))
        .and_then(|(i, rest)| Some((i.parse::<usize>().ok()?, rest)));
    match index.and_then(|(i, rest)| chunk.get(i).map(|(at, _)| format!("{at}{rest}"))) {
        Some(located) => located,
        None => detail.to_string(),
    }
}

/// Follows every transaction until it succeeded, up to `timeout` in all.
fn wait_all(client: &mut Client, out: Out, ids: &[i64], timeout: Duration) -> Result<Vec<String>> {
    let started = Instant::now();
    let bar = out.bar(ids.len() as u64, "waiting");
    let mut statuses = vec![String::from("PENDING"); ids.len()];
    loop {
        for (i, id) in ids.iter().enumerate() {
            if statuses[i] == "SUCCESS" {
                continue;
            }
            let status: TransactionStatus = client.get(&format!("/transactions/{id}"))?;
            statuses[i] = status.transaction_response.transaction_status;
            if statuses[i] == "SUCCESS" {
                bar.inc(1);
            }
        }
        if statuses.iter().all(|s| s == "SUCCESS") {
            bar.finish_and_clear();
            return Ok(statuses);
        }
        if started.elapsed() >= timeout {
            bar.finish_and_clear();
            let pending: Vec<String> =
                ids.iter().zip(&statuses).filter(|(_, s)| *s != "SUCCESS").map(|(id, _)| id.to_string()).collect();
            return Err(Failure::new(
                Exit::TaskFailed,
                format!("transactions {} did not finish within {} s", pending.join(", "), timeout.as_secs()),
            ));
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}
