//! Console components in headless Chromium (wasm-bindgen-test): the login page and error display.

#![cfg(target_arch = "wasm32")]

use edge_api::{ErrorBody, ErrorDetail};
use edge_console::{
    api::{ApiError, basic_auth},
    components::errors::ApiErrorNotice,
    pages::login::LoginPage,
    session::Auth,
};
use leptos::{prelude::*, task::tick};
use leptos_router::components::Router;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use web_sys::{HtmlElement, HtmlInputElement};

wasm_bindgen_test_configure!(run_in_browser);

fn container() -> HtmlElement {
    let document = document();
    let div = document.create_element("div").unwrap().unchecked_into::<HtmlElement>();
    document.body().unwrap().append_child(&div).unwrap();
    div
}

fn find<T: JsCast>(root: &HtmlElement, selector: &str) -> T {
    root.query_selector(selector).unwrap().unwrap_or_else(|| panic!("no {selector}")).unchecked_into::<T>()
}

/// The login page, mounted in its own container.
async fn mount_login() -> (HtmlElement, leptos::mount::UnmountHandle<impl leptos::tachys::view::Mountable>) {
    let root = container();
    let handle = leptos::mount::mount_to(root.clone(), || {
        Auth::provide();
        view! {
            <Router>
                <LoginPage />
            </Router>
        }
    });
    tick().await;
    (root, handle)
}

#[wasm_bindgen_test]
async fn login_refuses_to_send_empty_fields_and_says_what_is_missing() {
    let (root, _handle) = mount_login().await;
    assert!(root.query_selector("[role=alert]").unwrap().is_none(), "no error before trying");
    find::<HtmlElement>(&root, "button[type=submit]").click();
    tick().await;
    let alert = find::<HtmlElement>(&root, "[role=alert]");
    assert_eq!(alert.text_content().unwrap(), "Enter the customer, username and password.");
}

#[wasm_bindgen_test]
async fn login_form_is_labelled_for_password_managers() {
    let (root, _handle) = mount_login().await;
    let password = find::<HtmlInputElement>(&root, "input[name=password]");
    assert_eq!(password.type_(), "password");
    assert_eq!(password.get_attribute("autocomplete").as_deref(), Some("current-password"));
    let username = find::<HtmlInputElement>(&root, "input[name=username]");
    assert_eq!(username.get_attribute("autocomplete").as_deref(), Some("username"));
    assert!(root.query_selector("input[name=otp]").unwrap().is_none(), "the code field appears only when asked for");
}

#[wasm_bindgen_test]
async fn an_api_error_shows_its_message_and_every_detail() {
    let root = container();
    let error = ApiError {
        status: 400,
        body: ErrorBody {
            kind: "invalid_parameter".into(),
            message: "A query parameter is invalid.".into(),
            details: vec![ErrorDetail { message: "limit: not a number".into() }],
        },
    };
    let _handle = leptos::mount::mount_to(root.clone(), move || view! { <ApiErrorNotice error=error.clone() /> });
    tick().await;
    let alert = find::<HtmlElement>(&root, "[role=alert]");
    assert_eq!(find::<HtmlElement>(&alert, "strong").text_content().unwrap(), "A query parameter is invalid.");
    assert_eq!(find::<HtmlElement>(&alert, "li").text_content().unwrap(), "limit: not a number");
}

#[wasm_bindgen_test]
fn basic_credentials_are_encoded_as_the_api_expects() {
    assert_eq!(basic_auth("admin", "pa:ss"), "Basic YWRtaW46cGE6c3M=");
}
