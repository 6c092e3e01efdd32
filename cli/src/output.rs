//! How results are shown: for a person on a terminal (aligned text, progress bars on stderr), or as JSON with
//! `--json` for scripts; and tables as text or CSV.

use std::io::{IsTerminal, Write};

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

use crate::client::{Failure, Result};

#[derive(Debug, Clone, Copy)]
pub struct Out {
    /// `--json`: one JSON document (or one per line, for streams) on stdout.
    pub json: bool,
    /// stderr is a terminal: progress is drawn there.
    pub tty: bool,
}

impl Out {
    pub fn new(json: bool) -> Out {
        Out { json, tty: std::io::stderr().is_terminal() }
    }

    /// A progress bar of `len` steps on stderr, drawn only on a terminal (and never with `--json`).
    pub fn bar(&self, len: u64, what: &str) -> ProgressBar {
        if !self.tty || self.json {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::new(len);
        let style = ProgressStyle::with_template("{msg:>10} [{bar:30}] {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        bar.set_message(what.to_string());
        bar
    }

    /// A line for a person: stderr with `--json` (stdout holds the document), stdout otherwise.
    pub fn say(&self, line: impl AsRef<str>) {
        if self.json {
            eprintln!("{}", line.as_ref());
        } else {
            println!("{}", line.as_ref());
        }
    }

    /// Prints `value` as pretty JSON on stdout.
    pub fn json(&self, value: &Value) -> Result<()> {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, value)?;
        writeln!(out)?;
        Ok(())
    }

    /// The answer of a command: `value` as JSON with `--json`, otherwise `human` lines.
    pub fn result(&self, value: &Value, human: impl FnOnce() -> Vec<String>) -> Result<()> {
        if self.json {
            return self.json(value);
        }
        for line in human() {
            println!("{line}");
        }
        Ok(())
    }
}

/// A cell as text: strings as they are, everything else as JSON.
pub fn cell(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Rows as aligned columns under `header` (each column as wide as its widest cell, at most 60).
pub fn table(header: &[String], rows: &[Vec<String>]) -> Vec<String> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, c) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count()).min(60);
            }
        }
    }
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        padded.join("  ").trim_end().to_string()
    };
    std::iter::once(line(header)).chain(rows.iter().map(|r| line(r))).collect()
}

/// One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break.
pub fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_string() }
}

pub fn csv_line(cells: &[String]) -> String {
    cells.iter().map(|c| csv_field(c)).collect::<Vec<_>>().join(",")
}

/// Lines of a file (or stdin for `-`): trimmed, without blank ones and `#` comments, each with its line number.
pub fn read_lines(path: &str) -> Result<Vec<(usize, String)>> {
    let text = if path == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
        s
    } else {
        std::fs::read_to_string(path).map_err(|e| Failure::new(crate::client::Exit::Failure, format!("{path}: {e}")))?
    };
    Ok(text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim().to_string()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_only_what_needs_it() {
        assert_eq!(csv_line(&["a".into(), "b,c".into(), "say \"hi\"".into()]), "a,\"b,c\",\"say \"\"hi\"\"\"");
    }

    #[test]
    fn tables_align_their_columns() {
        let t =
            table(&["name".into(), "n".into()], &[vec!["a".into(), "10".into()], vec!["long name".into(), "2".into()]]);
        assert_eq!(t, ["name       n", "a          10", "long name  2"]);
    }
}
