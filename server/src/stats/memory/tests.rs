//! The embedded engine against the obvious computation: every rollup of records ingested in batches of every
//! size, and concurrent small batches and checkpoints, reopened.

use std::collections::HashMap;

use super::{
    super::{AccessRecord, SecurityRecord},
    *,
};
use crate::clock::ManualClock;

const T0: i64 = 1_790_000_000_000;
const DAY: i64 = 86_400_000;

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
    fn pick(&mut self, values: &[&str]) -> String {
        values[self.below(values.len() as u64) as usize].to_string()
    }
}

/// Records over 40 days, most in the last hours, some out of order, with values that repeat.
fn access(rng: &mut Rng, n: usize) -> Vec<AccessRecord> {
    (0..n)
        .map(|i| {
            let age = match i % 9 {
                0 => rng.below(40 * DAY as u64) as i64,
                1 => rng.below(8 * DAY as u64) as i64,
                _ => rng.below(3 * 3_600_000) as i64,
            };
            let mut dims: [String; 14] = Default::default();
            for (d, v) in dims.iter_mut().enumerate() {
                *v = match DIMS[d] {
                    "cache_status" => rng.below(6).to_string(),
                    "gna_cache_status" => rng.pick(&["", "1", "2"]),
                    "http_status_code" => rng.pick(&["200", "304", "404", "503"]),
                    "scheme" => rng.pick(&["1", "2"]),
                    "request_url" => format!("/u{}", rng.below(60)),
                    "domain" => format!("d{}.example", rng.below(7)),
                    name => format!("{name}-{}", rng.below(3)),
                };
            }
            let metrics = std::array::from_fn(|m| 1 + rng.below(1000) * (m as u64 + 1));
            AccessRecord { ts_ms: T0 - 1 - age, dims, metrics }
        })
        .collect()
}

fn security(rng: &mut Rng, n: usize) -> Vec<SecurityRecord> {
    (0..n)
        .map(|i| {
            let age = if i % 5 == 0 { rng.below(40 * DAY as u64) as i64 } else { rng.below(5 * 3_600_000) as i64 };
            let mut dims: [String; 14] = Default::default();
            for (c, v) in dims.iter_mut().enumerate() {
                *v = match SECURITY_DIMS[c] {
                    "source" => rng.pick(&["waf", "trafficshaping"]),
                    "event_action" => rng.pick(&["BLOCK", "RATE_LIMIT", "WARN"]),
                    "client_ip" => format!("192.0.2.{}", rng.below(30)),
                    name => format!("{name}-{}", rng.below(4)),
                };
            }
            SecurityRecord { ts_ms: T0 - 1 - age, dims }
        })
        .collect()
}

type Rows = HashMap<(i64, Vec<String>), Vec<u64>>;

/// A rollup's rows straight from the records, the obvious way.
fn expected(spec: &Spec, access: &[AccessRecord], security: &[SecurityRecord]) -> Rows {
    let step = spec.granularity.millis();
    let from = spec.granularity.kept_from(T0).unwrap_or(i64::MIN);
    let mut rows = Rows::new();
    let mut add = |ts: i64, key: Vec<String>, metrics: Vec<u64>| {
        let bucket = ts - ts.rem_euclid(step);
        if bucket < from {
            return;
        }
        let sums = rows.entry((bucket, key)).or_insert_with(|| vec![0; metrics.len()]);
        for (s, m) in sums.iter_mut().zip(metrics) {
            *s += m;
        }
    };
    for r in access {
        let metrics = match spec.kind {
            Kind::Delivery => r.metrics.to_vec(),
            Kind::TopKUrl | Kind::RequestTrend => vec![r.metrics[HITS]],
            _ => break,
        };
        let key = spec
            .dims
            .iter()
            .map(|d| match DIMS[*d] {
                "client_country_code" => r.dims[4].clone(),
                "waf_action" => "ALLOW".to_string(),
                _ => r.dims[*d].clone(),
            })
            .collect();
        add(r.ts_ms, key, metrics);
    }
    for r in security {
        let value = |name: &str| r.dims[SECURITY_DIMS.iter().position(|n| *n == name).unwrap()].clone();
        let waf = value("source") == "waf";
        let wanted = match spec.kind {
            Kind::WafTrend | Kind::RequestTrend => waf,
            Kind::ShapingTrend => !waf,
            Kind::TopK { waf: w, rate_limited } => waf == w && (!rate_limited || value("event_action") == "RATE_LIMIT"),
            _ => false,
        };
        if wanted {
            add(r.ts_ms, spec.dims.iter().map(|d| value(DIMS[*d])).collect(), vec![1]);
        }
    }
    rows
}

fn stored(engine: &MemoryEngine, customer: CustomerId, spec: usize) -> Rows {
    let ordered = in_stored_order(engine, customer, spec);
    let t = engine.existing_tenant(customer).unwrap();
    let dicts = read(&t.dicts);
    let mut rows = Rows::new();
    for (bucket, ids, metrics) in ordered {
        let key = engine.specs[spec].dims.iter().zip(ids).map(|(d, id)| dicts[*d].value(id).to_string()).collect();
        assert!(rows.insert((bucket, key), metrics).is_none(), "a key stored twice");
    }
    rows
}

#[test]
fn every_rollup_holds_the_sums_of_its_records_computed_directly() {
    let dir = tempfile::tempdir().unwrap();
    let engine = MemoryEngine::open(dir.path(), Arc::new(ManualClock::at(T0))).unwrap();
    let mut rng = Rng(3);
    let (access, security) = (access(&mut rng, 6000), security(&mut rng, 3000));
    // Batches of many sizes, one record up to thousands, so rows are both new and merged into.
    let mut at = 0;
    for (i, size) in [1, 7, 2500, 30, 1, 3000, 462].iter().cycle().enumerate() {
        if at >= access.len() {
            break;
        }
        let end = (at + size).min(access.len());
        engine.ingest_access(1, &AccessBatch::from_records(&access[at..end]), None).unwrap();
        at = end;
        // Upkeep seals what the last round did not touch: later batches reopen blocks of every age.
        if i % 3 == 2 {
            engine.enforce_retention(T0).unwrap();
        }
    }
    for chunk in security.chunks(700) {
        engine.ingest_security(1, &SecurityBatch::from_records(chunk), None).unwrap();
    }
    let mut checked = 0;
    for (i, spec) in engine.specs.iter().enumerate() {
        let want = expected(spec, &access, &security);
        assert!(!want.is_empty(), "{spec:?} has rows");
        assert_eq!(stored(&engine, 1, i), want, "{spec:?}");
        checked += 1;
    }
    assert_eq!(checked, engine.specs.len());
}

#[test]
fn concurrent_small_batches_and_checkpoints_lose_nothing_on_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(5);
    let records = access(&mut rng, 2000);
    {
        let engine = Arc::new(MemoryEngine::open(dir.path(), Arc::new(ManualClock::at(T0))).unwrap());
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let checkpoints = {
            let (engine, stop) = (engine.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    engine.checkpoint().unwrap();
                    n += 1;
                }
                n
            })
        };
        std::thread::scope(|s| {
            for part in records.chunks(500) {
                let engine = engine.clone();
                s.spawn(move || {
                    for batch in part.chunks(20) {
                        engine.ingest_access(1, &AccessBatch::from_records(batch), None).unwrap();
                    }
                });
            }
        });
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(checkpoints.join().unwrap() > 0);
    }
    let engine = MemoryEngine::open(dir.path(), Arc::new(ManualClock::at(T0))).unwrap();
    for (i, spec) in engine.specs.iter().enumerate() {
        if matches!(spec.kind, Kind::Delivery | Kind::TopKUrl) {
            assert_eq!(stored(&engine, 1, i), expected(spec, &records, &[]), "{spec:?}");
        }
    }
}

/// Each rollup's rows of `customer` in the order they are stored: bucket, dictionary ids, sums.
fn in_stored_order(engine: &MemoryEngine, customer: CustomerId, spec: usize) -> Vec<(i64, Vec<u32>, Vec<u64>)> {
    let t = engine.existing_tenant(customer).unwrap();
    t.settle();
    engine.derive(&t, spec, i64::MIN..i64::MAX);
    let rollup = read(&t.rollups[spec]);
    let mut rows = Vec::new();
    for (bucket, block) in &rollup.blocks {
        for r in 0..block.len() {
            let key = (0..engine.specs[spec].dims.len()).map(|c| block.dim(c).get(r)).collect();
            rows.push((*bucket, key, (0..block.n_metrics()).map(|c| block.metric(c).get(r)).collect()));
        }
    }
    rows
}

#[test]
fn batches_summed_together_store_the_rows_each_alone_would_in_the_same_order() {
    let dir = tempfile::tempdir().unwrap();
    let engine = MemoryEngine::open(dir.path(), Arc::new(ManualClock::at(T0))).unwrap();
    let mut rng = Rng(11);
    let records = access(&mut rng, 4000);
    let batches: Vec<AccessBatch> = [1, 900, 37, 2000, 1062]
        .iter()
        .scan(0, |at, n| {
            let batch = AccessBatch::from_records(&records[*at..*at + n]);
            *at += n;
            Some(batch.by_time().unwrap_or(batch))
        })
        .collect();
    // Customer 1 applies each batch alone, customer 2 all at once; both encode them in the same order, so
    // their dictionaries give every value the same id.
    let (alone, together) = (engine.tenant(1), engine.tenant(2));
    let mut queued = Vec::new();
    for batch in &batches {
        let maps = engine.encode_access(&alone, batch).unwrap().maps;
        engine.apply_access(&alone, batch, &maps);
        let maps = engine.encode_access(&together, batch).unwrap().maps;
        queued.push(tenant::Queued { batch: batch.clone(), maps });
    }
    let (batch, maps) = applier::combine(&queued).unwrap();
    assert_eq!(batch.len(), records.len());
    engine.apply_access(&together, &batch, &maps);
    for (i, spec) in engine.specs.iter().enumerate() {
        if matches!(spec.kind, Kind::Delivery | Kind::TopKUrl | Kind::RequestTrend) {
            let want = in_stored_order(&engine, 1, i);
            assert!(!want.is_empty(), "{spec:?}");
            assert_eq!(in_stored_order(&engine, 2, i), want, "{spec:?}");
        }
    }
}

#[test]
fn rollups_summed_from_their_stand_in_when_read_follow_later_batches_and_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(17);
    let records = access(&mut rng, 5000);
    let derived: Vec<usize> = {
        let engine = MemoryEngine::open(dir.path(), Arc::new(ManualClock::at(T0))).unwrap();
        (0..engine.specs.len()).filter(|i| engine.stand_in[*i] != *i).collect()
    };
    assert!(derived.len() * 2 > all_specs().len(), "{} of the rollups summed when read", derived.len());
    let check = |engine: &MemoryEngine, upto: usize| {
        for (i, spec) in engine.specs.iter().enumerate() {
            if matches!(spec.kind, Kind::Delivery | Kind::TopKUrl | Kind::RequestTrend) {
                assert_eq!(stored(engine, 1, i), expected(spec, &records[..upto], &[]), "{spec:?} after {upto}");
            }
        }
        // Every row held, summed as batches came or when read, counts as the customer's.
        let t = engine.existing_tenant(1).unwrap();
        assert_eq!(t.rows.load(std::sync::atomic::Ordering::Relaxed), t.footprint().rollup_rows);
    };
    {
        let engine = MemoryEngine::open(dir.path(), Arc::new(ManualClock::at(T0))).unwrap();
        // Read after every batch: each later batch changes blocks already summed when read, and adds others.
        for upto in [1000, 1001, 3000] {
            let from = if upto == 1000 {
                0
            } else if upto == 1001 {
                1000
            } else {
                1001
            };
            engine.ingest_access(1, &AccessBatch::from_records(&records[from..upto]), None).unwrap();
            check(&engine, upto);
        }
        engine.checkpoint().unwrap();
        engine.ingest_access(1, &AccessBatch::from_records(&records[3000..]), None).unwrap();
    }
    // Reopened: the snapshot left the rows summed when read out; they are summed again, after the log.
    let engine = MemoryEngine::open(dir.path(), Arc::new(ManualClock::at(T0))).unwrap();
    let t = engine.existing_tenant(1).unwrap();
    t.settle();
    let held: u64 = derived.iter().map(|i| read(&t.rollups[*i]).blocks.len() as u64).sum();
    assert_eq!(held, 0, "the snapshot holds no block summed when read");
    check(&engine, records.len());
}
