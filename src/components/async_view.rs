//! Reads from the API and how they show: one loading line, one error notice with "Try again", the content.
//! Every page reads through [`load`] and shows through [`AsyncView`], so the pattern (and its code) exists once.

use std::{future::Future, pin::Pin, sync::Arc};

use leptos::prelude::*;

use crate::{
    api::{ApiError, ApiResult},
    components::errors::ApiErrorNotice,
};

/// A read in flight.
pub type Fetch<T> = Pin<Box<dyn Future<Output = ApiResult<T>>>>;

/// A read from the API that runs again when a signal it reads changes. The fetcher is boxed so that the
/// resource's machinery exists once per result type, not once per call site.
pub fn load<T, Fut>(fetch: impl Fn() -> Fut + 'static) -> LocalResource<ApiResult<T>>
where
    T: 'static,
    Fut: Future<Output = ApiResult<T>> + 'static,
{
    resource(Box::new(move || Box::pin(fetch())))
}

fn resource<T: 'static>(fetch: Box<dyn Fn() -> Fetch<T>>) -> LocalResource<ApiResult<T>> {
    LocalResource::new(fetch)
}

/// What a read shows: "Loading…" until the first answer, the API's error with "Try again", or `children`
/// of the answer. While a newer answer loads the previous one stays, as with `<Transition>`.
#[component]
pub fn AsyncView<T, F, IV>(
    resource: LocalResource<ApiResult<T>>,
    /// The loading line, e.g. "Loading users…".
    #[prop(optional)]
    loading: Option<&'static str>,
    children: F,
) -> impl IntoView
where
    T: Clone + Send + Sync + 'static,
    F: Fn(T) -> IV + Send + Sync + 'static,
    IV: IntoView + 'static,
{
    show(resource, loading.unwrap_or("Loading…"), Arc::new(move |t| children(t).into_any()))
}

fn show<T: Clone + Send + Sync + 'static>(
    resource: LocalResource<ApiResult<T>>,
    loading: &'static str,
    children: Arc<dyn Fn(T) -> AnyView + Send + Sync>,
) -> AnyView {
    let retry = Callback::new(move |()| resource.refetch());
    (move || match resource.get() {
        None => loading_view(loading),
        Some(Err(error)) => error_view(error, retry),
        Some(Ok(value)) => children(value),
    })
    .into_any()
}

fn loading_view(text: &'static str) -> AnyView {
    view! { <p class="muted loading" role="status">{text}</p> }.into_any()
}

fn error_view(error: ApiError, retry: Callback<()>) -> AnyView {
    view! {
        <div class="async-error">
            <ApiErrorNotice error />
            <button on:click=move |_| retry.run(())>"Try again"</button>
        </div>
    }
    .into_any()
}

/// A write to the API (`Action::new_local`), with its future boxed so that the action's machinery exists once
/// per input and output type, not once per call site.
pub fn act<I, O, Fut>(run: impl Fn(&I) -> Fut + 'static) -> Action<I, O>
where
    I: 'static,
    O: 'static,
    Fut: Future<Output = O> + 'static,
{
    action(Box::new(move |input| Box::pin(run(input))))
}

type Run<I, O> = Box<dyn Fn(&I) -> Pin<Box<dyn Future<Output = O>>>>;

fn action<I: 'static, O: 'static>(run: Run<I, O>) -> Action<I, O> {
    Action::new_local(move |input: &I| run(input))
}
