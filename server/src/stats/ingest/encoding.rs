//! Compressed bodies and files: gzip or zstd, decompressed within a limit.

/// How an ingestion body (or file) is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Gzip,
    Zstd,
}

impl Encoding {
    /// From a `Content-Encoding` value.
    pub fn parse(name: &str) -> Option<Encoding> {
        match name {
            "gzip" | "x-gzip" => Some(Encoding::Gzip),
            "zstd" => Some(Encoding::Zstd),
            _ => None,
        }
    }

    /// From a file name's extension (`.gz`, `.zst`); None for anything else.
    pub fn of_path(path: &std::path::Path) -> Option<Encoding> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("gz") => Some(Encoding::Gzip),
            Some("zst" | "zstd") => Some(Encoding::Zstd),
            _ => None,
        }
    }

    /// A reader of what `input` holds, decompressed.
    pub fn reader<'a, R: std::io::BufRead + 'a>(self, input: R) -> std::io::Result<Box<dyn std::io::Read + 'a>> {
        Ok(match self {
            Encoding::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(input)),
            Encoding::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(input)?),
        })
    }

    fn name(self) -> &'static str {
        match self {
            Encoding::Gzip => "gzip",
            Encoding::Zstd => "zstd",
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// More than the limit once decompressed.
    TooLarge,
    /// Not a valid stream of the encoding (named in the message).
    Corrupt(String),
}

/// Decompresses `body`, stopping as soon as it exceeds `limit` bytes: a small body that would expand without
/// bound (a decompression bomb) costs no more than the limit.
pub fn decompress(encoding: Encoding, body: &[u8], limit: usize) -> Result<Vec<u8>, DecodeError> {
    use std::io::Read;
    let corrupt = |e: std::io::Error| DecodeError::Corrupt(format!("{} ({e})", encoding.name()));
    let reader = encoding.reader(body).map_err(corrupt)?;
    let mut out = Vec::with_capacity((body.len() * 4).min(limit) + 1);
    reader.take(limit as u64 + 1).read_to_end(&mut out).map_err(corrupt)?;
    if out.len() > limit {
        return Err(DecodeError::TooLarge);
    }
    Ok(out)
}
