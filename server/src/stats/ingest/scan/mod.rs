//! Reading lines of the plain shape every shipper writes without serde: [`access`] logs and [`security`]
//! events. A line of any other shape is left to serde, which decides, and words the reason, for every line
//! these do not take.

mod access;
mod security;

pub(super) use access::scan_access;
pub(super) use security::scan_security;

/// A cursor over one line, reading the tokens of the plain shape — whitespace, strings without escapes or
/// control characters, non-negative integers written plainly, `null` — and refusing (None) anything else.
struct Lexer<'a> {
    line: &'a str,
    at: usize,
}

impl<'a> Lexer<'a> {
    #[inline(always)]
    fn new(line: &'a str) -> Self {
        Lexer { line, at: 0 }
    }

    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.line.as_bytes().get(self.at).copied()
    }

    #[inline(always)]
    fn ws(&mut self) {
        while self.peek().is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// Steps over `c` if it comes next.
    #[inline(always)]
    fn eat(&mut self, c: u8) -> bool {
        let found = self.peek() == Some(c);
        self.at += usize::from(found);
        found
    }

    /// The start of an object that is not empty (an empty one is serde's to judge).
    #[inline(always)]
    fn open(&mut self) -> Option<()> {
        self.ws();
        if !self.eat(b'{') {
            return None;
        }
        self.ws();
        (self.peek() != Some(b'}')).then_some(())
    }

    /// A string with no escape or control character, left after its closing quote.
    #[inline(always)]
    fn string(&mut self) -> Option<&'a str> {
        let b = self.line.as_bytes();
        if b.get(self.at) != Some(&b'"') {
            return None;
        }
        let start = self.at + 1;
        let len = plain_len(b.get(start..)?)?;
        if b[start + len] != b'"' {
            return None;
        }
        self.at = start + len + 1;
        self.line.get(start..start + len)
    }

    /// A member's key and its colon, left at the value.
    #[inline(always)]
    fn key(&mut self) -> Option<&'a str> {
        self.ws();
        let key = self.string()?;
        self.ws();
        if !self.eat(b':') {
            return None;
        }
        self.ws();
        Some(key)
    }

    /// A non-negative integer up to `max` written plainly (`0`, or digits not starting with 0), or `null`
    /// (`Some(None)`) where `nullable`, ending where the value may end. `1.5`, `1e3`, `-1`, `01`, `12x` and
    /// numbers out of range are serde's to judge.
    #[inline(always)]
    fn number(&mut self, max: u64, nullable: bool) -> Option<Option<u64>> {
        let b = self.line.as_bytes();
        let value = match self.peek()? {
            b'n' if nullable && b.get(self.at..self.at + 4) == Some(b"null") => {
                self.at += 4;
                None
            }
            b'0' => {
                self.at += 1;
                Some(0)
            }
            b'1'..=b'9' => {
                let digits = b[self.at..].iter().take_while(|c| c.is_ascii_digit()).count();
                let v: u64 = self.line.get(self.at..self.at + digits)?.parse().ok()?;
                if v > max {
                    return None;
                }
                self.at += digits;
                Some(v)
            }
            _ => return None,
        };
        matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r' | b',' | b'}')).then_some(value)
    }

    /// After a member: true when another follows (`,`), false when the object ends (`}`).
    #[inline(always)]
    fn more(&mut self) -> Option<bool> {
        self.ws();
        match self.peek()? {
            b',' => {
                self.at += 1;
                Some(true)
            }
            b'}' => {
                self.at += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// An object of the plain shape, read member by member: `field` names the field of each key (given the one
    /// after the last read, the likely one: shippers write the fields in one order), each field comes at most
    /// once, and `value` reads each value. The fields seen, a bit each; None for anything else (an unknown or
    /// repeated field, a value `value` does not take, anything but whitespace after the object).
    #[inline(always)]
    fn object(
        &mut self,
        field: impl Fn(usize, &str) -> Option<usize>,
        mut value: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<u32> {
        let mut seen = 0u32;
        let mut next = 0;
        self.open()?;
        loop {
            let key = self.key()?;
            let f = field(next, key)?;
            next = f + 1;
            if seen & (1 << f) != 0 {
                return None;
            }
            seen |= 1 << f;
            value(self, f)?;
            if !self.more()? {
                break;
            }
        }
        self.end().then_some(seen)
    }

    /// Whether nothing but whitespace follows.
    #[inline(always)]
    fn end(&mut self) -> bool {
        self.ws();
        self.at == self.line.len()
    }
}

/// Where the first quote, backslash or control character of `s` is: the end of a string without escapes, or
/// of its plain start. Eight bytes at a time (the lowest flagged byte of each test is exact).
#[inline(always)]
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
