//! Silences: whether one matches a rule at a time — by the rule's id and/or all of its labels, in its window or
//! one of its repetitions — and when one expires.

use std::collections::BTreeMap;

use edge_api::alerts::Repeat;

use crate::store::SilenceRecord;

/// A silence as the evaluation reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Silence {
    pub rule_id: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub starts_ms: i64,
    pub ends_ms: i64,
    pub repeat: Option<Repeat>,
    pub repeat_until_ms: Option<i64>,
}

impl Silence {
    pub fn of(record: &SilenceRecord) -> Silence {
        Silence {
            rule_id: record.rule_id.clone(),
            labels: serde_json::from_str(&record.labels).unwrap_or_default(),
            starts_ms: record.starts_ms,
            ends_ms: record.ends_ms,
            repeat: record.repeat.as_deref().and_then(Repeat::parse),
            repeat_until_ms: record.repeat_until_ms,
        }
    }

    /// Whether it applies to a rule: its id when it names one, and every label it names with the same value.
    pub fn matches(&self, rule_id: &str, labels: &BTreeMap<String, String>) -> bool {
        self.rule_id.as_deref().is_none_or(|id| id == rule_id)
            && self.labels.iter().all(|(k, v)| labels.get(k) == Some(v))
            && (self.rule_id.is_some() || !self.labels.is_empty())
    }

    /// Whether `at_ms` is in its window or one of its repetitions (those starting before `repeat_until_ms`).
    pub fn active_at(&self, at_ms: i64) -> bool {
        if at_ms < self.starts_ms {
            return false;
        }
        match self.repeat {
            None => at_ms < self.ends_ms,
            Some(repeat) => {
                let period = repeat.millis();
                let k = (at_ms - self.starts_ms).div_euclid(period);
                let start = self.starts_ms + k * period;
                self.repeat_until_ms.is_none_or(|until| start < until)
                    && at_ms < start + (self.ends_ms - self.starts_ms)
            }
        }
    }

    /// When no window of it lies ahead any more: the end of its one window, or of its last repetition; None when
    /// it repeats for ever.
    pub fn expires_ms(&self) -> Option<i64> {
        match (self.repeat, self.repeat_until_ms) {
            (None, _) => Some(self.ends_ms),
            (Some(_), None) => None,
            (Some(repeat), Some(until)) => {
                let period = repeat.millis();
                // The last repetition starts before `until`.
                let k = (until - 1 - self.starts_ms).div_euclid(period).max(0);
                Some(self.starts_ms + k * period + (self.ends_ms - self.starts_ms))
            }
        }
    }
}

/// Whether one of `silences` silences the rule at `at_ms`.
pub fn silenced(silences: &[Silence], rule_id: &str, labels: &BTreeMap<String, String>, at_ms: i64) -> bool {
    silences.iter().any(|s| s.matches(rule_id, labels) && s.active_at(at_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000;

    fn window(repeat: Option<Repeat>, until: Option<i64>) -> Silence {
        Silence {
            rule_id: Some("r".into()),
            labels: BTreeMap::new(),
            starts_ms: 10 * H,
            ends_ms: 12 * H,
            repeat,
            repeat_until_ms: until,
        }
    }

    #[test]
    fn a_window_silences_from_its_start_until_its_end() {
        let s = window(None, None);
        assert!(!s.active_at(10 * H - 1) && s.active_at(10 * H) && s.active_at(12 * H - 1) && !s.active_at(12 * H));
        assert_eq!(s.expires_ms(), Some(12 * H));
    }

    #[test]
    fn a_daily_maintenance_window_repeats_until_its_last_start() {
        let s = window(Some(Repeat::Daily), Some(10 * H + 2 * 24 * H + 1));
        assert!(s.active_at(11 * H + 24 * H) && !s.active_at(13 * H + 24 * H));
        assert!(s.active_at(11 * H + 48 * H) && !s.active_at(11 * H + 72 * H));
        assert_eq!(s.expires_ms(), Some(12 * H + 48 * H));
        assert_eq!(window(Some(Repeat::Weekly), None).expires_ms(), None);
    }

    #[test]
    fn labels_must_all_match_and_the_rule_when_named() {
        let labels = BTreeMap::from([("team".to_string(), "edge".to_string()), ("env".into(), "prod".into())]);
        let mut s = window(None, None);
        assert!(s.matches("r", &labels) && !s.matches("other", &labels));
        s.rule_id = None;
        s.labels = BTreeMap::from([("team".to_string(), "edge".to_string())]);
        assert!(s.matches("other", &labels));
        s.labels.insert("env".into(), "staging".into());
        assert!(!s.matches("other", &labels));
        s.labels.clear();
        assert!(!s.matches("other", &labels), "a silence naming nothing silences nothing");
    }
}
