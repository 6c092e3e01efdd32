//! API tokens: credentials for automation (a deploy's purge, a list synced from a feed, a statistics report),
//! each of one user, limited to scopes, optionally to an expiry and to client address ranges. What a token looks
//! like on the wire and in a leaked file (so secret scanners can find it), and its resource's bodies.

use serde::{Deserialize, Deserializer, Serialize};

use crate::{Link, paging::paged};

/// What every token starts with, so that a token found in a file, a log or a commit is known for what it is.
pub const TOKEN_PREFIX: &str = "edge_";
/// Random characters after the prefix (base62: about 238 bits).
pub const TOKEN_RANDOM_CHARS: usize = 40;
/// The checksum after them: CRC-32 of the prefix and the random part, in base62, 6 characters, so a scanner
/// can tell a token from a string that only looks like one without asking the server.
pub const TOKEN_CHECKSUM_CHARS: usize = 6;
/// A token's length: `edge_` and 46 characters of `0-9A-Za-z`.
pub const TOKEN_LEN: usize = TOKEN_PREFIX.len() + TOKEN_RANDOM_CHARS + TOKEN_CHECKSUM_CHARS;
/// The characters of a token after its prefix.
pub const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// What a token's listing shows of its secret: the prefix and the first 4 random characters (`edge_AbCd`).
pub const TOKEN_HINT_LEN: usize = TOKEN_PREFIX.len() + 4;

/// Tokens one user may hold (expired ones included, until deleted).
pub const MAX_TOKENS_PER_USER: u64 = 100;
/// Client address ranges of one token.
pub const MAX_ALLOWED_CIDRS: usize = 100;
/// The latest expiry a token may have, in days from its creation or change.
pub const MAX_TOKEN_DAYS: i64 = 3650;

/// CRC-32 (IEEE 802.3, as zlib's), bit by bit: a token's checksum is computed once per token.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// The checksum of a token's prefix and random part, in base62, most significant digit first.
pub fn checksum(prefix_and_random: &str) -> String {
    let mut n = crc32(prefix_and_random.as_bytes());
    let mut digits = [b'0'; TOKEN_CHECKSUM_CHARS];
    for d in digits.iter_mut().rev() {
        *d = BASE62[(n % 62) as usize];
        n /= 62;
    }
    String::from_utf8_lossy(&digits).into_owned()
}

/// A whole token from its random part (40 base62 characters): the prefix, the random part and the checksum.
pub fn token_from_random(random: &str) -> String {
    let body = format!("{TOKEN_PREFIX}{random}");
    let sum = checksum(&body);
    format!("{body}{sum}")
}

/// Whether `text` is shaped like a token of this server — the prefix, 46 base62 characters, a checksum that
/// matches — which says nothing of whether it is valid.
pub fn is_well_formed(text: &str) -> bool {
    let Some(rest) = text.strip_prefix(TOKEN_PREFIX) else { return false };
    if rest.len() != TOKEN_RANDOM_CHARS + TOKEN_CHECKSUM_CHARS || !rest.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return false;
    }
    let (body, sum) = text.split_at(TOKEN_PREFIX.len() + TOKEN_RANDOM_CHARS);
    checksum(body) == sum
}

/// An API token as listed: never its secret, except in the answers that make one (`secret`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApiToken {
    /// 16 hex digits.
    pub id: String,
    pub name: String,
    /// The user the token acts as; it can never do more than that user's role allows.
    pub user: Link,
    pub username: String,
    /// The scopes, in the order of the scope list (`stats:read`, `purge`, …).
    pub scopes: Vec<String>,
    /// When it stops working (ISO 8601 with milliseconds and `Z`); null: never.
    #[serde(default)]
    pub expires: Option<String>,
    /// True once `expires` has passed.
    #[serde(default)]
    pub expired: bool,
    /// Client address ranges it works from (CIDR or single addresses); empty: from anywhere.
    #[serde(default)]
    pub allowed_cidrs: Vec<String>,
    pub created: String,
    /// When it was last used, to the minute (the server records a use at most once a minute); null: never.
    #[serde(default)]
    pub last_used_at: Option<String>,
    /// The client address of that use.
    #[serde(default)]
    pub last_used_from: Option<String>,
    /// The start of the secret (`edge_AbCd`), to tell tokens apart and to find which one leaked.
    pub hint: String,
    pub uri: String,
    /// The secret (`Authorization: Bearer …`): only in the answers of `POST /tokens` and
    /// `POST /tokens/{token_id}/roll`, and never again. The server keeps only its SHA-256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

paged!(
    /// A page of API tokens, newest first.
    TokenPage,
    ApiToken
);

/// `null` read as `Some(None)`, so an absent field (`None`) and an explicit null differ.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// Body of `POST /tokens` (name and scopes required) and `PUT /tokens/{token_id}` (fields present change).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TokenInput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    /// ISO 8601 UTC (`2027-01-31T00:00:00Z`, milliseconds allowed); null or absent at creation: never.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub expires: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_cidrs: Option<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_carries_its_prefix_and_a_checksum_that_scanners_can_verify() {
        let token = token_from_random(&"A".repeat(TOKEN_RANDOM_CHARS));
        assert_eq!(token.len(), TOKEN_LEN);
        assert!(token.starts_with("edge_AAAA"));
        assert!(is_well_formed(&token));
        // The checksum is zlib's CRC-32 of the rest: the check value of the standard test string.
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        let mut typo = token.clone().into_bytes();
        typo[10] = b'B';
        assert!(!is_well_formed(&String::from_utf8(typo).unwrap()));
        assert!(!is_well_formed(&token[1..]));
        assert!(!is_well_formed(&format!("{token}x")));
        assert!(!is_well_formed(&token.replace('A', "-")));
        assert!(!is_well_formed("edge_é"));
    }

    #[test]
    fn an_update_tells_an_absent_expiry_from_a_null_one() {
        let absent: TokenInput = serde_json::from_str(r#"{"name": "x"}"#).unwrap();
        assert_eq!(absent.expires, None);
        let never: TokenInput = serde_json::from_str(r#"{"expires": null}"#).unwrap();
        assert_eq!(never.expires, Some(None));
        let at: TokenInput = serde_json::from_str(r#"{"expires": "2027-01-01T00:00:00Z"}"#).unwrap();
        assert_eq!(at.expires, Some(Some("2027-01-01T00:00:00Z".into())));
        assert!(serde_json::from_str::<TokenInput>(r#"{"secret": "x"}"#).is_err());
    }
}
