//! Ingestion of access logs and security events: NDJSON bodies (gzip or zstd allowed) decompressed within the
//! body limit, parsed and stored on threads of their own at a lower priority, once per `Idempotency-Key`.

use axum::{
    body::Bytes,
    extract::State,
    http::{HeaderMap, HeaderValue, header},
    response::{IntoResponse, Response},
};
use edge_api::{
    ErrorBody, perm,
    stats::{FoldedDimension, IngestResult},
};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    domain::auth::Caller,
    http::{
        caller::Allowed,
        error::{AppError, AppResult},
    },
    state::AppState,
    stats::{Endpoint, IngestError, Keyed, Stored, ingest},
};

/// Refuses an ingestion body whose content type is not NDJSON (or JSON, or plain text); returns how it is
/// compressed.
fn ndjson(headers: &HeaderMap) -> AppResult<Option<ingest::Encoding>> {
    let ct = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
    let ok = ["application/x-ndjson", "application/json", "text/plain", "application/jsonl"]
        .iter()
        .any(|t| ct.starts_with(t));
    if !ok {
        return Err(AppError::UnsupportedMediaType(
            "Send newline-delimited JSON (Content-Type: application/x-ndjson).".into(),
        ));
    }
    let encoding = headers.get(header::CONTENT_ENCODING).map(|v| v.to_str().unwrap_or("?").trim().to_ascii_lowercase());
    match encoding.as_deref() {
        None | Some("" | "identity") => Ok(None),
        Some(e) => ingest::Encoding::parse(e).map(Some).ok_or_else(|| {
            AppError::UnsupportedMediaType(format!(
                "Content-Encoding {e:?} is not supported: send gzip, zstd or an uncompressed body."
            ))
        }),
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// Runs `work` on the ingestion threads and waits for its result. Ingestion has threads of its own, one a
/// core, at a lower CPU priority (nice 10): when the machine is busy, queries (tokio's blocking threads,
/// priority 0) go first, so dashboards stay fast during heavy ingestion, which takes the rest.
async fn on_ingest_threads<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> anyhow::Result<T> {
    static POOL: std::sync::OnceLock<std::sync::Mutex<std::sync::mpsc::Sender<Job>>> = std::sync::OnceLock::new();
    let pool = POOL.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        for i in 0..threads {
            let rx = rx.clone();
            let _ = std::thread::Builder::new().name(format!("ingest-{i}")).spawn(move || {
                #[cfg(target_os = "linux")]
                // SAFETY: setpriority takes integers only; on Linux, PRIO_PROCESS with 0 is the calling thread.
                unsafe {
                    libc::setpriority(libc::PRIO_PROCESS, 0, 10);
                }
                loop {
                    let job = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    match job {
                        Ok(job) => job(),
                        Err(_) => break,
                    }
                }
            });
        }
        std::sync::Mutex::new(tx)
    });
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)));
    });
    pool.lock().unwrap_or_else(|e| e.into_inner()).send(job).map_err(|_| anyhow::anyhow!("no ingestion threads"))?;
    match rx.await {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(_)) => anyhow::bail!("an ingestion job panicked"),
        Err(_) => anyhow::bail!("an ingestion job was dropped"),
    }
}

/// Stores a parsed batch for a customer (with its key, if it has one): how many records, and what storing
/// did besides.
type StoreBatch<B> = fn(&dyn crate::stats::StatsEngine, i64, &B, Option<&Keyed>) -> Result<(u64, Stored), IngestError>;

/// The longest `Idempotency-Key` taken, in characters (printable ASCII, so bytes too).
pub const MAX_IDEMPOTENCY_KEY: usize = 200;

/// The request's `Idempotency-Key`: none without the header; 400 `invalid_header` unless it is one header of
/// 1 to 200 printable ASCII characters.
fn idempotency_key(headers: &HeaderMap) -> AppResult<Option<String>> {
    let mut values = headers.get_all("idempotency-key").iter();
    let Some(value) = values.next() else { return Ok(None) };
    let bytes = value.as_bytes();
    let printable = bytes.iter().all(|b| (b' '..=b'~').contains(b));
    if values.next().is_some() || bytes.is_empty() || bytes.len() > MAX_IDEMPOTENCY_KEY || !printable {
        return Err(AppError::bad_request(
            "invalid_header",
            format!("Idempotency-Key must be one header of 1 to {MAX_IDEMPOTENCY_KEY} printable ASCII characters."),
        ));
    }
    Ok(Some(String::from_utf8_lossy(bytes).into_owned()))
}

/// An `Idempotency-Key` this process is handling, released when dropped.
struct InFlight {
    keys: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<(i64, Endpoint, String)>>>,
    id: (i64, Endpoint, String),
}

impl InFlight {
    /// Claims the key, or 409 `idempotency_key_in_use` while another request with it is being handled.
    fn claim(state: &AppState, id: (i64, Endpoint, String)) -> AppResult<InFlight> {
        let mut keys = state.ingest_keys.lock().unwrap_or_else(|e| e.into_inner());
        if !keys.insert(id.clone()) {
            return Err(AppError::Busy {
                kind: "idempotency_key_in_use",
                message: "A request with this Idempotency-Key is being handled; try again in a moment for its answer."
                    .into(),
                retry_after_secs: 1,
            });
        }
        Ok(InFlight { keys: state.ingest_keys.clone(), id })
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.keys.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
    }
}

fn ingest_error(e: IngestError) -> AppError {
    match e {
        IngestError::Full(m) => {
            AppError::Conflict { kind: "statistics_full", message: format!("Nothing of the batch was stored: {m}.") }
        }
        IngestError::Unavailable(message) => {
            AppError::Unavailable { kind: "database_unavailable", message, retry_after_secs: 2 }
        }
        IngestError::Internal(e) => AppError::Internal(e),
    }
}

/// Decompresses (within the body limit), parses and stores an ingestion body, off the async runtime. With an
/// `Idempotency-Key` already kept for this customer and endpoint, stores nothing and answers as the first
/// time (`Idempotent-Replayed: true`).
async fn ingest_with<B: Send + 'static>(
    state: &AppState,
    caller: &Caller,
    headers: &HeaderMap,
    body: Bytes,
    endpoint: Endpoint,
    parse: fn(&str) -> (B, ingest::Rejected),
    store: StoreBatch<B>,
) -> AppResult<Response> {
    let encoding = ndjson(headers)?;
    let key = idempotency_key(headers)?;
    let engine = state.stats.clone();
    let customer = caller.customer.id;
    // Held until the work is done, even if the client goes away meanwhile (the work goes on).
    let in_flight = key.as_ref().map(|k| InFlight::claim(state, (customer, endpoint, k.clone()))).transpose()?;
    let limit = state.settings.max_body_bytes;
    let shared = engine.shared();
    let work = move || -> AppResult<(bool, IngestResult)> {
        let _in_flight = in_flight;
        let decoded = match encoding {
            Some(e) => Some(ingest::decompress(e, &body, limit).map_err(|e| match e {
                ingest::DecodeError::TooLarge => AppError::PayloadTooLarge,
                ingest::DecodeError::Corrupt(m) => {
                    AppError::bad_request("invalid_encoding", format!("The body is not valid {m}."))
                }
            })?),
            None => None,
        };
        let text = std::str::from_utf8(decoded.as_deref().unwrap_or(&body))
            .map_err(|_| AppError::bad_request("invalid_encoding", "The body is not UTF-8."))?;
        let values_limit = engine.limits().max_values as u64;
        let folded_of = |folded: Vec<(&'static str, u64)>| -> Vec<FoldedDimension> {
            folded
                .into_iter()
                .map(|(dimension, records)| FoldedDimension {
                    dimension: dimension.into(),
                    records,
                    limit: values_limit,
                })
                .collect()
        };
        let keyed = key.map(|key| {
            use sha2::Digest as _;
            Keyed { endpoint, key, body_hash: sha2::Sha256::digest(text.as_bytes()).into() }
        });
        if let Some(k) = &keyed
            && let Some(kept) = engine.kept(customer, endpoint, &k.key).map_err(ingest_error)?
        {
            if kept.body_hash != k.body_hash {
                return Err(AppError::Unprocessable {
                    kind: "idempotency_key_reused",
                    message: "This Idempotency-Key was used for a request with another body; nothing was stored. \
                              Send each chunk with a key of its own."
                        .into(),
                });
            }
            // The same body is rejected the same lines; what storing did is as kept.
            let (_, rejected) = parse(text);
            let result = IngestResult {
                accepted: kept.accepted,
                rejected: rejected.lines,
                rejected_more: rejected.more,
                folded: folded_of(kept.folded),
            };
            return Ok((true, result));
        }
        let (batch, rejected) = parse(text);
        let (accepted, stored) = store(engine.as_ref(), customer, &batch, keyed.as_ref()).map_err(ingest_error)?;
        let folded = folded_of(stored.folded);
        Ok((false, IngestResult { accepted, rejected: rejected.lines, rejected_more: rejected.more, folded }))
    };
    // An engine in another process (ClickHouse) mostly waits, and writes concurrent requests together: each
    // waits on a thread of its own rather than hold one of the few ingestion threads.
    let (replayed, result) = if shared {
        tokio::task::spawn_blocking(work).await.map_err(|e| anyhow::anyhow!("an ingestion job failed: {e}"))?
    } else {
        on_ingest_threads(work).await?
    }?;
    let mut response = axum::Json(result).into_response();
    if replayed {
        response.headers_mut().insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    Ok(response)
}

/// Declares an ingestion operation: both take and answer the same, but for what a line holds and where it is
/// stored.
macro_rules! ingest_route {
    ($(#[$doc:meta])* $name:ident $path:literal, $line:literal, $endpoint:expr, $parse:path, $store:ident) => {
        $(#[$doc])*
        #[utoipa::path(post, path = $path, tag = "ingestion",
            params(("Idempotency-Key" = Option<String>, Header, description = "Optional: 1 to 200 printable ASCII characters naming this chunk (e.g. file and offset), scoped to the customer and the endpoint. A chunk stored with a key is stored once: a retry with the same key and body stores nothing and gets the first answer again (with Idempotent-Replayed: true), also after a crash of the server or of the statistics database in the middle of the first attempt. Keys are kept at least 24 hours (the embedded engine keeps at most 100,000 a customer, forgetting the oldest first); a body with no valid record keeps no key. Without the header a retry stores the chunk again.")),
            request_body(content = String, content_type = "application/x-ndjson", description = $line),
            responses(
                (status = 200, description = "How many were accepted; the first 100 rejected lines with their numbers and why, and how many more were rejected; and the dimensions whose new values were stored as (other) because the customer holds as many distinct values of them as the server allows (--stats-max-values), with how many records. A retry of a chunk already stored with its Idempotency-Key gets the first answer and the header Idempotent-Replayed: true", body = IngestResult,
                    headers(("Idempotent-Replayed" = String, description = "`true` when the answer is the kept one of an earlier request with the same Idempotency-Key (nothing was stored)"))),
                (status = 400, description = "The body is not UTF-8, or not valid for its Content-Encoding (invalid_encoding); invalid_header: the Idempotency-Key is not 1 to 200 printable ASCII characters, or is sent twice", body = ErrorBody),
                (status = 401, description = "Not authenticated", body = ErrorBody),
                (status = 403, description = "Ingestion needs the operator or admin role", body = ErrorBody),
                (status = 413, description = "The body is larger than the server accepts, before or after decompression; nothing was stored", body = ErrorBody),
                (status = 415, description = "Not NDJSON, or a Content-Encoding other than gzip and zstd", body = ErrorBody),
                (status = 409, description = "statistics_full: the customer's statistics hold as many rows as the server allows (--stats-max-rows); nothing was stored. Rows make room as they pass their retention. idempotency_key_in_use (with Retry-After: 1): a request with the same Idempotency-Key is being handled; retry for its answer", body = ErrorBody),
                (status = 422, description = "idempotency_key_reused: the Idempotency-Key was kept for a request with another body; nothing was stored", body = ErrorBody),
            ))]
        async fn $name(
            State(state): State<AppState>,
            Allowed(caller, _): Allowed<perm::Ingest>,
            headers: HeaderMap,
            body: Bytes,
        ) -> AppResult<Response> {
            ingest_with(&state, &caller, &headers, body, $endpoint, $parse, |e, c, b, k| {
                e.$store(c, b, k).map(|stored| (b.len() as u64, stored))
            })
            .await
        }
    };
}

ingest_route!(
    /// Ingest access-log records: NDJSON, one record per line (see docs/api.md). Good lines are stored (durably,
    /// before the answer) even when others are rejected.
    ingest_access "/ingest/accesslogs", "One access-log record per line",
    Endpoint::AccessLogs, ingest::parse_access, ingest_access
);
ingest_route!(
    /// Ingest security events: NDJSON, one event per line (see docs/api.md).
    ingest_security "/ingest/securityevents", "One security event per line",
    Endpoint::SecurityEvents, ingest::parse_security, ingest_security
);

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(ingest_access)).routes(routes!(ingest_security))
}
