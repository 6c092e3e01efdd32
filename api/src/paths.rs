//! Addresses of API resources, so the server's `uri` fields and the console's requests agree.

/// The version segment; the only one that exists.
pub const VERSION: &str = "v1";

/// `/{customer}/v1`: the base of every API path of one customer.
pub fn base(customer: &str) -> String {
    format!("/{customer}/{VERSION}")
}

/// Header carrying a one-time password when creating a session for a user with two-factor enabled.
pub const OTP_HEADER: &str = "X-OTP-Token";

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "authtoken";

/// True when `name` can name a customer: 1–63 of `a-z`, `0-9` and `-`, starting with a letter or digit,
/// and not a word the console or server uses at the top level of its paths.
pub fn is_valid_customer_name(name: &str) -> bool {
    const RESERVED: &[&str] = &["login", "healthz", "openapi", "assets", "static", "api", "reset-password"];
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_alphanumeric()
        && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && !RESERVED.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn customer_names_follow_the_documented_alphabet() {
        assert!(is_valid_customer_name("demo"));
        assert!(is_valid_customer_name("acme-2"));
        assert!(!is_valid_customer_name(""));
        assert!(!is_valid_customer_name("-acme"));
        assert!(!is_valid_customer_name("Acme"));
        assert!(!is_valid_customer_name("a.b"));
        assert!(!is_valid_customer_name("login"));
        assert!(!is_valid_customer_name(&"a".repeat(64)));
    }
}
