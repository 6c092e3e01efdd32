//! The names of the statistics dimensions and metrics as types: each name is written once, here, and the
//! vocabulary's tables, the validator and the server name them through [`Dimension`] and [`Metric`].

/// Declares a set of names once: the enum, each variant's name on the wire, and the list of all of them.
macro_rules! names {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($variant),*
        }

        impl $name {
            pub const ALL: &[$name] = &[$($name::$variant),*];

            /// The name in queries and answers.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),*
                }
            }

            pub fn parse(s: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|n| n.as_str() == s)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

names!(
    /// A field statistics rows are grouped, filtered or sorted by: of the access logs (delivery statistics and
    /// the top-URL report) or of the security events.
    Dimension {
        BrowserName = "browser_name",
        CacheStatus = "cache_status",
        ContentType = "content_type",
        Country = "country",
        CountryCode = "country_code",
        Customer = "customer",
        DeviceOs = "device_os",
        DeviceType = "device_type",
        Domain = "domain",
        GnaCacheStatus = "gna_cache_status",
        HttpStatusCode = "http_status_code",
        Property = "property",
        RequestType = "request_type",
        Scheme = "scheme",
        RequestUrl = "request_url",
        EventTimestampMs = "event_timestamp_ms",
        EventSeverity = "event_severity",
        EventType = "event_type",
        EventAction = "event_action",
        ClientConnectionRemoteIp = "client_connection_remote_ip",
        ClientIp = "client_ip",
        ClientBrowser = "client_browser",
        ClientCountryCode = "client_country_code",
        ClientAsn = "client_asn",
        RuleId = "rule_id",
        RequestPath = "request_path",
        WafAction = "waf_action",
        Source = "source",
    }
);

names!(
    /// A measure summed (or, for the latencies, averaged) over the rows of a statistics answer.
    Metric {
        FirstMileBandwidthBytes = "first_mile_bandwidth_bytes",
        Hits = "hits",
        LastMileBandwidthBytes = "last_mile_bandwidth_bytes",
        MiddleMileBandwidthBytes = "middle_mile_bandwidth_bytes",
        OriginalBandwidthBytes = "original_bandwidth_bytes",
        RequestTimeMs = "request_time_ms",
        TimeToFirstByteMs = "time_to_first_byte_ms",
        TimeToLastByteMs = "time_to_last_byte_ms",
    }
);
