//! The lines of ingestion as serde reads them: an access-log record and a security event, every field named
//! (unknown ones refused), texts borrowed from the body where they need no unescaping.

use std::borrow::Cow;

use serde::Deserialize;

pub(super) type Text<'a> = Cow<'a, str>;

#[derive(Deserialize, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct AccessLine<'a> {
    #[serde(borrow)]
    pub(super) timestamp: Text<'a>,
    #[serde(default, borrow)]
    pub(super) browser_name: Text<'a>,
    #[serde(default)]
    pub(super) cache_status: u8,
    #[serde(default, borrow)]
    pub(super) content_type: Text<'a>,
    #[serde(default, borrow)]
    pub(super) country: Text<'a>,
    #[serde(default, borrow)]
    pub(super) country_code: Text<'a>,
    #[serde(default, borrow)]
    pub(super) device_os: Text<'a>,
    #[serde(default, borrow)]
    pub(super) device_type: Text<'a>,
    #[serde(borrow)]
    pub(super) domain: Text<'a>,
    #[serde(default)]
    pub(super) gna_cache_status: Option<u8>,
    pub(super) http_status_code: u16,
    #[serde(borrow)]
    pub(super) property: Text<'a>,
    #[serde(default, borrow)]
    pub(super) request_type: Text<'a>,
    pub(super) scheme: u8,
    #[serde(borrow)]
    pub(super) request_url: Text<'a>,
    #[serde(default)]
    pub(super) first_mile_bandwidth_bytes: u64,
    #[serde(default)]
    pub(super) hits: Option<u64>,
    #[serde(default)]
    pub(super) last_mile_bandwidth_bytes: u64,
    #[serde(default)]
    pub(super) middle_mile_bandwidth_bytes: u64,
    #[serde(default)]
    pub(super) original_bandwidth_bytes: u64,
    #[serde(default)]
    pub(super) request_time_ms: u64,
    #[serde(default)]
    pub(super) time_to_first_byte_ms: u64,
    #[serde(default)]
    pub(super) time_to_last_byte_ms: u64,
}

#[derive(Deserialize, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct SecurityLine<'a> {
    #[serde(borrow)]
    pub(super) timestamp: Text<'a>,
    #[serde(borrow)]
    pub(super) source: Text<'a>,
    #[serde(default, borrow)]
    pub(super) event_type: Text<'a>,
    #[serde(default, borrow)]
    pub(super) event_action: Text<'a>,
    #[serde(default, borrow)]
    pub(super) event_severity: Text<'a>,
    #[serde(default, borrow)]
    pub(super) waf_action: Text<'a>,
    #[serde(default, borrow)]
    pub(super) rule_id: Text<'a>,
    #[serde(borrow)]
    pub(super) domain: Text<'a>,
    #[serde(default, borrow)]
    pub(super) property: Text<'a>,
    #[serde(default, borrow)]
    pub(super) client_ip: Text<'a>,
    #[serde(default, borrow)]
    pub(super) client_connection_remote_ip: Text<'a>,
    #[serde(default, borrow)]
    pub(super) client_browser: Text<'a>,
    #[serde(default, borrow)]
    pub(super) client_country_code: Text<'a>,
    #[serde(default)]
    pub(super) client_asn: Option<u32>,
    #[serde(default, borrow)]
    pub(super) request_path: Text<'a>,
}
