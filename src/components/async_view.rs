//! Reads from the API and how they show: one loading line, one error notice with "Try again", the content.
//! Every page reads through [`load`] and shows through [`AsyncView`], so the pattern (and its code) exists once.

use std::{any::Any, future::Future, marker::PhantomData, pin::Pin, sync::Arc};

use leptos::prelude::*;

use crate::{
    api::{ApiError, ApiResult},
    components::errors::ApiErrorNotice,
};

/// A read in flight.
pub type Fetch<T> = Pin<Box<dyn Future<Output = ApiResult<T>>>>;

/// An answer, its type erased: every read shares one resource type, so the reactive machinery behind reads
/// (and the views of their states) exists once in the console instead of once per answer type.
type Shared = Arc<dyn Any + Send + Sync>;

/// A read from the API that runs again when a signal it reads changes.
pub struct Load<T> {
    inner: LocalResource<ApiResult<Shared>>,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Load<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Load<T> {}

impl<T: Clone + 'static> Load<T> {
    /// The answer, tracked: `None` until the first one.
    pub fn get(&self) -> Option<ApiResult<T>> {
        self.inner.get().map(typed)
    }

    pub fn get_untracked(&self) -> Option<ApiResult<T>> {
        self.inner.get_untracked().map(typed)
    }

    pub fn refetch(&self) {
        self.inner.refetch()
    }
}

fn typed<T: Clone + 'static>(r: ApiResult<Shared>) -> ApiResult<T> {
    r.and_then(|a| a.downcast_ref::<T>().cloned().ok_or_else(|| ApiError::unreadable(0, "an answer of another type")))
}

/// A read from the API that runs again when a signal it reads changes.
pub fn load<T, Fut>(fetch: impl Fn() -> Fut + 'static) -> Load<T>
where
    T: Send + Sync + 'static,
    Fut: Future<Output = ApiResult<T>> + 'static,
{
    let inner = resource(Box::new(move || {
        let f = fetch();
        Box::pin(async move { f.await.map(|t| Arc::new(t) as Shared) })
    }));
    Load { inner, _t: PhantomData }
}

fn resource(fetch: Box<dyn Fn() -> Fetch<Shared>>) -> LocalResource<ApiResult<Shared>> {
    LocalResource::new(move || {
        let answer = fetch();
        async move {
            let answer = answer.await;
            // Each answer is shown in a task of its own: answers that arrive together would otherwise all be
            // drawn in one long task (the futures' wake-ups are microtasks), and the page would not respond
            // to input until every view had been built.
            crate::components::progress::sleep(0).await;
            answer
        }
    })
}

/// What a read shows: "Loading…" until the first answer, the API's error with "Try again", or `children`
/// of the answer. While a newer answer loads the previous one stays, as with `<Transition>`.
#[component]
pub fn AsyncView<T, F, IV>(
    resource: Load<T>,
    /// The loading line, e.g. "Loading users…".
    #[prop(optional)]
    loading: Option<&'static str>,
    /// Shown instead of the loading line: the content's shape, as tall as the content will be, so that its
    /// arrival moves nothing below it (the loading line is still read out).
    #[prop(optional)]
    placeholder: Option<fn() -> AnyView>,
    children: F,
) -> impl IntoView
where
    T: Clone + Send + Sync + 'static,
    F: Fn(T) -> IV + Send + Sync + 'static,
    IV: IntoView + 'static,
{
    let children: Arc<dyn Fn(&Shared) -> AnyView + Send + Sync> = Arc::new(move |a| match a.downcast_ref::<T>() {
        Some(t) => children(t.clone()).into_any(),
        None => ().into_any(),
    });
    show(resource.inner, Waiting { text: loading.unwrap_or("Loading…"), placeholder }, children)
}

/// What a read shows until its answer.
#[derive(Clone, Copy)]
struct Waiting {
    text: &'static str,
    placeholder: Option<fn() -> AnyView>,
}

fn show(
    resource: LocalResource<ApiResult<Shared>>,
    loading: Waiting,
    children: Arc<dyn Fn(&Shared) -> AnyView + Send + Sync>,
) -> AnyView {
    let retry = Callback::new(move |()| resource.refetch());
    // `try_get`: a change that reaches this view in the same turn as its removal (the reactive system runs
    // the view's update before it drops it) finds the read already disposed; there is nothing to show then.
    (move || match resource.try_get() {
        None => ().into_any(),
        Some(None) => loading_view(loading),
        // A superseded read, cancelled: its successor is on its way.
        Some(Some(Err(error))) if error.is_cancelled() => loading_view(loading),
        Some(Some(Err(error))) => error_view(error, retry),
        Some(Some(Ok(value))) => children(&value),
    })
    .into_any()
}

fn loading_view(Waiting { text, placeholder }: Waiting) -> AnyView {
    match placeholder {
        Some(shape) => view! {
            <p class="sr-only" role="status">{text}</p>
            {shape()}
        }
        .into_any(),
        None => view! { <p class="muted loading" role="status">{text}</p> }.into_any(),
    }
}

fn error_view(error: ApiError, retry: Callback<()>) -> AnyView {
    view! { <AsyncError error retry /> }.into_any()
}

/// A failed read: the API's error and "Try again".
#[component]
pub fn AsyncError(error: ApiError, retry: Callback<()>) -> impl IntoView {
    view! {
        <div class="async-error">
            <ApiErrorNotice error />
            <button on:click=move |_| retry.run(())>"Try again"</button>
        </div>
    }
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

/// Cancels a read's request when what it asks for changes, so that a superseded query does not hold up the
/// next one (a resource runs one fetch at a time) or load the server. The read takes [`Cancel::signal`] for
/// the key it fetches; a change of `key` aborts the request made for the previous key.
#[derive(Clone, Copy)]
pub struct Cancel<K: 'static>(StoredValue<Option<(K, web_sys::AbortController)>, LocalStorage>);

impl<K: PartialEq + Clone + Send + Sync + 'static> Cancel<K> {
    pub fn on_change(key: Memo<K>) -> Cancel<K> {
        let slot: StoredValue<Option<(K, web_sys::AbortController)>, LocalStorage> = StoredValue::new_local(None);
        Effect::new(move |_| {
            let now = key.get();
            slot.update_value(|s| {
                if let Some((k, c)) = s.take_if(|(k, _)| *k != now) {
                    let _ = k;
                    c.abort();
                }
            });
        });
        Cancel(slot)
    }

    /// A signal for the request of `key`.
    pub fn signal(&self, key: K) -> Option<web_sys::AbortSignal> {
        let controller = web_sys::AbortController::new().ok()?;
        let signal = controller.signal();
        self.0.set_value(Some((key, controller)));
        Some(signal)
    }
}

/// Its children one task later: a view that builds a lot at once (the statistics view's pickers, charts and
/// tables) is built in several tasks, so that the page answers input in between instead of blocking for the
/// whole build. Top to bottom: the later parts appear below the earlier ones, moving nothing.
#[component]
pub fn Later(children: ChildrenFn) -> impl IntoView {
    let ready = RwSignal::new(false);
    // The view may be gone when the timer fires.
    set_timeout(
        move || {
            let _ = ready.try_set(true);
        },
        std::time::Duration::ZERO,
    );
    move || ready.get().then(|| children())
}
