//! The merge screen: the conflicts of a three-way merge side by side, a choice for each.

use edge_api::{
    config::{ConfigDocument, Conflict, PropertyConfig, set_at},
    reading::read_config,
};
use leptos::prelude::*;
use serde_json::Value;

use super::{
    labels::{human_path, human_problem},
    nodes::Fields,
};

/// A merge the saving could not finish alone: their version, the merge so far and what conflicts.
#[derive(Clone)]
pub(super) struct MergeState {
    pub(super) theirs: ConfigDocument,
    /// The merge, holding their values where there are conflicts.
    pub(super) merged: Value,
    pub(super) conflicts: Vec<Conflict>,
}

/// The conflicts of a merge: base, theirs and mine side by side, a choice for each.
#[component]
pub(super) fn MergeScreen(
    state: MergeState,
    draft: RwSignal<Option<PropertyConfig>>,
    base: RwSignal<Option<ConfigDocument>>,
    merge: RwSignal<Option<MergeState>>,
    raw: RwSignal<bool>,
    save: Callback<()>,
) -> impl IntoView {
    let take_mine = RwSignal::new(vec![true; state.conflicts.len()]);
    let error = RwSignal::new(None::<String>);
    let st = StoredValue::new(state.clone());
    let show = |v: &Option<Value>| {
        v.as_ref().map(|v| serde_json::to_string_pretty(v).unwrap_or_default()).unwrap_or_else(|| "(absent)".into())
    };
    let resolve = move |_| {
        let s = st.get_value();
        let mut merged = s.merged.clone();
        for (c, mine) in s.conflicts.iter().zip(take_mine.get_untracked()) {
            if mine {
                set_at(&mut merged, &c.path, c.mine.clone());
            }
        }
        match read_config(&merged) {
            Ok(config) => {
                // The merge now builds on their version: save it with their etag.
                base.set(Some(s.theirs.clone()));
                draft.set(Some(config));
                if let Some(f) = Fields::get() {
                    f.replaced();
                }
                raw.set(false);
                merge.set(None);
                save.run(());
            }
            Err(problems) => {
                let problems: Vec<String> = problems.iter().map(|p| human_problem(p, &[&merged])).collect();
                error.set(Some(format!("The merged configuration is not valid: {}", problems.join("; "))))
            }
        }
    };
    let discard = move |_| {
        let s = st.get_value();
        draft.set(Some(s.theirs.config.clone()));
        if let Some(f) = Fields::get() {
            f.replaced();
        }
        base.set(Some(s.theirs));
        merge.set(None);
    };
    let theirs_doc = serde_json::to_value(&state.theirs.config).unwrap_or(Value::Null);
    view! {
        <div class="card panel wide merge" id="merge-screen">
            <h2>"Someone else changed this property"</h2>
            <p>
                {format!(
                    "{} saved version {} while you were editing. Their changes and yours were merged; {} change(s) conflict. Choose for each which to keep, then save.",
                    state.theirs.author,
                    state.theirs.version,
                    state.conflicts.len(),
                )}
            </p>
            <div class="table-scroll">
            <table class="data conflicts">
                <thead>
                    <tr>
                        <th>"Where"</th>
                        <th>"Before (base)"</th>
                        <th>"Theirs"</th>
                        <th>"Mine"</th>
                    </tr>
                </thead>
                <tbody>
                    {state
                        .conflicts
                        .iter()
                        .enumerate()
                        .map(|(i, c)| {
                            let group = format!("conflict-{i}");
                            view! {
                                <tr data-path=c.path.clone()>
                                    <td>
                                        <span title=c.path.clone()>{human_path(&c.path, &[&state.merged, &theirs_doc])}</span>
                                    </td>
                                    <td>
                                        <pre>{show(&c.base)}</pre>
                                    </td>
                                    <td>
                                        <label class="check">
                                            <input
                                                type="radio"
                                                name=group.clone()
                                                value="theirs"
                                                prop:checked=move || !take_mine.get()[i]
                                                on:change=move |_| take_mine.update(|v| v[i] = false)
                                            />
                                            <pre>{show(&c.theirs)}</pre>
                                        </label>
                                    </td>
                                    <td>
                                        <label class="check">
                                            <input
                                                type="radio"
                                                name=group
                                                value="mine"
                                                prop:checked=move || take_mine.get()[i]
                                                on:change=move |_| take_mine.update(|v| v[i] = true)
                                            />
                                            <pre>{show(&c.mine)}</pre>
                                        </label>
                                    </td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
            </div>
            {move || error.get().map(|e| view! { <div class="notice error" role="alert">{e}</div> })}
            <div class="actions">
                <button on:click=discard>"Discard my changes"</button>
                <button class="primary" id="save-merged" on:click=resolve>"Save merged version"</button>
            </div>
        </div>
    }
}
