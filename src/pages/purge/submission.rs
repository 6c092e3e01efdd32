//! A submission's URIs sent in requests of 500, paced under the API's 2 requests a second (waiting as a 429's
//! Retry-After says), and each transaction followed: one overall progress and each request's status.

use edge_api::{PurgeBody, PurgeRequest, PurgeUri, TransactionStatus};
use leptos::{prelude::*, task::spawn_local};

use crate::{
    api::{self, Purged},
    components::{
        bulk::{Pace, send_in_chunks},
        progress::{ProgressBar, follow, sleep},
    },
};

use super::CHUNK;

/// The API takes 2 purge requests a second per customer: one every half second at most.
const PACE_MS: f64 = 500.0;

/// Where one request of a submission stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Chunk {
    Waiting,
    /// Refused for the rate limit; sent again at this time (ms).
    Retrying(f64),
    Sent(TransactionStatus),
    Failed(String),
}

/// One submission: its URIs in requests, and how each stands.
#[derive(Clone)]
pub(super) struct Submission {
    pub(super) action: String,
    /// (first URI's number from 1, URIs in the request, its state)
    pub(super) chunks: Vec<(usize, usize, RwSignal<Chunk>)>,
}

impl Submission {
    fn percent(&self) -> u8 {
        let n = self.chunks.len().max(1) as u64;
        let sum: u64 = self
            .chunks
            .iter()
            .map(|(_, _, c)| match c.get() {
                Chunk::Sent(t) => u64::from(t.transaction_response.percent_received_responses),
                Chunk::Failed(_) => 100,
                _ => 0,
            })
            .sum();
        (sum / n) as u8
    }

    fn summary(&self) -> String {
        let (mut done, mut failed, mut retrying) = (0, 0, 0);
        for (_, _, c) in &self.chunks {
            match c.get() {
                Chunk::Sent(t) if t.transaction_response.transaction_status != "PENDING" => done += 1,
                Chunk::Failed(_) => failed += 1,
                Chunk::Retrying(_) => retrying += 1,
                _ => {}
            }
        }
        let mut text = format!("{done} of {} request(s) complete", self.chunks.len());
        if failed > 0 {
            text.push_str(&format!(", {failed} failed"));
        }
        if retrying > 0 {
            text.push_str(", waiting for the rate limit");
        }
        text
    }
}

#[component]
pub(super) fn SubmissionView(s: Submission) -> impl IntoView {
    let total: usize = s.chunks.iter().map(|(_, n, _)| n).sum();
    let (p, q) = (s.clone(), s.clone());
    let title = format!(
        "{} {total} URI(s) in {} request(s)",
        if s.action == "PURGE" { "Purge of" } else { "Expiry of" },
        s.chunks.len()
    );
    view! {
        <div class="submission">
            <h3>{title}</h3>
            <div class="overall" id="purge-overall">
                <ProgressBar percent=Signal::derive(move || p.percent()) label=Signal::derive(move || q.summary()) />
            </div>
            <ul class="chunks">
                {s
                    .chunks
                    .iter()
                    .map(|(first, n, state)| {
                        let range = format!("URIs {first}–{}", first + n - 1);
                        let state = *state;
                        view! {
                            <li
                                class="transaction"
                                data-status=move || match state.get() {
                                    Chunk::Waiting => "WAITING".to_string(),
                                    Chunk::Retrying(_) => "RETRYING".to_string(),
                                    Chunk::Sent(t) => t.transaction_response.transaction_status,
                                    Chunk::Failed(_) => "FAILED".to_string(),
                                }
                                data-transaction=move || match state.get() {
                                    Chunk::Sent(t) => t.transaction_id.to_string(),
                                    _ => String::new(),
                                }
                            >
                                <span class="chunk-range">{range}</span>
                                {move || match state.get() {
                                    Chunk::Waiting => view! { <span class="muted">"waiting to be sent"</span> }.into_any(),
                                    Chunk::Retrying(_) => view! { <span class="muted">"refused for the rate limit; sent again shortly"</span> }.into_any(),
                                    Chunk::Failed(e) => view! { <span class="field-error">{e}</span> }.into_any(),
                                    Chunk::Sent(t) => {
                                        let r = t.transaction_response;
                                        let label = if r.transaction_status == "PENDING" {
                                            format!("Transaction {}: {}% of edge nodes confirmed", t.transaction_id, r.percent_received_responses)
                                        } else {
                                            format!("Transaction {}: {}", t.transaction_id, r.transaction_status_description)
                                        };
                                        let percent = r.percent_received_responses;
                                        view! { <ProgressBar percent=Signal::derive(move || percent) label=Signal::derive(move || label.clone()) /> }.into_any()
                                    }
                                }}
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        </div>
    }
}

/// Sends a submission's requests one after the other, at most one every [`PACE_MS`], each again after a
/// 429's Retry-After until taken; follows the transactions (one request at a time) until all are done.
pub(super) fn run(customer: String, action: String, uris: Vec<PurgeUri>, s: Submission, done: Callback<()>) {
    let sending = {
        let (customer, s) = (customer.clone(), s.clone());
        async move {
            let pace = Pace::new(PACE_MS);
            send_in_chunks(&uris, CHUNK, |i, chunk| {
                let (customer, action, pace) = (customer.clone(), action.clone(), pace.clone());
                let state = s.chunks.get(i).map(|(_, _, state)| *state);
                async move {
                    let Some(state) = state else { return false };
                    let request = PurgeRequest { purge_request: PurgeBody { action, uris: chunk } };
                    loop {
                        match pace.send(api::purge_once(&customer, &request)).await {
                            Purged::Done(t) => {
                                let _ = state.try_set(Chunk::Sent(t));
                                return true;
                            }
                            Purged::Later(seconds) => {
                                let at = js_sys::Date::now() + f64::from(seconds) * 1000.0;
                                if state.try_set(Chunk::Retrying(at)).is_some() {
                                    return false;
                                }
                                sleep(seconds as i32 * 1000).await;
                            }
                            Purged::Failed(e) => {
                                let _ = state.try_set(Chunk::Failed(e.body.message));
                                return true;
                            }
                        }
                    }
                }
            })
            .await;
        }
    };
    spawn_local(sending);
    follow(move || {
        let (customer, s) = (customer.clone(), s.clone());
        async move {
            let mut open = false;
            for (_, _, state) in &s.chunks {
                let Some(now) = state.try_get_untracked() else { return false };
                match now {
                    Chunk::Sent(t) if t.transaction_response.transaction_status == "PENDING" => {
                        open = true;
                        if let Ok(t) = api::transaction(&customer, t.transaction_id).await {
                            let _ = state.try_set(Chunk::Sent(t));
                        }
                    }
                    Chunk::Waiting | Chunk::Retrying(_) => open = true,
                    _ => {}
                }
            }
            if !open {
                // The view may have gone while the last answer was on its way.
                let _ = done.try_run(());
            }
            open
        }
    });
}
