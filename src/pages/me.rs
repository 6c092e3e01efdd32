//! My account: who I am, the time zone of this browser, my sessions (ending any), my API tokens, change my
//! password, set up two-factor authentication.

use edge_api::{OtpPairing, OtpSeed, PASSWORD_MIN_LENGTH, Role, User, check_password_policy};
use leptos::{ev, prelude::*};
use qrcode::{QrCode, render::svg};

use crate::{
    api::{self, ApiError, Confirm},
    components::{
        async_view::{AsyncView, act, load},
        dialog,
        errors::FormError,
        time::{Time, Zone, zone_names},
        tokens::ApiTokens,
    },
    nav::use_customer,
    session::{Auth, role_of},
};

#[component]
pub fn MyAccount() -> impl IntoView {
    let auth = Auth::get();
    let me_id = Memo::new(move |_| auth.me().map(|u| u.id));
    view! {
        <section class="page">
            <h1>"My account"</h1>
            // Re-rendered only when the user changes, not when their record is refreshed (two-factor turned on).
            {move || match me_id.get().and_then(|_| auth.me_untracked()) {
                None => view! { <p class="muted">"Loading…"</p> }.into_any(),
                Some(me) => {
                    view! {
                        <Profile me=me.clone() />
                        <TimeZonePreference />
                        <Sessions />
                        <ApiTokens
                            user=None
                            role=role_of(&me).unwrap_or(Role::Viewer)
                            otp=me.otp_enabled
                        />
                        <ChangePassword me=me.clone() />
                        <TwoFactor me />
                    }
                        .into_any()
                }
            }}
        </section>
    }
}

#[component]
fn Profile(me: User) -> impl IntoView {
    let row = |label: &'static str, value: String| {
        view! {
            <dt>{label}</dt>
            <dd>{if value.is_empty() { "—".to_string() } else { value }}</dd>
        }
    };
    view! {
        <div class="card panel">
            <h2>"Profile"</h2>
            <dl class="facts">
                {row("Username", me.username.clone())}
                {row("Name", me.full_name.clone())}
                {row("E-mail", me.email.clone())}
                {row("Phone", me.phone_number.clone())}
                {row("Role", me.role.id.clone())}
                {row("Identity source", me.source.id.clone())}
            </dl>
            <p class="muted small">"An administrator changes these details under Users & roles."</p>
        </div>
    }
}

/// The time zone of this browser: the account's, or one of the user's own choice.
#[component]
fn TimeZonePreference() -> impl IntoView {
    let zone = Zone::get();
    let current = zone.preference().unwrap_or_default();
    let zones = zone_names();
    view! {
        <div class="card panel form" id="time-zone">
            <h2>"Time zone"</h2>
            <label>
                "Show times in"
                <select
                    name="browser-timezone"
                    on:change=move |e| {
                        let v = event_target_value(&e);
                        zone.set_preference((!v.is_empty()).then_some(v));
                    }
                >
                    <option value="" selected=current.is_empty()>
                        {move || format!("The account's time zone ({})", zone.account())}
                    </option>
                    {zones
                        .into_iter()
                        .map(|z| {
                            let selected = z == current;
                            view! { <option value=z.clone() selected=selected>{z.clone()}</option> }
                        })
                        .collect_view()}
                </select>
                <span class="hint">"For this browser only. Hovering over a time shows it in UTC."</span>
            </label>
        </div>
    }
}

/// The user's own sessions, this one marked, each of the others with "End session".
#[component]
fn Sessions() -> impl IntoView {
    let customer = use_customer();
    let auth = Auth::get();
    let reload = RwSignal::new(0u32);
    let sessions = load(move || {
        let c = customer.get();
        reload.track();
        async move { api::own_sessions(&c).await }
    });
    let ending = RwSignal::new(None::<(String, bool)>);
    let end = act(move |r: &String| {
        let (c, r) = (customer.get_untracked(), r.clone());
        async move { api::end_own_session(&c, &r).await }
    });
    Effect::new(move |_| {
        if let Some(Ok(())) = end.value().get() {
            let current = ending.get_untracked().is_some_and(|(_, current)| current);
            ending.set(None);
            end.value().set(None);
            if current {
                // This browser's own session: logged out, as by "Log out".
                auth.clear();
                let _ = window()
                    .location()
                    .set_href(&format!("/login?customer={}", api::encode(&customer.get_untracked())));
            } else {
                reload.update(|n| *n += 1);
            }
        }
    });
    let error = Signal::derive(move || end.value().get().and_then(Result::err));
    view! {
        <div class="card panel" id="sessions">
            <h2>"Sessions"</h2>
            <p class="muted small">"Where you are logged in. End a session you do not recognise, then change your password."</p>
            <AsyncView resource=sessions loading="Loading sessions…" let:list>
                <div class="table-scroll">
                    <table class="data sessions">
                        <thead>
                            <tr>
                                <th scope="col">"Session"</th>
                                <th scope="col">"Started"</th>
                                <th scope="col">"Last used"</th>
                                <th scope="col">"Ends"</th>
                                <th scope="col" class="actions">"Actions"</th>
                            </tr>
                        </thead>
                        <tbody>
                            {list
                                .items
                                .into_iter()
                                .map(|s| {
                                    let r = s.reference.clone();
                                    let current = s.current;
                                    view! {
                                        <tr data-session=s.reference.clone() data-current=current.to_string()>
                                            <td>
                                                <code>{s.reference.clone()}</code>
                                                {current.then(|| view! { " " <span class="badge ok">"this browser"</span> })}
                                            </td>
                                            <td><Time iso=s.created.clone() /></td>
                                            <td><Time iso=s.last_access.clone() /></td>
                                            <td><Time iso=s.expires.clone() /></td>
                                            <td class="actions">
                                                <button type="button" class="link danger" on:click=move |_| ending.set(Some((r.clone(), current)))>
                                                    {if current { "Log out" } else { "End session" }}
                                                </button>
                                            </td>
                                        </tr>
                                    }
                                })
                                .collect_view()}
                        </tbody>
                    </table>
                </div>
                {(list.total > 100).then(|| view! { <p class="muted small">{format!("The 100 most recently used of {}.", list.total)}</p> })}
            </AsyncView>
        </div>
        {move || {
            ending
                .get()
                .map(|(r, current)| {
                    let message = if current {
                        "This is the session of this browser: ending it logs you out here.".to_string()
                    } else {
                        format!("Session {r} is ended at once: whoever uses it must log in again.")
                    };
                    view! {
                        <dialog::Confirm
                            title=if current { "Log out?".to_string() } else { "End this session?".to_string() }
                            message
                            action=if current { "Log out".to_string() } else { "End session".to_string() }
                            pending=end.pending()
                            error
                            on_confirm=Callback::new(move |_| {
                                end.dispatch(r.clone());
                            })
                            on_close=Callback::new(move |_| {
                                end.value().set(None);
                                ending.set(None);
                            })
                        />
                    }
                })
        }}
    }
}

#[component]
fn ChangePassword(me: User) -> impl IntoView {
    let customer = use_customer();
    let current = RwSignal::new(String::new());
    let code = RwSignal::new(String::new());
    let new = RwSignal::new(String::new());
    let again = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<String>);
    let done = RwSignal::new(false);
    // With two-factor on, the server wants a one-time code with the password.
    let needs_code = me.otp_enabled;
    let username = me.username.clone();
    let id = me.id.clone();
    let change = act(move |(current, new): &(String, String)| {
        let otp = needs_code.then(|| code.get_untracked().trim().to_string());
        let confirm = Confirm { username: username.clone(), password: current.clone(), otp };
        let (customer, id, new) = (customer.get_untracked(), id.clone(), new.clone());
        async move { api::change_password(&customer, &id, &confirm, &new).await }
    });
    Effect::new(move |_| {
        if let Some(Ok(_)) = change.value().get() {
            done.set(true);
            current.set(String::new());
            code.set(String::new());
            new.set(String::new());
            again.set(String::new());
        }
    });
    let error = Signal::derive(move || change.value().get().and_then(Result::err));
    let username = me.username.clone();
    let submit = move |e: ev::SubmitEvent| {
        e.prevent_default();
        done.set(false);
        let (c, n, a) = (current.get_untracked(), new.get_untracked(), again.get_untracked());
        let code_ok = {
            let code = code.get_untracked();
            let code = code.trim();
            code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit())
        };
        let check = if c.is_empty() {
            Err("Enter your current password.".to_string())
        } else if needs_code && !code_ok {
            Err("Enter the six-digit code of your authenticator app.".to_string())
        } else if n != a {
            Err("The new password and its repetition differ.".to_string())
        } else {
            check_password_policy(&username, &n)
        };
        match check {
            Err(p) => problem.set(Some(p)),
            Ok(()) => {
                problem.set(None);
                change.dispatch((c, n));
            }
        }
    };
    if me.source.id != "local" {
        return view! {
            <div class="card panel">
                <h2>"Password"</h2>
                <p class="muted">"Your account comes from a remote identity source; its password is managed there."</p>
            </div>
        }
        .into_any();
    }
    view! {
        <form class="card panel form" id="change-password" on:submit=submit novalidate>
            <h2>"Change password"</h2>
            <p class="muted small">
                {format!("At least {PASSWORD_MIN_LENGTH} characters, and not your username. Your other sessions end.")}
            </p>
            <label>
                "Current password"
                <input name="current" type="password" autocomplete="current-password" bind:value=current />
            </label>
            <Show when=move || needs_code>
                <label>
                    "One-time code"
                    <input name="otp" inputmode="numeric" autocomplete="one-time-code" maxlength="6" bind:value=code />
                </label>
            </Show>
            <label>
                "New password"
                <input name="new" type="password" autocomplete="new-password" bind:value=new />
            </label>
            <label>
                "New password again"
                <input name="again" type="password" autocomplete="new-password" bind:value=again />
            </label>
            {move || problem.get().map(|p| view! { <div class="notice error" role="alert">{p}</div> })}
            <FormError error fields=&[] />
            <Show when=move || done.get()>
                <div class="notice success" role="status">"Your password is changed."</div>
            </Show>
            <div class="actions">
                <button type="submit" class="primary" disabled=move || change.pending().get()>"Change password"</button>
            </div>
        </form>
    }
    .into_any()
}

/// The `otpauth://` address an authenticator app reads from the QR code.
pub fn otpauth_uri(customer: &str, username: &str, secret: &str) -> String {
    let enc = |s: &str| String::from(js_sys::encode_uri_component(s));
    format!(
        "otpauth://totp/{issuer}:{account}?secret={secret}&issuer={issuer}&algorithm=SHA1&digits=6&period=30",
        issuer = enc("Edge Console"),
        account = enc(&format!("{username}@{customer}")),
    )
}

/// An SVG QR code of `text`.
pub fn qr_svg(text: &str) -> Option<String> {
    let code = QrCode::new(text.as_bytes()).ok()?;
    Some(code.render::<svg::Color>().min_dimensions(200, 200).quiet_zone(true).build())
}

/// The secret in groups of four, easier to type.
fn grouped(secret: &str) -> String {
    secret.as_bytes().chunks(4).map(|c| String::from_utf8_lossy(c).into_owned()).collect::<Vec<_>>().join(" ")
}

#[derive(Clone)]
enum Wizard {
    Idle,
    /// A seed was generated; the codes are asked for.
    Seeded {
        seed: OtpSeed,
        confirm: Confirm,
    },
    Done,
}

#[component]
fn TwoFactor(me: User) -> impl IntoView {
    let auth = Auth::get();
    let customer = use_customer();
    let wizard = RwSignal::new(Wizard::Idle);
    let password = RwSignal::new(String::new());
    let first = RwSignal::new(String::new());
    let second = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<String>);

    let (id, username) = (me.id.clone(), me.username.clone());
    let start = act(move |password: &String| {
        let confirm = Confirm { username: username.clone(), password: password.clone(), otp: None };
        let (customer, id) = (customer.get_untracked(), id.clone());
        async move { api::create_otp_seed(&customer, &id, &confirm).await.map(|seed| (seed, confirm)) }
    });
    Effect::new(move |_| {
        if let Some(Ok((seed, confirm))) = start.value().get() {
            password.set(String::new());
            wizard.set(Wizard::Seeded { seed, confirm });
        }
    });
    let id = me.id.clone();
    let pair = act(move |(confirm, pairing): &(Confirm, OtpPairing)| {
        let (customer, id, confirm, pairing) = (customer.get_untracked(), id.clone(), confirm.clone(), pairing.clone());
        async move {
            api::pair_otp(&customer, &id, &confirm, &pairing).await?;
            api::get_user(&customer, &id).await
        }
    });
    Effect::new(move |_| {
        if let Some(Ok(user)) = pair.value().get() {
            wizard.set(Wizard::Done);
            auth.set_me(Some(user));
        }
    });
    let start_error: Signal<Option<ApiError>> = Signal::derive(move || start.value().get().and_then(Result::err));
    let pair_error: Signal<Option<ApiError>> = Signal::derive(move || pair.value().get().and_then(Result::err));

    let on_start = move |e: ev::SubmitEvent| {
        e.prevent_default();
        if password.get_untracked().is_empty() {
            problem.set(Some("Enter your password to continue.".into()));
            return;
        }
        problem.set(None);
        start.dispatch(password.get_untracked());
    };
    let on_pair = move |e: ev::SubmitEvent| {
        e.prevent_default();
        let Wizard::Seeded { seed, confirm } = wizard.get_untracked() else { return };
        let (a, b) = (first.get_untracked().trim().to_string(), second.get_untracked().trim().to_string());
        let six = |s: &str| s.len() == 6 && s.bytes().all(|c| c.is_ascii_digit());
        if !six(&a) || !six(&b) {
            problem.set(Some("Each code has six digits.".into()));
            return;
        }
        problem.set(None);
        pair.dispatch((confirm, OtpPairing { first_token: a, second_token: b, seed_id: seed.id, uri: String::new() }));
    };
    let customer_name = use_customer();
    let username = me.username.clone();
    let enabled = Memo::new(move |_| auth.me().is_some_and(|u| u.otp_enabled));

    view! {
        <div class="card panel form" id="two-factor">
            <h2>"Two-factor authentication"</h2>
            {move || match wizard.get() {
                Wizard::Done => {
                    view! {
                        <div class="notice success" role="status">
                            "Two-factor authentication is on. From now on, logging in asks for a code from your app."
                        </div>
                    }
                        .into_any()
                }
                _ if enabled.get() => {
                    view! {
                        <p>
                            <span class="badge ok">"On"</span>
                            " Logging in asks for a code from your authenticator app. To turn it off (for instance after losing your phone), ask an administrator; an administrator turns off their own under Users & roles, with their password and a current code."
                        </p>
                    }
                        .into_any()
                }
                Wizard::Idle => {
                    view! {
                        <p class="muted">
                            "Protect your account with a second step at login: a six-digit code from an authenticator app (such as FreeOTP, Google Authenticator or 1Password)."
                        </p>
                        <form on:submit=on_start class="form" novalidate>
                            <label>
                                "Your password"
                                <input name="otp-password" type="password" autocomplete="current-password" bind:value=password />
                            </label>
                            {move || problem.get().map(|p| view! { <div class="notice error" role="alert">{p}</div> })}
                            <FormError error=start_error fields=&[] />
                            <div class="actions">
                                <button type="submit" class="primary" disabled=move || start.pending().get()>
                                    "Set up two-factor"
                                </button>
                            </div>
                        </form>
                    }
                        .into_any()
                }
                Wizard::Seeded { seed, .. } => {
                    let uri = otpauth_uri(&customer_name.get_untracked(), &username, &seed.seed);
                    let svg = qr_svg(&uri).unwrap_or_default();
                    view! {
                        <ol class="steps">
                            <li>
                                "Scan this code with your authenticator app, or enter the key by hand."
                                <div class="qr" inner_html=svg></div>
                                <div class="secret">
                                    "Key: "
                                    <code id="otp-secret" data-secret=seed.seed.clone()>{grouped(&seed.seed)}</code>
                                </div>
                            </li>
                            <li>
                                "Enter the code the app shows, wait until it changes, and enter the next one."
                                <form on:submit=on_pair class="form codes" novalidate>
                                    <label>
                                        "First code"
                                        <input name="first" inputmode="numeric" maxlength="6" autocomplete="one-time-code" bind:value=first autofocus=true />
                                    </label>
                                    <label>
                                        "Next code"
                                        <input name="second" inputmode="numeric" maxlength="6" autocomplete="one-time-code" bind:value=second />
                                    </label>
                                    {move || problem.get().map(|p| view! { <div class="notice error" role="alert">{p}</div> })}
                                    <FormError error=pair_error fields=&[] />
                                    <div class="actions">
                                        <button type="button" on:click=move |_| wizard.set(Wizard::Idle)>"Cancel"</button>
                                        <button type="submit" class="primary" disabled=move || pair.pending().get()>
                                            "Turn on two-factor"
                                        </button>
                                    </div>
                                </form>
                            </li>
                        </ol>
                    }
                        .into_any()
                }
            }}
        </div>
    }
}
