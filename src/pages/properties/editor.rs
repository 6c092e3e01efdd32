//! The editor of one property: structured or raw JSON, saving with If-Match and merging three-way on 409.
//! Safe editing: unsaved changes are marked and can be discarded; saving shows the changes first; leaving
//! asks; the draft is kept in this browser (so a reload or an ended session offers it back); rollback saves
//! an old version through the same etag and merge path, without touching the draft.

use edge_api::{
    config::{ConfigDocument, PropertyConfig, diff, merge3},
    reading::{json_syntax_problem, read_config},
};
use leptos::prelude::*;
use leptos_router::{NavigateOptions, hooks::use_navigate};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    api::{self, ApiError},
    components::{
        async_view::{act, load},
        curl::CopyCurl,
        dialog::Dialog,
        errors::{ApiErrorNotice, FormError},
        layout::Unsaved,
        time::{Time, TimeMs},
    },
    nav::use_customer,
    session::Auth,
};

use super::{
    history::{ChangesTable, History},
    labels::human_problem,
    merge::{MergeScreen, MergeState},
    nodes::{Fields, StructuredEditor},
};

/// A draft kept in this browser: the version it was edited from and the configuration as edited.
#[derive(Serialize, Deserialize, Clone)]
struct StoredDraft {
    version: u64,
    config: Value,
    /// When it was last changed (ms).
    at: f64,
}

fn draft_key(customer: &str, name: &str) -> String {
    format!("edge-console.draft.{customer}.{name}")
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

fn stored_draft(key: &str) -> Option<StoredDraft> {
    serde_json::from_str(&storage()?.get_item(key).ok()??).ok()
}

/// What saving ended with.
#[derive(Clone)]
enum Saved {
    /// Stored; `merged_with` names the version merged in automatically, if any.
    Done { doc: Box<ConfigDocument>, merged_with: Option<u64> },
    /// Someone else saved; both changed the same things.
    Conflicts(Box<MergeState>),
}

pub(super) fn to_value(c: &PropertyConfig) -> Value {
    serde_json::to_value(c).unwrap_or(Value::Null)
}

/// Saves `mine`, edited from `base`. On 409 it reads the current version, merges three-way, and saves the
/// merge again when nothing conflicts (a few times at most, for busy properties).
async fn save_with_merge(
    customer: &str,
    name: &str,
    base: ConfigDocument,
    mine: Value,
    comment: &str,
) -> Result<Saved, ApiError> {
    let (mut base_value, mut etag, mut mine, mut merged_with) = (to_value(&base.config), base.etag, mine, None);
    for _ in 0..3 {
        match api::put_config(customer, name, &etag, &mine, comment).await {
            Ok(doc) => return Ok(Saved::Done { doc: Box::new(doc), merged_with }),
            Err(e) if e.status == 409 => {
                let theirs = api::get_config(customer, name).await?;
                let theirs_value = to_value(&theirs.config);
                let (merged, conflicts) = merge3(&base_value, &theirs_value, &mine);
                if !conflicts.is_empty() {
                    return Ok(Saved::Conflicts(Box::new(MergeState { theirs, merged, conflicts })));
                }
                merged_with = Some(theirs.version);
                (base_value, etag, mine) = (theirs_value, theirs.etag, merged);
            }
            Err(e) => return Err(e),
        }
    }
    Err(ApiError {
        status: 409,
        body: edge_api::ErrorBody::new("busy", "The property keeps changing; try again in a moment."),
    })
}

#[component]
pub(super) fn PropertyEditor(name: String) -> impl IntoView {
    let customer = use_customer();
    let auth = Auth::get();
    let navigate = use_navigate();
    let key = draft_key(&customer.get_untracked(), &name);
    let key = StoredValue::new(key);
    let name = StoredValue::new(name);
    let base = RwSignal::new(None::<ConfigDocument>);
    let draft = RwSignal::new(None::<PropertyConfig>);
    // The structured editor's fields: those holding a value that does not fit hold Save.
    let fields = Fields::provide();
    let raw = RwSignal::new(false);
    let raw_text = RwSignal::new(String::new());
    let raw_error = RwSignal::new(None::<String>);
    let comment = RwSignal::new(String::new());
    let notice = RwSignal::new(None::<String>);
    let merge = RwSignal::new(None::<MergeState>);
    let history_reload = RwSignal::new(0u32);
    let reviewing = RwSignal::new(None::<(ConfigDocument, Value)>);
    // A draft of an earlier visit, offered back.
    let offer = RwSignal::new(None::<StoredDraft>);
    let load = load(move || {
        let c = customer.get();
        async move { api::get_config(&c, &name.get_value()).await }
    });
    Effect::new(move |_| {
        if let Some(Ok(doc)) = load.get() {
            if let Some(d) = stored_draft(&key.get_value())
                && d.config != to_value(&doc.config)
            {
                offer.set(Some(d));
            }
            draft.set(Some(doc.config.clone()));
            fields.replaced();
            base.set(Some(doc));
        }
    });

    // The configuration as edited: from the raw text in raw mode.
    let mine = move || -> Result<Value, String> {
        if raw.get_untracked() {
            serde_json::from_str(&raw_text.get_untracked()).map_err(|e| json_syntax_problem(&e))
        } else {
            draft.get_untracked().map(|d| to_value(&d)).ok_or_else(|| "Nothing loaded yet.".to_string())
        }
    };
    // Unsaved: the draft (or the raw text) differs from the version it was edited from, or a field holds what
    // the user typed and the draft could not take.
    let dirty = Memo::new(move |_| {
        if fields.invalid.with(|m| !m.is_empty()) {
            return true;
        }
        let Some(b) = base.with(|b| b.as_ref().map(|b| to_value(&b.config))) else { return false };
        if raw.get() {
            serde_json::from_str::<Value>(&raw_text.get()).map_or(true, |v| v != b)
        } else {
            draft.with(|d| d.as_ref().is_some_and(|d| to_value(d) != b))
        }
    });
    // The draft goes into this browser's storage while unsaved, and the navigation asks before leaving.
    let unsaved = Unsaved::get();
    Effect::new(move |_| {
        let is_dirty = dirty.get();
        // Every edit is kept, not only the first.
        draft.track();
        raw_text.track();
        let version = base.with(|b| b.as_ref().map(|b| b.version));
        if let (Some(store), Some(version)) = (storage(), version) {
            if is_dirty {
                if let Ok(config) = mine() {
                    let d = StoredDraft { version, config, at: js_sys::Date::now() };
                    if let Ok(text) = serde_json::to_string(&d) {
                        let _ = store.set_item(&key.get_value(), &text);
                    }
                }
            } else if offer.get_untracked().is_none() {
                let _ = store.remove_item(&key.get_value());
            }
        }
        if let Some(u) = unsaved {
            u.0.set(is_dirty.then(|| {
                format!(
                    "Your changes to {} are not saved. They stay in this browser: opening the property again offers them back.",
                    name.get_value()
                )
            }));
        }
    });
    on_cleanup(move || {
        if let Some(u) = unsaved {
            u.0.set(None);
        }
    });

    let save = act(move |(base_doc, mine, comment): &(ConfigDocument, Value, String)| {
        let (c, base_doc, mine, comment) = (customer.get_untracked(), base_doc.clone(), mine.clone(), comment.clone());
        async move { save_with_merge(&c, &name.get_value(), base_doc, mine, &comment).await }
    });
    let saved = move |doc: ConfigDocument| {
        draft.set(Some(doc.config.clone()));
        fields.replaced();
        raw_text.set(serde_json::to_string_pretty(&doc.config).unwrap_or_default());
        base.set(Some(doc));
        if let Some(s) = storage() {
            let _ = s.remove_item(&key.get_value());
        }
        history_reload.update(|n| *n += 1);
    };
    Effect::new(move |_| match save.value().get() {
        Some(Ok(Saved::Done { doc, merged_with })) => {
            notice.set(Some(match merged_with {
                Some(v) => format!(
                    "Someone else saved version {v} meanwhile; your changes were merged with theirs and saved as version {}.",
                    doc.version
                ),
                None => format!("Saved as version {}. Its deployment is under Tasks.", doc.version),
            }));
            comment.set(String::new());
            merge.set(None);
            reviewing.set(None);
            saved(*doc);
        }
        Some(Ok(Saved::Conflicts(m))) => {
            reviewing.set(None);
            merge.set(Some(*m));
        }
        _ => {}
    });
    // The API names places by JSON path: they read as the editor names them, the nodes as in the draft sent.
    let save_error = Signal::derive(move || {
        save.value().get().and_then(Result::err).map(|mut e| {
            let sent = reviewing.with_untracked(|r| r.as_ref().map(|(_, v)| v.clone())).or_else(|| mine().ok());
            let docs: Vec<&Value> = sent.iter().collect();
            for d in &mut e.body.details {
                d.message = human_problem(&d.message, &docs);
            }
            e
        })
    });
    // Save: first the changes, for review; the dialog's button saves.
    let start_save = move || {
        notice.set(None);
        raw_error.set(None);
        // A field that holds what the draft could not take: the user corrects it first (the list says where).
        if fields.invalid.with_untracked(|m| !m.is_empty()) {
            return;
        }
        let Some(base_doc) = base.get_untracked() else { return };
        match mine() {
            Ok(v) => reviewing.set(Some((base_doc, v))),
            Err(e) => raw_error.set(Some(e)),
        }
    };
    let save_now = move || {
        if let Some((base_doc, v)) = reviewing.get_untracked() {
            save.dispatch((base_doc, v, comment.get_untracked()));
        }
    };
    // Rollback: an old version's configuration saved over the current one (read afresh), with If-Match and
    // the merge of a save. A draft in progress stays, edited from the version it was, and merges on its save.
    let rollback = act(move |v: &u64| {
        // The property's name is read now: the view may be gone when the answers come.
        let (c, v, property) = (customer.get_untracked(), *v, name.get_value());
        async move {
            let old = api::config_version(&c, &property, v).await?;
            let current = api::get_config(&c, &property).await?;
            match save_with_merge(&c, &property, current, to_value(&old.config), &format!("Roll back to version {v}"))
                .await?
            {
                Saved::Done { doc, .. } => Ok(*doc),
                Saved::Conflicts(_) => Err(ApiError {
                    status: 409,
                    body: edge_api::ErrorBody::new("busy", "The property changed meanwhile; try the rollback again."),
                }),
            }
        }
    });
    Effect::new(move |_| {
        if let Some(Ok(doc)) = rollback.value().get() {
            if dirty.get_untracked() {
                notice.set(Some(format!(
                    "Rolled back as version {}. Your unsaved changes are kept; saving them merges them with it.",
                    doc.version
                )));
                history_reload.update(|n| *n += 1);
            } else {
                notice.set(Some(format!("Rolled back as version {}.", doc.version)));
                saved(doc);
            }
        }
    });
    let discard = move |_| {
        if let Some(b) = base.get_untracked() {
            raw_text.set(serde_json::to_string_pretty(&b.config).unwrap_or_default());
            draft.set(Some(b.config));
            fields.replaced();
        }
        if let Some(s) = storage() {
            let _ = s.remove_item(&key.get_value());
        }
        notice.set(Some("Your changes were discarded.".into()));
    };
    let restore = move |d: StoredDraft| {
        offer.set(None);
        let Ok(config) = serde_json::from_value::<PropertyConfig>(d.config) else { return };
        let current = base.get_untracked().map(|b| b.version);
        if current == Some(d.version) {
            draft.set(Some(config));
            fields.replaced();
            raw.set(false);
            return;
        }
        // Edited from an older version: that version is the base, so that saving merges with what came since.
        let (c, property) = (customer.get_untracked(), name.get_value());
        leptos::task::spawn_local(async move {
            if let Ok(old) = api::config_version(&c, &property, d.version).await {
                let _ = notice.try_set(Some(format!(
                    "Your draft was edited from version {}; saving it merges it with the versions since.",
                    d.version
                )));
                let _ = base.try_set(Some(old));
                if draft.try_set(Some(config)).is_none() {
                    fields.replaced();
                }
                let _ = raw.try_set(false);
            }
        });
    };
    let toggle_raw = move |_| {
        raw_error.set(None);
        if raw.get_untracked() {
            // Checked as the server checks it, every problem in words at its place as the editor names it.
            let read = serde_json::from_str::<Value>(&raw_text.get_untracked())
                .map_err(|e| vec![json_syntax_problem(&e)])
                .and_then(|v| read_config(&v).map_err(|p| p.iter().map(|m| human_problem(m, &[&v])).collect()));
            match read {
                Ok(c) => {
                    draft.set(Some(c));
                    fields.replaced();
                    raw.set(false);
                }
                Err(problems) => raw_error.set(Some(format!(
                    "Fix the configuration before leaving raw mode:\n{}",
                    problems.iter().map(|p| format!("• {p}")).collect::<Vec<_>>().join("\n")
                ))),
            }
        } else {
            raw_text.set(
                draft
                    .with_untracked(|d| d.as_ref().map(|d| serde_json::to_string_pretty(d).unwrap_or_default()))
                    .unwrap_or_default(),
            );
            raw.set(true);
        }
    };
    let back = move |_| navigate("?", NavigateOptions::default());
    let writable = move || auth.can_write();
    // Made once for the editor's life: a signal derived inside the closure below would be disposed with that
    // closure's run while the fields it was given still read it (a panic when the session ends under them).
    let can_edit = Signal::derive(writable);

    view! {
        <p>
            <button class="link" on:click=back>"← All properties"</button>
        </p>
        {move || {
            load.get()
                .and_then(Result::err)
                .map(|error| view! { <ApiErrorNotice error /> })
        }}
        {move || {
            offer
                .get()
                .map(|d| {
                    let again = d.clone();
                    view! {
                        <div class="notice info draft-offer" role="status" id="draft-offer">
                            <span>
                                "You have unsaved changes to this property from "
                                <TimeMs ms=d.at as i64 />
                                {format!(" (edited from version {}). ", d.version)}
                            </span>
                            <button type="button" class="primary" on:click=move |_| restore(again.clone())>"Restore my changes"</button>
                            <button type="button" on:click=move |_| {
                                offer.set(None);
                                if let Some(s) = storage() {
                                    let _ = s.remove_item(&key.get_value());
                                }
                            }>"Discard them"</button>
                        </div>
                    }
                })
        }}
        {move || {
            base.get()
                .map(|b| {
                    view! {
                        <div class="editor-head">
                            <h2>{b.config.name.clone()}</h2>
                            <span class="muted">
                                {format!("Version {} · saved ", b.version)}
                                <Time iso=b.modified.clone() />
                                {format!(" by {}", b.author)}
                                {(!b.comment.is_empty()).then(|| format!(" · “{}”", b.comment))}
                            </span>
                            <code class="etag" title="ETag">{b.etag.clone()}</code>
                            <CopyCurl path=move || Some(api::config_url(&customer.get(), &name.get_value())) />
                        </div>
                    }
                })
        }}
        {move || merge.get().map(|m| view! { <MergeScreen state=m draft base merge raw save=Callback::new(move |_| start_save()) /> })}
        <Show when=move || merge.get().is_none() && draft.get().is_some()>
            <div class="toolbar">
                <button on:click=toggle_raw id="toggle-raw" disabled=move || !fields.invalid.with(|m| m.is_empty())>
                    {move || if raw.get() { "Structured editor" } else { "Raw JSON" }}
                </button>
                <Show when=move || dirty.get()>
                    <span class="badge unsaved" id="unsaved" role="status">"● Unsaved changes"</span>
                </Show>
                <span class="spacer"></span>
                <Show when=writable>
                    <button type="button" id="discard" disabled=move || !dirty.get() on:click=discard>"Discard"</button>
                    <button
                        class="primary"
                        id="save-config"
                        disabled=move || save.pending().get() || !fields.invalid.with(|m| m.is_empty())
                        aria-describedby=move || fields.invalid.with(|m| !m.is_empty()).then_some("invalid-fields")
                        on:click=move |_| start_save()
                    >
                        {move || if save.pending().get() { "Saving…" } else { "Save…" }}
                    </button>
                </Show>
            </div>
            {move || raw_error.get().map(|e| view! { <div class="notice error lines" role="alert" id="raw-error">{e}</div> })}
            {move || {
                let problems = fields.problems();
                (!problems.is_empty())
                    .then(|| {
                        view! {
                            <div class="notice error" id="invalid-fields" role="status">
                                <strong>"Correct these fields to save:"</strong>
                                <ul>{problems.into_iter().map(|p| view! { <li>{p}</li> }).collect_view()}</ul>
                            </div>
                        }
                    })
            }}
            <FormError error=save_error fields=&[] />
            {move || notice.get().map(|n| view! { <div class="notice success" role="status" id="save-notice">{n}</div> })}
            {move || {
                if raw.get() {
                    view! { <textarea class="raw-json" name="raw" rows="28" spellcheck="false" aria-label="Configuration as JSON" bind:value=raw_text></textarea> }.into_any()
                } else {
                    view! { <StructuredEditor draft writable=can_edit /> }.into_any()
                }
            }}
        </Show>
        {move || {
            reviewing
                .get()
                .map(|(b, mine)| {
                    let before = to_value(&b.config);
                    let changes = diff(&before, &mine);
                    let n = changes.len();
                    let docs = vec![mine, before];
                    view! {
                        <Dialog title="Review your changes".to_string() on_close=Callback::new(move |_| reviewing.set(None)) id="review">
                            <p>{format!("{n} change(s) against version {}:", b.version)}</p>
                            <ChangesTable changes docs />
                            <label>
                                "What changed (optional)"
                                <input class="comment" name="comment" bind:value=comment />
                            </label>
                            <FormError error=save_error fields=&[] />
                            <div class="actions">
                                <button type="button" autofocus=true on:click=move |_| reviewing.set(None)>"Keep editing"</button>
                                <button type="button" class="primary" id="confirm-save" disabled=move || save.pending().get() || n == 0 on:click=move |_| save_now()>
                                    "Save"
                                </button>
                            </div>
                        </Dialog>
                    }
                })
        }}
        <History
            name=name.get_value()
            reload=history_reload
            writable=can_edit
            rollback
            current=Signal::derive(move || base.with(|b| b.as_ref().map(|b| to_value(&b.config))))
        />
    }
}
