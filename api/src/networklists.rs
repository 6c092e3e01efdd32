//! Network lists: IP addresses and CIDR ranges, or ISO 3166-1 country codes, referenced by security rules.
//! Entry validation and normalisation live here so the console checks pasted lines exactly as the server does.

use std::net::IpAddr;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

use crate::{Task, paging::paged};

/// Entries one list may hold.
pub const MAX_ENTRIES_PER_LIST: u64 = 50_000;
/// Entries one call may add or remove.
pub const MAX_ENTRIES_PER_CALL: usize = 5_000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NetworkList {
    pub id: String,
    pub uri: String,
    /// `IP` or `GEO`.
    #[serde(rename = "type")]
    pub list_type: String,
    /// The entries; omitted with `includelist=false` and in the paged listing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<Vec<String>>,
    pub name: String,
    pub description: String,
    pub deprecated: bool,
    pub entries_uri: String,
    /// POST here to delete all entries while keeping the list.
    pub entries_batch_deletion_uri: String,
    /// `YYYY-MM-DDTHH:MM:SSZ`
    pub creation_timestamp: String,
    /// Present only if the list was modified after creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_timestamp: Option<String>,
}

paged!(
    /// A page of network lists (without their entries).
    NetworkListPage,
    NetworkList
);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NetworkListEntry {
    pub uri: String,
    pub id: String,
    pub entry: String,
    /// Username of who added it.
    pub added_by: String,
    pub creation_timestamp: String,
}

paged!(
    /// A page of a list's entries, oldest first.
    EntryPage,
    NetworkListEntry
);

/// The single-entry answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EntryRef {
    pub uri: String,
    pub id: String,
    #[serde(rename = "type")]
    pub list_type: String,
    pub network_list_uri: String,
    /// The entry's value (beyond the original API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
}

/// Body of POST /config/networklists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NewNetworkList {
    #[cfg_attr(feature = "openapi", schema(max_length = 200))]
    pub name: String,
    #[serde(rename = "type")]
    pub list_type: String,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 2000))]
    pub description: String,
    /// Initial entries (at most 5,000).
    #[serde(default)]
    pub list: Vec<String>,
}

/// Body of PUT /config/networklists/{id}: absent fields keep their value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NetworkListUpdate {
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 200))]
    pub name: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 2000))]
    pub description: Option<String>,
    #[serde(default)]
    pub deprecated: Option<bool>,
}

/// One entry to add: `{"entry": v}` or `{"value": v}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EntryInput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

impl EntryInput {
    pub fn text(&self) -> Option<&str> {
        self.entry.as_deref().or(self.value.as_deref())
    }
}

/// Answer of adding entries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AddEntriesResult {
    /// Entries that were new.
    pub added: u64,
    /// Entries already in the list (after normalisation); they are merged, not refused.
    #[serde(default)]
    pub already_present: u64,
    pub list: NetworkList,
    /// The deployment of the updated list.
    pub task: Task,
}

/// Where a network list is used (beyond the API): the properties whose current configuration has a
/// traffic-shaping rule matching the list, by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NetworkListUsage {
    /// At most 100, by name.
    pub properties: Vec<PropertyUse>,
    /// More properties use the list than `properties` holds.
    pub has_more: bool,
}

/// A property whose configuration uses a network list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PropertyUse {
    /// The property's name.
    pub property: String,
    /// Its configuration's address.
    pub uri: String,
    /// The configuration's version that was read.
    pub version: u64,
    /// How many of its traffic-shaping rules match the list.
    pub rule_count: u64,
    /// Those rules, in the configuration's order: at most 100.
    pub rules: Vec<RuleUse>,
}

/// A traffic-shaping rule that matches a network list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RuleUse {
    /// The rule's node id.
    pub id: String,
    pub name: String,
    /// `BLOCK`, `RATE_LIMIT` or `WARN`.
    pub action: String,
    pub enabled: bool,
}

/// The most properties a usage answer names.
pub const USAGE_MAX_PROPERTIES: usize = 100;
/// The most rules a usage answer names per property.
pub const USAGE_MAX_RULES: usize = 100;

/// Normalises an entry of a list of type `list_type`, or says what is wrong with it.
///
/// IP: an IPv4 or IPv6 address (written canonically, e.g. `2001:db8::1`) or a CIDR range; a /32 or /128
/// range becomes the plain address. A range with host bits set (`1.2.3.4/8`) is refused with the network it
/// would mean ([`network_of`]: "did you mean 1.0.0.0/8?"): zeroing them silently would store a range the user
/// may not have meant (16.7 million addresses instead of one). GEO: an ISO 3166-1 alpha-2 code, upper case.
pub fn normalize_entry(list_type: &str, text: &str) -> Result<String, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("empty entry".into());
    }
    match list_type {
        "IP" => {
            if let Ok(addr) = t.parse::<IpAddr>() {
                return Ok(addr.to_string());
            }
            let net: IpNet = t.parse().map_err(|_| format!("{t:?} is not an IP address or CIDR range"))?;
            if net.trunc() != net {
                return Err(format!("{t:?} has host bits set: did you mean {}?", net_text(net.trunc())));
            }
            Ok(net_text(net))
        }
        "GEO" => {
            let code = t.to_ascii_uppercase();
            if COUNTRY_CODES.contains(&code.as_str()) {
                Ok(code)
            } else {
                Err(format!("{t:?} is not an ISO 3166-1 alpha-2 country code"))
            }
        }
        other => Err(format!("unknown list type {other:?}")),
    }
}

/// A network as an entry: a /32 or /128 as the plain address.
fn net_text(net: IpNet) -> String {
    if net.prefix_len() == net.max_prefix_len() { net.addr().to_string() } else { net.to_string() }
}

/// The network a CIDR range with host bits set stands for (`1.2.3.4/8` → `1.0.0.0/8`), offered as the fix of
/// such an entry; `None` for anything else.
pub fn network_of(text: &str) -> Option<String> {
    let net: IpNet = text.trim().parse().ok()?;
    (net.trunc() != net).then(|| net_text(net.trunc()))
}

/// The entries of an IP list, to find which other entry covers a range or an address: a wider range that
/// holds it. Looked up by prefix (at most 129 probes per entry), so a list of 50,000 checks 50,000 more at once.
#[derive(Debug, Default, Clone)]
pub struct Coverage(std::collections::HashSet<IpNet>);

fn as_net(entry: &str) -> Option<IpNet> {
    let t = entry.trim();
    t.parse::<IpNet>().ok().or_else(|| t.parse::<IpAddr>().ok().map(IpNet::from))
}

impl Coverage {
    /// The networks of `entries` (normalised IP entries; anything else is skipped).
    pub fn new<'a>(entries: impl IntoIterator<Item = &'a str>) -> Coverage {
        Coverage(entries.into_iter().filter_map(as_net).map(|n| n.trunc()).collect())
    }

    pub fn insert(&mut self, entry: &str) {
        if let Some(n) = as_net(entry) {
            self.0.insert(n.trunc());
        }
    }

    /// The widest entry that holds `entry` and is not `entry` itself, as an entry.
    pub fn covering(&self, entry: &str) -> Option<String> {
        let net = as_net(entry)?.trunc();
        (0..net.prefix_len())
            .filter_map(|p| IpNet::new(net.addr(), p).ok().map(|n| n.trunc()))
            .find(|n| self.0.contains(n))
            .map(net_text)
    }
}

/// ISO 3166-1 alpha-2: the 249 officially assigned codes.
pub const COUNTRY_CODES: [&str; 249] = [
    "AD", "AE", "AF", "AG", "AI", "AL", "AM", "AO", "AQ", "AR", "AS", "AT", "AU", "AW", "AX", "AZ", "BA", "BB", "BD",
    "BE", "BF", "BG", "BH", "BI", "BJ", "BL", "BM", "BN", "BO", "BQ", "BR", "BS", "BT", "BV", "BW", "BY", "BZ", "CA",
    "CC", "CD", "CF", "CG", "CH", "CI", "CK", "CL", "CM", "CN", "CO", "CR", "CU", "CV", "CW", "CX", "CY", "CZ", "DE",
    "DJ", "DK", "DM", "DO", "DZ", "EC", "EE", "EG", "EH", "ER", "ES", "ET", "FI", "FJ", "FK", "FM", "FO", "FR", "GA",
    "GB", "GD", "GE", "GF", "GG", "GH", "GI", "GL", "GM", "GN", "GP", "GQ", "GR", "GS", "GT", "GU", "GW", "GY", "HK",
    "HM", "HN", "HR", "HT", "HU", "ID", "IE", "IL", "IM", "IN", "IO", "IQ", "IR", "IS", "IT", "JE", "JM", "JO", "JP",
    "KE", "KG", "KH", "KI", "KM", "KN", "KP", "KR", "KW", "KY", "KZ", "LA", "LB", "LC", "LI", "LK", "LR", "LS", "LT",
    "LU", "LV", "LY", "MA", "MC", "MD", "ME", "MF", "MG", "MH", "MK", "ML", "MM", "MN", "MO", "MP", "MQ", "MR", "MS",
    "MT", "MU", "MV", "MW", "MX", "MY", "MZ", "NA", "NC", "NE", "NF", "NG", "NI", "NL", "NO", "NP", "NR", "NU", "NZ",
    "OM", "PA", "PE", "PF", "PG", "PH", "PK", "PL", "PM", "PN", "PR", "PS", "PT", "PW", "PY", "QA", "RE", "RO", "RS",
    "RU", "RW", "SA", "SB", "SC", "SD", "SE", "SG", "SH", "SI", "SJ", "SK", "SL", "SM", "SN", "SO", "SR", "SS", "ST",
    "SV", "SX", "SY", "SZ", "TC", "TD", "TF", "TG", "TH", "TJ", "TK", "TL", "TM", "TN", "TO", "TR", "TT", "TV", "TW",
    "TZ", "UA", "UG", "UM", "US", "UY", "UZ", "VA", "VC", "VE", "VG", "VI", "VN", "VU", "WF", "WS", "YE", "YT", "ZA",
    "ZM", "ZW",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_covered_by_a_wider_one_is_found() {
        let mut c = Coverage::new(["10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "DE"]);
        assert_eq!(c.covering("10.1.0.0/16").as_deref(), Some("10.0.0.0/8"));
        assert_eq!(c.covering("10.200.3.4").as_deref(), Some("10.0.0.0/8"));
        assert_eq!(c.covering("2001:db8:1::5").as_deref(), Some("2001:db8::/32"));
        assert_eq!(c.covering("10.0.0.0/8"), None, "an entry does not cover itself");
        assert_eq!(c.covering("192.0.2.7"), None);
        assert_eq!(c.covering("11.0.0.0/8"), None);
        c.insert("0.0.0.0/0");
        assert_eq!(c.covering("10.0.0.0/8").as_deref(), Some("0.0.0.0/0"), "the widest first");
    }

    #[test]
    fn ip_entries_are_normalised() {
        assert_eq!(normalize_entry("IP", " 192.0.2.7 ").unwrap(), "192.0.2.7");
        assert_eq!(normalize_entry("IP", "10.0.0.0/8").unwrap(), "10.0.0.0/8");
        assert_eq!(normalize_entry("IP", "192.0.2.7/32").unwrap(), "192.0.2.7");
        assert_eq!(normalize_entry("IP", "2001:DB8:0:0::1").unwrap(), "2001:db8::1");
        assert_eq!(normalize_entry("IP", "2001:DB8::/32").unwrap(), "2001:db8::/32");
        // Host bits set: refused, with the network it would mean.
        assert_eq!(
            normalize_entry("IP", "1.2.3.4/8"),
            Err("\"1.2.3.4/8\" has host bits set: did you mean 1.0.0.0/8?".to_string())
        );
        assert_eq!(network_of("1.2.3.4/8").as_deref(), Some("1.0.0.0/8"));
        assert_eq!(network_of(" 2001:db8::1/32 ").as_deref(), Some("2001:db8::/32"));
        assert_eq!(network_of("1.0.0.0/8"), None);
        assert_eq!(network_of("1.2.3.4"), None);
        for bad in ["", "300.1.1.1", "10.0.0.0/33", "example.com", "1.2.3", "::/129"] {
            assert!(normalize_entry("IP", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn geo_entries_are_real_country_codes() {
        assert_eq!(normalize_entry("GEO", "de").unwrap(), "DE");
        assert_eq!(normalize_entry("GEO", "GB").unwrap(), "GB");
        for bad in ["UK", "XX", "DEU", "D", "EU"] {
            assert!(normalize_entry("GEO", bad).is_err(), "{bad}");
        }
        let mut sorted = COUNTRY_CODES.to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 249);
    }
}
