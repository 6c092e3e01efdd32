//! How much text each input of the API may carry: checked before any work or storage, listed in docs/api.md and
//! in the OpenAPI schemas (`maxLength`), shared by the server, the console and the command line.

use std::borrow::Cow;

/// The username of HTTP Basic credentials, in bytes (a stored username has at most [`MAX_USERNAME_CHARS`]
/// characters and this many bytes).
pub const MAX_USERNAME_BYTES: usize = 256;
/// A stored username, in characters.
pub const MAX_USERNAME_CHARS: usize = 128;
/// A password, in bytes: at login, and whenever one is set.
pub const MAX_PASSWORD_BYTES: usize = 1024;
/// Names, in characters: a user's full name, a network list, an origin, a WAF or traffic-shaping rule, the
/// account's display name.
pub const MAX_NAME_CHARS: usize = 200;
/// A network list's description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 2000;
/// The comment of a configuration version, in characters.
pub const MAX_COMMENT_CHARS: usize = 1000;
/// An identifier a client chooses (a configuration node's id, a network list id in a rule), in characters.
pub const MAX_ID_CHARS: usize = 128;
/// A purge URI pattern or a cache rule's path pattern, in characters.
pub const MAX_URI_CHARS: usize = 2048;
/// A phone number, in characters.
pub const MAX_PHONE_CHARS: usize = 32;
/// The values of one traffic-shaping rule, and the query parameters of one cache key.
pub const MAX_VALUES_PER_RULE: usize = 1000;
/// One query parameter of any operation (statistics filters and sortby, the audit log's filters, searches),
/// in bytes.
pub const MAX_QUERY_VALUE_BYTES: usize = 2048;
/// One request header's value, in bytes.
pub const MAX_HEADER_VALUE_BYTES: usize = 8192;
/// The request target (path and query), in bytes.
pub const MAX_URI_BYTES: usize = 16384;
/// Text of an audit record that a request supplied (a username as typed, a name, a URI): stored up to this
/// many bytes, then cut and marked (see [`cut`]).
pub const MAX_AUDIT_TEXT_BYTES: usize = 256;
/// One detail of an error body, in bytes (a detail may quote what was sent).
pub const MAX_DETAIL_BYTES: usize = 1000;

/// Usernames no user may have: `system` names the server and its operator in the audit log.
pub const RESERVED_USERNAMES: [&str; 1] = ["system"];

/// Whether `text` has more than `max` characters.
pub fn over_chars(text: &str, max: usize) -> bool {
    // Counting stops early: a 10 MB string costs no more than `max` steps.
    text.chars().nth(max).is_some()
}

/// `text` cut to at most `max` bytes at a character boundary, ending with `…` when it was cut (the mark is
/// within the bound).
pub fn cut(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    const MARK: &str = "…";
    let mut end = max.saturating_sub(MARK.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}{MARK}", &text[..end]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_at_a_character_boundary_with_a_mark_within_the_bound() {
        assert_eq!(cut("short", 10), "short");
        assert_eq!(cut("0123456789", 10), "0123456789");
        assert_eq!(cut("0123456789a", 10), "0123456…");
        assert_eq!(cut("0123456789a", 10).len(), 10);
        // "é" is two bytes: the cut never splits it.
        let cut_e = cut("éééééé", 8);
        assert!(cut_e.len() <= 8 && cut_e.ends_with('…'), "{cut_e}");
        assert_eq!(cut_e, "éé…");
    }

    #[test]
    fn characters_are_counted_up_to_the_bound_only() {
        assert!(!over_chars("ab", 2));
        assert!(over_chars("abc", 2));
        assert!(!over_chars("éé", 2));
    }
}
