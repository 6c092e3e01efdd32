//! `edge lists`: a network list shown, its entries exported, or synced with a file — the difference first, then
//! the additions in calls of at most 5,000 entries and the removals, each deployment followed to its end.

use std::{collections::BTreeSet, time::Duration};

use edge_api::{AddEntriesResult, EntryInput, EntryPage, NetworkList, NetworkListEntry, NetworkListPage, Task};
use serde_json::json;

use crate::{
    client::{Client, Exit, Failure, Result, wait_task},
    output::{Out, read_lines, table},
};

/// Entries per page when reading a list (the API's most).
const PAGE: u64 = 1000;

/// The list named `name_or_id`: an id, or a list's exact name.
pub fn find(client: &mut Client, name_or_id: &str) -> Result<NetworkList> {
    let by_id = client.get::<NetworkList>(&format!("/config/networklists/{}", encode(name_or_id)));
    match by_id {
        Ok(list) => return Ok(list),
        Err(f) if f.exit != Exit::NotFound => return Err(f),
        Err(_) => {}
    }
    let mut page = 1;
    loop {
        let lists: NetworkListPage =
            client.get(&format!("/config/networklists?deprecated=true&count={PAGE}&page={page}"))?;
        if let Some(l) = lists.items.into_iter().find(|l| l.name == name_or_id) {
            return Ok(l);
        }
        if !lists.has_more {
            return Err(Failure::new(Exit::NotFound, format!("no network list is named or numbered {name_or_id:?}")));
        }
        page += 1;
    }
}

/// A path segment percent-encoded.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Every entry of a list, oldest first.
fn entries(client: &mut Client, list: &NetworkList) -> Result<Vec<NetworkListEntry>> {
    let mut all = Vec::new();
    let mut page = 1;
    loop {
        let p: EntryPage = client.get(&format!("{}?count={PAGE}&page={page}", list.entries_uri))?;
        all.extend(p.items);
        if !p.has_more {
            return Ok(all);
        }
        page += 1;
    }
}

pub fn show(client: &mut Client, out: Out, name: &str) -> Result<()> {
    let list = find(client, name)?;
    let entries = entries(client, &list)?;
    let value = json!({"list": list, "entries": entries});
    out.result(&value, || {
        let mut lines = vec![format!(
            "{} ({}, {} list, id {})",
            list.name,
            if list.deprecated { "deprecated" } else { "active" },
            list.list_type,
            list.id
        )];
        if !list.description.is_empty() {
            lines.push(list.description.clone());
        }
        lines.push(format!("{} entries", entries.len()));
        let rows: Vec<Vec<String>> =
            entries.iter().map(|e| vec![e.entry.clone(), e.added_by.clone(), e.creation_timestamp.clone()]).collect();
        if !rows.is_empty() {
            lines.push(String::new());
            lines.extend(table(&["entry".into(), "added by".into(), "added".into()], &rows));
        }
        lines
    })
}

/// The entries, one a line, to `file` or stdout (`-` or none): what `sync` reads back.
pub fn export(client: &mut Client, out: Out, name: &str, file: Option<&str>) -> Result<()> {
    let list = find(client, name)?;
    let entries = entries(client, &list)?;
    let text: String = entries.iter().map(|e| format!("{}\n", e.entry)).collect();
    match file.filter(|f| *f != "-") {
        Some(path) => {
            std::fs::write(path, text).map_err(|e| Failure::new(Exit::Failure, format!("{path}: {e}")))?;
            out.say(format!("Wrote {} entries of {} to {path}", entries.len(), list.name));
        }
        None if out.json => out.json(&json!(entries.iter().map(|e| &e.entry).collect::<Vec<_>>()))?,
        None => print!("{text}"),
    }
    Ok(())
}

pub struct SyncArgs {
    pub list: String,
    pub file: String,
    pub dry_run: bool,
    pub timeout: Duration,
}

/// Makes the list hold exactly the entries of the file: reads and normalises the file as the server does
/// (refusing it whole when a line is not an entry of the list's type), prints the difference, then adds and
/// removes.
pub fn sync(client: &mut Client, out: Out, args: SyncArgs) -> Result<()> {
    let list = find(client, &args.list)?;
    let mut wanted = BTreeSet::new();
    let mut problems = Vec::new();
    for (line, text) in read_lines(&args.file)? {
        match edge_api::normalize_entry(&list.list_type, &text) {
            Ok(e) => {
                wanted.insert(e);
            }
            Err(e) => problems.push(format!("{}:{line}: {e}", args.file)),
        }
    }
    if !problems.is_empty() {
        return Err(Failure::new(
            Exit::Invalid,
            format!("{} lines are not {} entries; nothing was changed", problems.len(), list.list_type),
        )
        .with_details(problems));
    }
    if wanted.len() as u64 > edge_api::networklists::MAX_ENTRIES_PER_LIST {
        return Err(Failure::new(
            Exit::Invalid,
            format!("{} entries: a list holds at most {}", wanted.len(), edge_api::networklists::MAX_ENTRIES_PER_LIST),
        ));
    }
    let current = entries(client, &list)?;
    let have: BTreeSet<&str> = current.iter().map(|e| e.entry.as_str()).collect();
    let add: Vec<&String> = wanted.iter().filter(|e| !have.contains(e.as_str())).collect();
    let remove: Vec<&NetworkListEntry> = current.iter().filter(|e| !wanted.contains(&e.entry)).collect();
    if !out.json {
        println!(
            "{}: {} entries now, {} in {}: +{} -{}",
            list.name,
            current.len(),
            wanted.len(),
            args.file,
            add.len(),
            remove.len()
        );
        for e in add.iter().take(20) {
            println!("+ {e}");
        }
        for e in remove.iter().take(20) {
            println!("- {}", e.entry);
        }
        if add.len() > 20 || remove.len() > 20 {
            println!("  (the first 20 of each shown)");
        }
    }
    let mut tasks: Vec<Task> = Vec::new();
    if !args.dry_run {
        let chunks: Vec<&[&String]> = add.chunks(edge_api::networklists::MAX_ENTRIES_PER_CALL).collect();
        let bar = out.bar((chunks.len() + remove.len()) as u64, "syncing");
        for chunk in chunks {
            let body: Vec<EntryInput> =
                chunk.iter().map(|e| EntryInput { value: Some((*e).clone()), entry: None }).collect();
            let result: AddEntriesResult = client.post(&list.entries_uri, &body)?;
            bar.inc(1);
            tasks.push(wait_task(client, &result.task.uri, args.timeout, |_| {})?);
        }
        let mut last = None;
        for e in &remove {
            let reply = client.send("DELETE", &format!("{}/{}", list.entries_uri, encode(&e.id)), None, &[])?;
            last = Some(crate::client::parse::<Task>(reply.body, "an entry's removal")?);
            bar.inc(1);
        }
        // Each removal deploys the whole list as it then is: the last one's deployment carries them all.
        if let Some(task) = last {
            tasks.push(wait_task(client, &task.uri, args.timeout, |_| {})?);
        }
        bar.finish_and_clear();
    }
    let value = json!({
        "list": {"id": list.id, "name": list.name},
        "dry_run": args.dry_run,
        "entries_before": current.len(),
        "entries_after": if args.dry_run { current.len() } else { wanted.len() },
        "added": add,
        "removed": remove.iter().map(|e| &e.entry).collect::<Vec<_>>(),
        "tasks": tasks.iter().map(|t| json!({"id": t.id, "status": t.status})).collect::<Vec<_>>(),
    });
    out.result(&value, || {
        if args.dry_run {
            vec!["Dry run: nothing was changed.".into()]
        } else if tasks.is_empty() {
            vec!["Nothing to change.".into()]
        } else {
            vec![format!(
                "Done: +{} -{} in {} deployment{} ({}), now {} entries.",
                add.len(),
                remove.len(),
                tasks.len(),
                if tasks.len() == 1 { "" } else { "s" },
                tasks.iter().map(|t| t.status.as_str()).collect::<Vec<_>>().join(", "),
                wanted.len()
            )]
        }
    })
}
