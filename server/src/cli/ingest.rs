//! `edge-server ingest`: access logs or security events from NDJSON files (plain, `.gz` or `.zst`) into a
//! customer's statistics, with the server stopped.

use std::path::PathBuf;

use anyhow::Context;
use edge_server::{AppState, Settings, stats::Limits};

use super::{DatabaseArgs, lock_data_dir};

/// Counts the bytes read through it (the progress of a compressed file is its compressed bytes).
struct Counted<R> {
    inner: R,
    count: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R: std::io::Read> std::io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// Lines of NDJSON files (`.gz` and `.zst` decompressed) in chunks: (file index, first line number, text).
fn read_chunks(
    files: &[PathBuf],
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
    out: std::sync::mpsc::SyncSender<(usize, u64, String)>,
) -> anyhow::Result<()> {
    use std::io::BufRead;
    const LINES: u64 = 20_000;
    for (f, path) in files.iter().enumerate() {
        let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
        let counted = std::io::BufReader::new(Counted { inner: file, count: read.clone() });
        let reader: Box<dyn std::io::Read> = match edge_server::stats::ingest::Encoding::of_path(path) {
            Some(e) => e.reader(counted).with_context(|| format!("reading {}", path.display()))?,
            None => Box::new(counted),
        };
        let (mut chunk, mut first, mut lines) = (String::new(), 1u64, 0u64);
        for line in std::io::BufReader::with_capacity(1 << 20, reader).lines() {
            chunk.push_str(&line.with_context(|| format!("reading {}", path.display()))?);
            chunk.push('\n');
            lines += 1;
            if lines == LINES {
                if out.send((f, first, std::mem::take(&mut chunk))).is_err() {
                    return Ok(());
                }
                first += lines;
                lines = 0;
            }
        }
        if lines > 0 && out.send((f, first, chunk)).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

/// Loads NDJSON files (plain, `.gz` or `.zst`) with the server stopped: one thread reads, decompresses and
/// parses while this one stores; on a terminal a progress bar shows bytes read and records per second.
pub async fn ingest(
    kind: String,
    customer: String,
    data_dir: PathBuf,
    database: DatabaseArgs,
    stats_url: Option<String>,
    limits: Limits,
    files: Vec<PathBuf>,
) -> anyhow::Result<()> {
    use edge_server::stats::ingest::{parse_access_keeping, parse_security_keeping};
    use std::sync::{Arc, atomic::AtomicU64, atomic::Ordering};
    anyhow::ensure!(kind == "accesslogs" || kind == "securityevents", "--kind is accesslogs or securityevents");
    let _lock = lock_data_dir(&data_dir)?;
    let mut settings = Settings::new(&data_dir, "");
    settings.database_url = database.database_url;
    settings.stats_url = stats_url;
    settings.stats_limits = limits;
    let state = AppState::open(settings).await.context("opening the data dir")?;
    let c =
        state.store.customer_by_name(&customer).await?.ok_or_else(|| anyhow::anyhow!("no customer {customer:?}"))?;
    let total: u64 = files.iter().map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0)).sum();
    let bar = indicatif::ProgressBar::new(total).with_style(
        indicatif::ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let read = Arc::new(AtomicU64::new(0));
    enum Parsed {
        Access(edge_server::stats::AccessBatch),
        Security(edge_server::stats::SecurityBatch),
    }
    // Reading and parsing on their own threads, storing here: both cores busy.
    let (chunks_tx, chunks) = std::sync::mpsc::sync_channel(2);
    let reader = {
        let (files, read) = (files.clone(), read.clone());
        std::thread::spawn(move || read_chunks(&files, read, chunks_tx))
    };
    let (batches_tx, batches) = std::sync::mpsc::sync_channel(2);
    let access = kind == "accesslogs";
    let parser = std::thread::spawn(move || {
        for (f, first, text) in chunks {
            let parsed = if access {
                let (b, bad) = parse_access_keeping(&text, usize::MAX);
                (Parsed::Access(b), bad)
            } else {
                let (b, bad) = parse_security_keeping(&text, usize::MAX);
                (Parsed::Security(b), bad)
            };
            if batches_tx.send((f, first, parsed)).is_err() {
                break;
            }
        }
    });
    let started = std::time::Instant::now();
    let (mut accepted, mut rejected) = (0u64, 0u64);
    let mut folded: Vec<(&'static str, u64)> = Vec::new();
    for (f, first, (batch, bad)) in batches {
        let (n, stored) = match &batch {
            Parsed::Access(b) => (b.len(), state.stats.ingest_access(c.id, b, None)?),
            Parsed::Security(b) => (b.len(), state.stats.ingest_security(c.id, b, None)?),
        };
        for (dimension, records) in stored.folded {
            match folded.iter_mut().find(|(d, _)| *d == dimension) {
                Some((_, n)) => *n += records,
                None => folded.push((dimension, records)),
            }
        }
        for b in &bad.lines {
            bar.suspend(|| eprintln!("{}:{}: {}", files[f].display(), first + b.line - 1, b.message));
        }
        accepted += n as u64;
        rejected += bad.count();
        bar.set_position(read.load(Ordering::Relaxed));
        let rate = accepted as f64 / started.elapsed().as_secs_f64().max(1e-3);
        bar.set_message(format!("{accepted} records, {rate:.0} records/s"));
    }
    parser.join().map_err(|_| anyhow::anyhow!("the parsing thread failed"))?;
    reader.join().map_err(|_| anyhow::anyhow!("the reading thread failed"))??;
    bar.finish_and_clear();
    state.stats.checkpoint()?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "Ingested {accepted} records into {customer}; {rejected} lines rejected ({:.0} records/s)",
        accepted as f64 / seconds.max(1e-3)
    );
    for (dimension, records) in folded {
        println!(
            "{records} records' {dimension} stored as {} ({customer} holds {} distinct {dimension} values, the \
             most --stats-max-values allows)",
            edge_api::stats::OTHER_VALUE,
            limits.max_values
        );
    }
    Ok(())
}
