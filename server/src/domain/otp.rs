//! RFC 6238 time-based one-time passwords: SHA-1, 6 digits, 30-second steps, ±1 step of clock skew.

use rand::RngCore;
use totp_rs::{Algorithm, TOTP};

pub const STEP_SECS: i64 = 30;
const DIGITS: usize = 6;

/// A new secret: 160 random bits, as unpadded RFC 4648 base32 (what authenticator apps take).
pub fn new_secret() -> String {
    let mut bytes = [0u8; 20];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    base32_encode(&bytes)
}

fn base32_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let mut buffer: u32 = 0;
    let mut bits = 0;
    for &b in bytes {
        buffer = (buffer << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            out.push(ALPHABET[((buffer >> (bits - 5)) & 31) as usize] as char);
            bits -= 5;
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

fn base32_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 5 / 8);
    let mut buffer: u32 = 0;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'2'..=b'7' => c - b'2' + 26,
            _ => return None,
        };
        buffer = (buffer << 5) | u32::from(v);
        bits += 5;
        if bits >= 8 {
            out.push((buffer >> (bits - 8)) as u8);
            bits -= 8;
        }
    }
    Some(out)
}

fn totp(secret: &str) -> Option<TOTP> {
    TOTP::new(Algorithm::SHA1, DIGITS, 1, STEP_SECS as u64, base32_decode(secret)?).ok()
}

/// The time step of a moment.
pub fn step_of(now_ms: i64) -> i64 {
    now_ms.div_euclid(1000 * STEP_SECS)
}

/// The code of `secret` at time step `step`.
pub fn code_at(secret: &str, step: i64) -> Option<String> {
    Some(totp(secret)?.generate((step.max(0) * STEP_SECS) as u64))
}

fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The step whose code `token` is, among the current step ±1, and later than `after` (a code is accepted at
/// most once).
pub fn verify(secret: &str, token: &str, now_ms: i64, after: i64) -> Option<i64> {
    let now = step_of(now_ms);
    (now - 1..=now + 1).filter(|s| *s > after).find(|s| code_at(secret, *s).is_some_and(|c| same(&c, token.trim())))
}

/// Pairing proof: `first` and `second` are the codes of two sequential steps, the second within ±1 step of now.
/// Returns the second's step.
pub fn verify_pair(secret: &str, first: &str, second: &str, now_ms: i64) -> Option<i64> {
    let now = step_of(now_ms);
    (now - 1..=now + 1).find(|s| {
        code_at(secret, *s).is_some_and(|c| same(&c, second.trim()))
            && code_at(secret, s - 1).is_some_and(|c| same(&c, first.trim()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_6238_sha1_test_vector() {
        // RFC 6238 appendix B: secret "12345678901234567890", T = 59 s → 94287082 (8 digits; 6 digits: 287082).
        let secret = base32_encode(b"12345678901234567890");
        assert_eq!(secret, "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ");
        assert_eq!(code_at(&secret, step_of(59_000)).as_deref(), Some("287082"));
        assert_eq!(code_at(&secret, step_of(1_111_111_109_000)).as_deref(), Some("081804"));
    }

    #[test]
    fn base32_round_trips() {
        for len in 0..25 {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            assert_eq!(base32_decode(&base32_encode(&bytes)).unwrap(), bytes);
        }
        assert_eq!(new_secret().len(), 32);
    }

    #[test]
    fn codes_are_accepted_within_one_step_and_only_once() {
        let secret = new_secret();
        let now = 1_000_000 * 30_000;
        let step = step_of(now);
        let code = code_at(&secret, step + 1).unwrap();
        assert_eq!(verify(&secret, &code, now, 0), Some(step + 1));
        assert_eq!(verify(&secret, &code, now, step + 1), None, "replay refused");
        let old = code_at(&secret, step - 2).unwrap();
        assert_eq!(verify(&secret, &old, now, 0), None, "two steps back is too old");
    }

    #[test]
    fn pairing_needs_two_sequential_codes() {
        let secret = new_secret();
        let now = 1_000_000 * 30_000 + 5_000;
        let s = step_of(now);
        let (a, b) = (code_at(&secret, s - 1).unwrap(), code_at(&secret, s).unwrap());
        assert_eq!(verify_pair(&secret, &a, &b, now), Some(s));
        assert_eq!(verify_pair(&secret, &b, &a, now), None);
        assert_eq!(verify_pair(&secret, &a, &a, now), None);
    }
}
