//! The network lists, filtered and paged (in the address), and a new list.

use edge_api::{NetworkList, NewNetworkList};
use leptos::{ev, prelude::*};
use leptos_router::{NavigateOptions, hooks::use_navigate};

use crate::{
    api::{self},
    components::{
        async_view::{AsyncView, act, load},
        curl::CopyCurl,
        dialog::Dialog,
        errors::FormError,
        pager::Pager,
        time::Time,
    },
    nav::{use_customer, use_query_state},
    session::Auth,
};

const LISTS_PER_PAGE: u64 = 10;

#[component]
pub(super) fn ListIndex() -> impl IntoView {
    let customer = use_customer();
    let auth = Auth::get();
    let navigate = use_navigate();
    let q = use_query_state();
    let page = Memo::new(move |_| q.page("page"));
    let list_type = Memo::new(move |_| q.get("type"));
    let deprecated = Memo::new(move |_| q.get("deprecated") == "1");
    let creating = RwSignal::new(false);
    let reload = RwSignal::new(0u32);
    let url = Memo::new(move |_| {
        let t = list_type.get();
        api::lists_url(
            &customer.get(),
            page.get(),
            LISTS_PER_PAGE,
            (!t.is_empty()).then_some(t.as_str()),
            deprecated.get(),
        )
    });
    let lists = load(move || {
        let u = url.get();
        reload.track();
        async move { api::get_json::<edge_api::NetworkListPage>(&u).await }
    });
    let open = Callback::new(move |id: String| {
        navigate(&format!("?list={}", api::encode(&id)), NavigateOptions::default());
    });
    view! {
        <div class="toolbar">
            <label class="inline">
                "Type "
                <select name="list-type" prop:value=move || list_type.get() on:change=move |e| q.set(&[("type", event_target_value(&e)), ("page", String::new())])>
                    <option value="">"IP and GEO"</option>
                    <option value="IP">"IP"</option>
                    <option value="GEO">"GEO"</option>
                </select>
            </label>
            <label class="check inline">
                <input
                    type="checkbox"
                    prop:checked=move || deprecated.get()
                    on:change=move |e| q.set(&[("deprecated", if event_target_checked(&e) { "1".into() } else { String::new() }), ("page", String::new())])
                />
                "Include deprecated"
            </label>
            <span class="spacer"></span>
            <CopyCurl path=move || Some(url.get()) />
            <Show when=move || auth.can_write()>
                <button class="primary" id="new-list" on:click=move |_| creating.set(true)>
                    "New list"
                </button>
            </Show>
        </div>
        <AsyncView resource=lists loading="Loading lists…" let:answer>
            {match answer {
                    p if p.items.is_empty() => {
                        view! { <div class="empty">"No network lists match."</div> }.into_any()
                    }
                    p => {
                        let shown = p.items.len() as u64;
                        view! {
                            <div class="table-scroll">
                            <table class="data lists">
                                <thead>
                                    <tr>
                                        <th>"Name"</th>
                                        <th>"Type"</th>
                                        <th>"Description"</th>
                                        <th>"Modified"</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {p
                                        .items
                                        .into_iter()
                                        .map(|l| {
                                            let id = l.id.clone();
                                            view! {
                                                <tr data-list=l.id.clone()>
                                                    <td>
                                                        <button class="link" on:click=move |_| open.run(id.clone())>
                                                            {l.name.clone()}
                                                        </button>
                                                        {l.deprecated.then(|| view! { <span class="badge off">"deprecated"</span> })}
                                                    </td>
                                                    <td>
                                                        <span class="badge">{l.list_type.clone()}</span>
                                                    </td>
                                                    <td class="muted">{l.description.clone()}</td>
                                                    <td>
                                                        <Time iso=l.modified_timestamp.clone().unwrap_or_else(|| l.creation_timestamp.clone()) />
                                                    </td>
                                                </tr>
                                            }
                                        })
                                        .collect_view()}
                                </tbody>
                            </table>
                            </div>
                            <Pager page=p.page_index per_page=LISTS_PER_PAGE shown total=p.total on_page=Callback::new(move |n: u64| q.set(&[("page", n.to_string())])) />
                        }
                            .into_any()
                    }
            }}
        </AsyncView>
        {move || {
            creating
                .get()
                .then(|| {
                    view! {
                        <NewListDialog
                            on_done=Callback::new(move |l: NetworkList| {
                                creating.set(false);
                                reload.update(|n| *n += 1);
                                open.run(l.id);
                            })
                            on_close=Callback::new(move |_| creating.set(false))
                        />
                    }
                })
        }}
    }
}

#[component]
fn NewListDialog(on_done: Callback<NetworkList>, on_close: Callback<()>) -> impl IntoView {
    let customer = use_customer();
    let name = RwSignal::new(String::new());
    let description = RwSignal::new(String::new());
    let list_type = RwSignal::new("IP".to_string());
    let create = act(move |l: &NewNetworkList| {
        let (c, l) = (customer.get_untracked(), l.clone());
        async move { api::create_list(&c, &l).await }
    });
    Effect::new(move |_| {
        if let Some(Ok(l)) = create.value().get() {
            on_done.run(l);
        }
    });
    let error = Signal::derive(move || create.value().get().and_then(Result::err));
    let submit = move |e: ev::SubmitEvent| {
        e.prevent_default();
        create.dispatch(NewNetworkList {
            name: name.get_untracked(),
            list_type: list_type.get_untracked(),
            description: description.get_untracked(),
            list: Vec::new(),
        });
    };
    view! {
        <Dialog title="New network list".to_string() on_close>
            <form class="form" on:submit=submit novalidate>
                <label>
                    "Name"
                    <input name="name" bind:value=name autofocus=true />
                </label>
                <label>
                    "Type"
                    <select name="type" on:change=move |e| list_type.set(event_target_value(&e))>
                        <option value="IP">"IP addresses and ranges"</option>
                        <option value="GEO">"Countries (ISO 3166-1 codes)"</option>
                    </select>
                </label>
                <label>
                    "Description"
                    <input name="description" bind:value=description />
                </label>
                <FormError error fields=&[] />
                <div class="actions">
                    <button type="button" on:click=move |_| on_close.run(())>"Cancel"</button>
                    <button type="submit" class="primary" disabled=move || create.pending().get()>"Create list"</button>
                </div>
            </form>
        </Dialog>
    }
}
