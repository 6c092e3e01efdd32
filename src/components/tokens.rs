//! API tokens as a panel: one's own (My account: make one, copy its secret once, roll, revoke, see its last
//! use) or a user's for an administrator (Users & roles: see and revoke).

use edge_api::{ApiToken, Role, Scope, TokenInput, limits::MAX_NAME_CHARS, tokens::MAX_ALLOWED_CIDRS};
use leptos::{ev, prelude::*};

use crate::{
    api::{self, ApiError},
    components::{
        async_view::{AsyncView, act, load},
        curl::copy_to_clipboard,
        dialog,
        errors::{FieldError, FormError},
        time::Time,
    },
    nav::use_customer,
};

/// Expiry choices of a new token, in days (0: never).
const EXPIRIES: [(u32, &str); 4] = [(30, "30 days"), (90, "90 days"), (365, "1 year"), (0, "Never")];

/// What the panel is asked to do with a token.
#[derive(Clone)]
enum Asked {
    Roll(ApiToken),
    Revoke(ApiToken),
}

/// `user`: `None` for the caller's own tokens (with "New token" and "Roll"); a user's id for an administrator's
/// view of that user's (revoke only). `role`: the caller's, the most a new token may hold. `otp`: the caller has
/// two-factor on, so making a secret needs a current code.
#[component]
pub fn ApiTokens(user: Option<String>, role: Role, otp: bool) -> impl IntoView {
    let customer = use_customer();
    let own = user.is_none();
    let whose = StoredValue::new(user);
    let reload = RwSignal::new(0u32);
    let tokens = load(move || {
        let c = customer.get();
        reload.track();
        async move { api::list_tokens(&c, whose.get_value().as_deref()).await }
    });
    let creating = RwSignal::new(false);
    let secret = RwSignal::new(None::<ApiToken>);
    let asked = RwSignal::new(None::<Asked>);
    let code = RwSignal::new(String::new());
    let change = act(move |a: &Asked| {
        let (c, a) = (customer.get_untracked(), a.clone());
        let otp = otp.then(|| code.get_untracked().trim().to_string());
        async move {
            match a {
                Asked::Roll(t) => api::roll_token(&c, &t.id, otp.as_deref()).await.map(Some),
                Asked::Revoke(t) => api::revoke_token(&c, &t.id).await.map(|_| None),
            }
        }
    });
    Effect::new(move |_| {
        if let Some(Ok(rolled)) = change.value().get() {
            asked.set(None);
            code.set(String::new());
            change.value().set(None);
            secret.set(rolled);
            reload.update(|n| *n += 1);
        }
    });
    let change_error = Signal::derive(move || change.value().get().and_then(Result::err));
    let on_made = Callback::new(move |token: ApiToken| {
        creating.set(false);
        secret.set(Some(token));
        reload.update(|n| *n += 1);
    });
    view! {
        <div class="card panel api-tokens" id=if own { "api-tokens" } else { "user-tokens" }>
            {own.then(|| view! {
                <h2>"API tokens"</h2>
                <p class="muted small">
                    "For scripts and the edge command line: each token has scopes, and may expire or work only from some addresses. It never does more than your role allows, and stops when your account is disabled."
                </p>
            })}
            {move || secret.get().map(|t| view! { <SecretOnce token=t on_done=Callback::new(move |_| secret.set(None)) /> })}
            {move || (own && !creating.get()).then(|| view! {
                <div class="actions left">
                    <button type="button" class="primary" id="new-token" on:click=move |_| { secret.set(None); creating.set(true); }>
                        "New token"
                    </button>
                </div>
            })}
            {move || creating.get().then(|| view! { <NewToken role otp on_made on_cancel=Callback::new(move |_| creating.set(false)) /> })}
            <AsyncView resource=tokens loading="Loading tokens…" let:page>
                {if page.items.is_empty() {
                    view! { <p class="empty">{if own { "You have no API tokens." } else { "This user has no API tokens." }}</p> }.into_any()
                } else {
                    let rows = page.items.into_iter().map(|t| view! { <TokenRow token=t own asked /> }).collect_view();
                    view! {
                        <div class="table-scroll">
                            <table class="data tokens">
                                <thead>
                                    <tr>
                                        <th scope="col">"Name"</th>
                                        <th scope="col">"Scopes"</th>
                                        <th scope="col">"Expires"</th>
                                        <th scope="col">"Last used"</th>
                                        <th scope="col" class="actions">"Actions"</th>
                                    </tr>
                                </thead>
                                <tbody>{rows}</tbody>
                            </table>
                        </div>
                    }
                        .into_any()
                }}
            </AsyncView>
        </div>
        {move || asked.get().map(|a| {
            let (title, message, action) = match &a {
                Asked::Roll(t) => (
                    format!("Roll {}?", t.name),
                    "A new secret replaces the current one, which stops working at once: update every script that uses it.".to_string(),
                    "Roll",
                ),
                Asked::Revoke(t) => (
                    format!("Revoke {}?", t.name),
                    format!("The token {}… of {} stops working at once, everywhere. This cannot be undone.", t.hint, t.username),
                    "Revoke",
                ),
            };
            let needs_code = otp && matches!(a, Asked::Roll(_));
            view! {
                <dialog::Confirm
                    title
                    message
                    action=action.to_string()
                    pending=change.pending()
                    error=change_error
                    on_confirm=Callback::new(move |_| { change.dispatch(a.clone()); })
                    on_close=Callback::new(move |_| { change.value().set(None); asked.set(None); })
                >
                    {needs_code.then(|| view! {
                        <div class="form">
                            <label>
                                "One-time code"
                                <input name="token-otp" inputmode="numeric" autocomplete="one-time-code" maxlength="6" bind:value=code />
                            </label>
                        </div>
                    })}
                </dialog::Confirm>
            }
        })}
    }
}

#[component]
fn TokenRow(token: ApiToken, own: bool, asked: RwSignal<Option<Asked>>) -> impl IntoView {
    let (for_roll, for_revoke) = (token.clone(), token.clone());
    let expires = match (&token.expires, token.expired) {
        (None, _) => view! { <span class="muted">"Never"</span> }.into_any(),
        (Some(e), true) => view! { <span class="badge off">"Expired"</span> " " <Time iso=e.clone() /> }.into_any(),
        (Some(e), false) => view! { <Time iso=e.clone() /> }.into_any(),
    };
    let used = match (&token.last_used_at, &token.last_used_from) {
        (Some(at), from) => view! {
            <Time iso=at.clone() />
            <div class="muted small">{from.clone().map(|f| format!("from {f}"))}</div>
        }
        .into_any(),
        (None, _) => view! { <span class="muted">"Never"</span> }.into_any(),
    };
    view! {
        <tr data-token=token.id.clone()>
            <td>
                <strong>{token.name.clone()}</strong>
                <div class="muted small"><code>{format!("{}…", token.hint)}</code></div>
                {(!token.allowed_cidrs.is_empty()).then(|| view! {
                    <div class="muted small">{format!("From {}", token.allowed_cidrs.join(", "))}</div>
                })}
            </td>
            <td class="scopes">
                {token.scopes.iter().map(|s| view! { <span class="badge scope">{s.clone()}</span> " " }).collect_view()}
            </td>
            <td>{expires}</td>
            <td>{used}</td>
            <td class="actions">
                {own.then(|| view! {
                    <button type="button" class="link" on:click=move |_| asked.set(Some(Asked::Roll(for_roll.clone())))>"Roll"</button>
                })}
                <button type="button" class="link danger" on:click=move |_| asked.set(Some(Asked::Revoke(for_revoke.clone())))>
                    "Revoke"
                </button>
            </td>
        </tr>
    }
}

/// The form of a new token: name, scopes within the role, expiry, client ranges, and a code with two-factor on.
#[component]
fn NewToken(role: Role, otp: bool, on_made: Callback<ApiToken>, on_cancel: Callback<()>) -> impl IntoView {
    let customer = use_customer();
    let name = RwSignal::new(String::new());
    let chosen = RwSignal::new(Vec::<Scope>::new());
    let days = RwSignal::new(90u32);
    let ranges = RwSignal::new(String::new());
    let code = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<String>);
    let make = act(move |input: &TokenInput| {
        let (c, input) = (customer.get_untracked(), input.clone());
        let otp = otp.then(|| code.get_untracked().trim().to_string());
        async move { api::create_token(&c, &input, otp.as_deref()).await }
    });
    Effect::new(move |_| {
        if let Some(Ok(token)) = make.value().get() {
            make.value().set(None);
            on_made.run(token);
        }
    });
    let error: Signal<Option<ApiError>> = Signal::derive(move || make.value().get().and_then(Result::err));
    let submit = move |e: ev::SubmitEvent| {
        e.prevent_default();
        let n = name.get_untracked().trim().to_string();
        let scopes: Vec<String> = chosen.get_untracked().iter().map(|s| s.as_str().to_string()).collect();
        let cidrs: Vec<String> =
            ranges.get_untracked().lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect();
        let code_ok = {
            let c = code.get_untracked();
            c.trim().len() == 6 && c.trim().bytes().all(|b| b.is_ascii_digit())
        };
        let check = if n.is_empty() {
            Some("Give the token a name: what uses it.".to_string())
        } else if scopes.is_empty() {
            Some("Choose at least one scope.".to_string())
        } else if cidrs.len() > MAX_ALLOWED_CIDRS {
            Some(format!("At most {MAX_ALLOWED_CIDRS} address ranges."))
        } else if otp && !code_ok {
            Some("Enter the six-digit code of your authenticator app.".to_string())
        } else {
            None
        };
        problem.set(check.clone());
        if check.is_some() {
            return;
        }
        let d = days.get_untracked();
        let expires = (d > 0).then(|| {
            let at = js_sys::Date::now() + f64::from(d) * 86_400_000.0;
            String::from(js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(at)).to_iso_string())
        });
        make.dispatch(TokenInput {
            name: Some(n),
            scopes: Some(scopes),
            expires: Some(expires),
            allowed_cidrs: Some(cidrs),
        });
    };
    let scopes = Scope::ALL.iter().copied().filter(|s| role.allows(s.permission())).collect::<Vec<_>>();
    view! {
        <form class="form new-token" on:submit=submit novalidate>
            <h3>"New token"</h3>
            <label>
                "Name"
                <input name="token-name" maxlength=MAX_NAME_CHARS placeholder="deploy purge" bind:value=name autofocus=true />
                <FieldError error field="name" />
            </label>
            <fieldset class="scopes">
                <legend>"Scopes"</legend>
                {scopes
                    .into_iter()
                    .map(|s| {
                        let toggle = move |e: ev::Event| {
                            let on = event_target_checked(&e);
                            chosen.update(|c| {
                                c.retain(|x| *x != s);
                                if on {
                                    c.push(s);
                                }
                            });
                        };
                        view! {
                            <label class="check">
                                <input type="checkbox" name="token-scope" value=s.as_str() on:change=toggle />
                                <code>{s.as_str()}</code>
                                <span class="muted small">{s.label()}</span>
                            </label>
                        }
                    })
                    .collect_view()}
                <FieldError error field="scopes" />
            </fieldset>
            <label>
                "Expires after"
                <select name="token-expiry" on:change=move |e| days.set(event_target_value(&e).parse().unwrap_or(90))>
                    {EXPIRIES.iter().map(|(d, label)| view! { <option value=d.to_string() selected=*d == 90>{*label}</option> }).collect_view()}
                </select>
            </label>
            <label>
                "Only from these addresses"
                <textarea name="token-ranges" rows="2" placeholder="203.0.113.0/24" bind:value=ranges></textarea>
                <span class="hint">"One address or CIDR range a line; empty: from anywhere."</span>
                <FieldError error field="allowed_cidrs" />
            </label>
            {otp.then(|| view! {
                <label>
                    "One-time code"
                    <input name="token-otp" inputmode="numeric" autocomplete="one-time-code" maxlength="6" bind:value=code />
                </label>
            })}
            {move || problem.get().map(|p| view! { <div class="notice error" role="alert">{p}</div> })}
            <FormError error fields=&["name", "scopes", "allowed_cidrs"] />
            <div class="actions">
                <button type="button" on:click=move |_| on_cancel.run(())>"Cancel"</button>
                <button type="submit" class="primary" disabled=move || make.pending().get()>"Make token"</button>
            </div>
        </form>
    }
}

/// A secret just made: shown this once, with a button to copy it.
#[component]
fn SecretOnce(token: ApiToken, on_done: Callback<()>) -> impl IntoView {
    let secret = token.secret.clone().unwrap_or_default();
    let copied = RwSignal::new(false);
    let to_copy = secret.clone();
    view! {
        <div class="notice success secret-once" role="status">
            <p>
                <strong>{format!("The secret of {}", token.name)}</strong>
                " — copy it now: it is not shown again. Whoever has it acts as you within its scopes."
            </p>
            <code class="secret" id="token-secret">{secret}</code>
            <div class="actions left">
                <button type="button" class="primary" on:click=move |_| { copy_to_clipboard(&to_copy); copied.set(true); }>
                    {move || if copied.get() { "Copied" } else { "Copy" }}
                </button>
                <button type="button" on:click=move |_| on_done.run(())>"Done"</button>
            </div>
        </div>
    }
}
