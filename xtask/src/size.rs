//! What the console costs on the wire: brotli and gzip files beside each file of the build (served by the
//! server when the browser accepts them), and `cargo xtask size`, the raw, gzip and brotli size of every file,
//! of the first view (what the login page loads) and of the whole console.

use std::{
    io::Write,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result, bail};

/// Most a first view (index.html and everything it loads) may weigh with brotli, in bytes.
pub const FIRST_VIEW_BUDGET: u64 = 350 * 1024;
/// Most the whole console may weigh with brotli, in bytes: a guard against growth by accident until issue 22
/// replaces it with budgets users feel (login form and first chart times, Lighthouse), loading views lazily.
/// 800 KB since the charts are drawn with plotters and times computed with chrono (issue 22: 784 KB).
pub const WHOLE_BUDGET: u64 = 800 * 1024;

/// The kinds of file worth compressing (the rest, e.g. images, are compressed already).
const COMPRESSIBLE: [&str; 7] = ["html", "js", "css", "wasm", "svg", "json", "txt"];

/// The files of the build, without the compressed copies, sorted by name.
pub fn files(dist: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut dirs = vec![dist.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if !matches!(extension(&path), "br" | "gz") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn extension(path: &Path) -> &str {
    path.extension().and_then(|e| e.to_str()).unwrap_or("")
}

pub fn brotli(data: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let params = brotli::enc::BrotliEncoderParams { quality: 11, lgwin: 24, ..Default::default() };
    brotli::BrotliCompress(&mut &data[..], &mut out, &params)?;
    Ok(out)
}

pub fn gzip(data: &[u8]) -> Result<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(data)?;
    Ok(encoder.finish()?)
}

/// Writes `FILE.br` and `FILE.gz` beside every compressible file of `dist` (removing stale ones first), so the
/// server sends them to browsers that accept them.
pub fn precompress(dist: &Path) -> Result<()> {
    for path in files(dist)? {
        for suffix in ["br", "gz"] {
            let copy = with_suffix(&path, suffix);
            if copy.exists() {
                std::fs::remove_file(&copy)?;
            }
        }
        if !COMPRESSIBLE.contains(&extension(&path)) {
            continue;
        }
        let data = std::fs::read(&path)?;
        std::fs::write(with_suffix(&path, "br"), brotli(&data)?)?;
        std::fs::write(with_suffix(&path, "gz"), gzip(&data)?)?;
    }
    Ok(())
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// One file's sizes.
pub struct Sizes {
    pub name: String,
    pub raw: u64,
    pub gzip: u64,
    pub brotli: u64,
    /// Loaded by the first view (index.html names it).
    pub first_view: bool,
}

/// The document of the first view: the sign-in app's when the build has one, else the console's.
pub fn first_view_document(dist: &Path) -> PathBuf {
    let signin = dist.join("signin/index.html");
    if signin.is_file() { signin } else { dist.join("index.html") }
}

/// The sizes of every file of `dist`. The first view is the sign-in app's index.html and every file it names
/// (the loader script in it names the JS and the wasm, its links the CSS).
pub fn measure(dist: &Path) -> Result<Vec<Sizes>> {
    let document = first_view_document(dist);
    let index = std::fs::read_to_string(&document).context("reading the first view's index.html")?;
    let mut out = Vec::new();
    for path in files(dist)? {
        let data = std::fs::read(&path)?;
        let name = path.strip_prefix(dist).unwrap_or(&path).to_string_lossy().into_owned();
        let compressible = COMPRESSIBLE.contains(&extension(&path));
        let (gzip, brotli) = if compressible {
            (gzip(&data)?.len() as u64, brotli(&data)?.len() as u64)
        } else {
            (data.len() as u64, data.len() as u64)
        };
        // Named whole, in quotes: `/main.css` must not match inside `/signin/main.css`.
        let first_view = path == document || ['"', '\''].iter().any(|q| index.contains(&format!("{q}/{name}{q}")));
        out.push(Sizes { name, raw: data.len() as u64, gzip, brotli, first_view });
    }
    Ok(out)
}

fn kb(bytes: u64) -> String {
    format!("{:.1} KB", bytes as f64 / 1024.0)
}

/// Prints the table of `cargo xtask size` and fails when a budget is exceeded.
pub fn report(dist: &Path) -> Result<()> {
    let sizes = measure(dist)?;
    println!("| file | raw | gzip | brotli | first view |");
    println!("|---|---|---|---|---|");
    for s in &sizes {
        println!(
            "| {} | {} | {} | {} | {} |",
            s.name,
            kb(s.raw),
            kb(s.gzip),
            kb(s.brotli),
            if s.first_view { "yes" } else { "" }
        );
    }
    let total = |first_only: bool| {
        sizes
            .iter()
            .filter(|s| s.first_view || !first_only)
            .fold((0, 0, 0), |(r, g, b), s| (r + s.raw, g + s.gzip, b + s.brotli))
    };
    let (first, whole) = (total(true), total(false));
    println!("| **first view (login)** | {} | {} | **{}** | |", kb(first.0), kb(first.1), kb(first.2));
    println!("| **whole console** | {} | {} | **{}** | |", kb(whole.0), kb(whole.1), kb(whole.2));
    println!(
        "size: first view {} brotli (budget {}), whole console {} brotli (budget {})",
        kb(first.2),
        kb(FIRST_VIEW_BUDGET),
        kb(whole.2),
        kb(WHOLE_BUDGET)
    );
    if first.2 > FIRST_VIEW_BUDGET || whole.2 > WHOLE_BUDGET {
        bail!("the console is over its size budget");
    }
    Ok(())
}
