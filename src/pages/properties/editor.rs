//! The editor of one property: structured or raw JSON, saving with If-Match and merging three-way on 409.

use edge_api::config::{ConfigDocument, Conflict, PropertyConfig, merge3};
use leptos::prelude::*;
use leptos_router::{NavigateOptions, hooks::use_navigate};
use serde_json::Value;

use crate::{
    api::{self, ApiError},
    components::{
        async_view::{act, load},
        errors::{ApiErrorNotice, FormError},
        time::datetime,
    },
    pages::use_customer,
    session::Auth,
};

use super::{history::History, merge::MergeScreen, nodes::StructuredEditor};

/// What saving ended with.
#[derive(Clone)]
enum Saved {
    /// Stored; `merged_with` names the version merged in automatically, if any.
    Done { doc: Box<ConfigDocument>, merged_with: Option<u64> },
    /// Someone else saved; both changed the same things.
    Conflicts(Box<MergeState>),
}

#[derive(Clone)]
pub(super) struct MergeState {
    pub(super) theirs: ConfigDocument,
    /// The merge, holding their values where there are conflicts.
    pub(super) merged: Value,
    pub(super) conflicts: Vec<Conflict>,
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
    let name = StoredValue::new(name);
    let base = RwSignal::new(None::<ConfigDocument>);
    let draft = RwSignal::new(None::<PropertyConfig>);
    let raw = RwSignal::new(false);
    let raw_text = RwSignal::new(String::new());
    let raw_error = RwSignal::new(None::<String>);
    let comment = RwSignal::new(String::new());
    let notice = RwSignal::new(None::<String>);
    let merge = RwSignal::new(None::<MergeState>);
    let history_reload = RwSignal::new(0u32);
    let load = load(move || {
        let c = customer.get();
        async move { api::get_config(&c, &name.get_value()).await }
    });
    Effect::new(move |_| {
        if let Some(Ok(doc)) = load.get() {
            draft.set(Some(doc.config.clone()));
            base.set(Some(doc));
        }
    });

    // The configuration as edited: from the raw text in raw mode.
    let mine = move || -> Result<Value, String> {
        if raw.get_untracked() {
            let parsed: Value =
                serde_json::from_str(&raw_text.get_untracked()).map_err(|e| format!("The JSON is not valid: {e}"))?;
            Ok(parsed)
        } else {
            draft.get_untracked().map(|d| to_value(&d)).ok_or_else(|| "Nothing loaded yet.".to_string())
        }
    };
    let save = act(move |(base_doc, mine, comment): &(ConfigDocument, Value, String)| {
        let (c, base_doc, mine, comment) = (customer.get_untracked(), base_doc.clone(), mine.clone(), comment.clone());
        async move { save_with_merge(&c, &name.get_value(), base_doc, mine, &comment).await }
    });
    Effect::new(move |_| match save.value().get() {
        Some(Ok(Saved::Done { doc, merged_with })) => {
            notice.set(Some(match merged_with {
                Some(v) => format!(
                    "Someone else saved version {v} meanwhile; your changes were merged with theirs and saved as version {}.",
                    doc.version
                ),
                None => format!("Saved as version {}. Its deployment is under Tasks.", doc.version),
            }));
            draft.set(Some(doc.config.clone()));
            raw_text.set(serde_json::to_string_pretty(&doc.config).unwrap_or_default());
            base.set(Some(*doc));
            comment.set(String::new());
            merge.set(None);
            history_reload.update(|n| *n += 1);
        }
        Some(Ok(Saved::Conflicts(m))) => merge.set(Some(*m)),
        _ => {}
    });
    let save_error = Signal::derive(move || save.value().get().and_then(Result::err));
    let start_save = move || {
        notice.set(None);
        raw_error.set(None);
        let Some(base_doc) = base.get_untracked() else { return };
        match mine() {
            Ok(v) => {
                save.dispatch((base_doc, v, comment.get_untracked()));
            }
            Err(e) => raw_error.set(Some(e)),
        }
    };
    let toggle_raw = move |_| {
        raw_error.set(None);
        if raw.get_untracked() {
            match serde_json::from_str::<PropertyConfig>(&raw_text.get_untracked()) {
                Ok(c) => {
                    draft.set(Some(c));
                    raw.set(false);
                }
                Err(e) => raw_error.set(Some(format!("Fix the JSON before leaving raw mode: {e}"))),
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
            base.get()
                .map(|b| {
                    view! {
                        <div class="editor-head">
                            <h2>{b.config.name.clone()}</h2>
                            <span class="muted">
                                {format!("Version {} · saved {} by {}", b.version, datetime(&b.modified), b.author)}
                                {(!b.comment.is_empty()).then(|| format!(" · “{}”", b.comment))}
                            </span>
                            <code class="etag" title="ETag">{b.etag.clone()}</code>
                        </div>
                    }
                })
        }}
        {move || merge.get().map(|m| view! { <MergeScreen state=m draft base merge raw save=Callback::new(move |_| start_save()) /> })}
        <Show when=move || merge.get().is_none() && draft.get().is_some()>
            <div class="toolbar">
                <button on:click=toggle_raw id="toggle-raw">
                    {move || if raw.get() { "Structured editor" } else { "Raw JSON" }}
                </button>
                <span class="spacer"></span>
                <Show when=writable>
                    <input class="comment" name="comment" placeholder="What changed (optional)" bind:value=comment />
                    <button class="primary" id="save-config" disabled=move || save.pending().get() on:click=move |_| start_save()>
                        {move || if save.pending().get() { "Saving…" } else { "Save" }}
                    </button>
                </Show>
            </div>
            {move || raw_error.get().map(|e| view! { <div class="notice error" role="alert">{e}</div> })}
            <FormError error=save_error fields=&[] />
            {move || notice.get().map(|n| view! { <div class="notice success" role="status" id="save-notice">{n}</div> })}
            {move || {
                if raw.get() {
                    view! { <textarea class="raw-json" name="raw" rows="28" spellcheck="false" bind:value=raw_text></textarea> }.into_any()
                } else {
                    view! { <StructuredEditor draft writable=writable() /> }.into_any()
                }
            }}
        </Show>
        <History name=name.get_value() base reload=history_reload writable=Signal::derive(writable) />
    }
}
