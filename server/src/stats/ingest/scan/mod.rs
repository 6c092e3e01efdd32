//! Reading lines of the plain shape every shipper writes without serde: [`access`] logs and [`security`]
//! events. A line of any other shape is left to serde, which decides, and words the reason, for every line
//! these do not take.

mod access;
mod security;

pub(super) use access::scan_access;
pub(super) use security::scan_security;

/// Where the first quote, backslash or control character of `s` is: the end of a string without escapes, or
/// of its plain start. Eight bytes at a time (the lowest flagged byte of each test is exact).
fn plain_len(s: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGH;
    let mut words = s.chunks_exact(8);
    let mut at = 0;
    for word in words.by_ref() {
        let w = u64::from_le_bytes(word.try_into().ok()?);
        let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
        let found = zero(w ^ (ONES * u64::from(b'"'))) | zero(w ^ (ONES * u64::from(b'\\'))) | below_space;
        if found != 0 {
            return Some(at + found.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    words.remainder().iter().position(|c| matches!(c, b'"' | b'\\' | 0..=0x1f)).map(|p| at + p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_len_finds_the_first_quote_backslash_or_control_character() {
        let want = |s: &[u8]| s.iter().position(|c| matches!(c, b'"' | b'\\' | 0..=0x1f));
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        for len in 0..40 {
            for _ in 0..500 {
                let s: Vec<u8> = (0..len)
                    .map(|_| {
                        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        [b'a', b'"', b'\\', 0x1f, 0x20, 0x21, 0x7f, 0x80, 0xff, 0x00, b'!', b'#', b']', b'[']
                            [(rng >> 59) as usize % 14]
                    })
                    .collect();
                assert_eq!(plain_len(&s), want(&s), "{s:?}");
            }
        }
    }
}
