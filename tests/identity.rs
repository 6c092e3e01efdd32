//! Identity views' pieces in headless Chromium: dialogs, confirmation, field errors, the two-factor QR code.

#![cfg(target_arch = "wasm32")]

use std::sync::{
    Arc,
    atomic::{AtomicBool, AtomicU32, Ordering::SeqCst},
};

use edge_api::{ErrorBody, ErrorDetail};
use edge_console::{
    api::ApiError,
    components::{
        dialog::{Confirm, Dialog},
        errors::FieldError,
    },
    pages::me::{otpauth_uri, qr_svg},
};
use leptos::{prelude::*, task::tick};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use web_sys::HtmlElement;

wasm_bindgen_test_configure!(run_in_browser);

fn container() -> HtmlElement {
    let div = document().create_element("div").unwrap().unchecked_into::<HtmlElement>();
    document().body().unwrap().append_child(&div).unwrap();
    div
}

fn find(root: &HtmlElement, selector: &str) -> HtmlElement {
    root.query_selector(selector).unwrap().unwrap_or_else(|| panic!("no {selector}")).unchecked_into()
}

#[wasm_bindgen_test]
fn the_authenticator_uri_names_issuer_account_and_parameters() {
    assert_eq!(
        otpauth_uri("demo", "erin@example.com", "JBSWY3DPEHPK3PXP"),
        "otpauth://totp/Edge%20Console:erin%40example.com%40demo?secret=JBSWY3DPEHPK3PXP&issuer=Edge%20Console&algorithm=SHA1&digits=6&period=30"
    );
    let svg = qr_svg("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP").unwrap();
    assert!(svg.contains("<svg") && svg.contains("</svg>"), "{svg}");
}

#[wasm_bindgen_test]
async fn a_field_error_shows_only_the_problems_of_its_field() {
    let root = container();
    let error = ApiError {
        status: 400,
        body: ErrorBody {
            kind: "invalid_user".into(),
            message: "The user is not valid.".into(),
            details: vec![
                ErrorDetail { message: "email: \"x\" is not an e-mail address.".into() },
                ErrorDetail { message: "phone_number: not a phone number.".into() },
            ],
        },
    };
    let _h = leptos::mount::mount_to(root.clone(), move || {
        let error = Signal::derive(move || Some(error.clone()));
        view! {
            <div id="email"><FieldError error field="email" /></div>
            <div id="name"><FieldError error field="full_name" /></div>
        }
    });
    tick().await;
    assert_eq!(find(&root, "#email").text_content().unwrap(), "\"x\" is not an e-mail address.");
    assert_eq!(find(&root, "#name").text_content().unwrap(), "");
}

#[wasm_bindgen_test]
async fn a_confirmation_says_what_happens_and_runs_cancel_or_the_action() {
    let root = container();
    let (confirmed, closed) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let (c, x) = (confirmed.clone(), closed.clone());
    let _h = leptos::mount::mount_to(root.clone(), move || {
        let (c, x) = (c.clone(), x.clone());
        view! {
            <Confirm
                title="Delete bob?".to_string()
                message="bob will be removed.".to_string()
                action="Delete user".to_string()
                pending=Signal::derive(|| false)
                error=Signal::derive(|| None)
                on_confirm=Callback::new(move |_| { c.fetch_add(1, SeqCst); })
                on_close=Callback::new(move |_| { x.fetch_add(1, SeqCst); })
            />
        }
    });
    tick().await;
    let dialog = find(&root, "dialog[open]");
    let heading = dialog.get_attribute("aria-labelledby").expect("named by its heading");
    assert_eq!(find(&dialog, &format!("#{heading}")).text_content().unwrap(), "Delete bob?");
    assert_eq!(find(&dialog, "p").text_content().unwrap(), "bob will be removed.");
    find(&dialog, "button.danger").click();
    tick().await;
    assert_eq!((confirmed.load(SeqCst), closed.load(SeqCst)), (1, 0));
    find(&dialog, ".actions button:not(.danger)").click();
    tick().await;
    assert_eq!((confirmed.load(SeqCst), closed.load(SeqCst)), (1, 1));
}

#[wasm_bindgen_test]
async fn escape_closes_a_dialog() {
    let root = container();
    let closed = Arc::new(AtomicBool::new(false));
    let x = closed.clone();
    let _h = leptos::mount::mount_to(root.clone(), move || {
        let x = x.clone();
        view! {
            <Dialog title="Edit".to_string() on_close=Callback::new(move |_| x.store(true, SeqCst))>
                <input id="inside" />
            </Dialog>
        }
    });
    tick().await;
    // Escape on a modal <dialog> makes the browser send it `cancel` (the end-to-end tests press the real key).
    assert!(find(&root, "dialog").has_attribute("open"), "shown as a modal");
    find(&root, "dialog").dispatch_event(&web_sys::Event::new("cancel").unwrap()).unwrap();
    tick().await;
    assert!(closed.load(SeqCst));
}
