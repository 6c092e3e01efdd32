//! The lines given to add to a list, checked as the server will: a value per line (a CSV's first column),
//! with the fix offered for a range with host bits set and the wider entries that already cover a value.

use edge_api::{Coverage, network_of, normalize_entry};

use crate::components::bulk::numbered_lines;

/// One line of pasted or uploaded text, checked as the server will.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedLine {
    /// 1-based line number.
    pub line: usize,
    pub text: String,
    pub result: Result<String, String>,
    /// For a range with host bits set: the network it would mean, offered as a one-click fix (never applied
    /// without the user).
    pub fix: Option<String>,
    /// For a valid entry: a wider entry that already holds it — of the list, or another line.
    pub covered_by: Option<Covered>,
}

/// What covers an entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Covered {
    /// An entry of the list.
    List(String),
    /// Another line of the text (its value and line number).
    Line(String, usize),
}

impl Covered {
    pub fn describe(&self) -> String {
        match self {
            Covered::List(e) => format!("already covered by {e}, in the list"),
            Covered::Line(e, line) => format!("covered by {e} on line {line}"),
        }
    }
}

/// Checks every non-empty, non-comment line: the first CSV field (`,`, `;` or tab separated, quotes removed).
pub fn check_lines(list_type: &str, text: &str) -> Vec<CheckedLine> {
    numbered_lines(text)
        .filter_map(|(line, raw)| {
            let field = first_field(raw);
            if field.is_empty() || field.starts_with('#') {
                return None;
            }
            let result = normalize_entry(list_type, field);
            let fix = if list_type == "IP" && result.is_err() { network_of(field) } else { None };
            Some(CheckedLine { line, text: field.to_string(), result, fix, covered_by: None })
        })
        .collect()
}

fn first_field(raw: &str) -> &str {
    raw.split([',', ';', '\t']).next().unwrap_or("").trim().trim_matches('"').trim()
}

/// Points out the valid entries of `lines` that a wider entry already holds: one of `list` (the list's
/// entries), else another line.
pub fn mark_covered(lines: &mut [CheckedLine], list: &[String]) {
    let in_list = Coverage::new(list.iter().map(String::as_str));
    let mut in_text = Coverage::default();
    let mut first_line = std::collections::HashMap::new();
    for l in lines.iter() {
        if let Ok(v) = &l.result {
            in_text.insert(v);
            first_line.entry(v.clone()).or_insert(l.line);
        }
    }
    for l in lines.iter_mut() {
        let Ok(v) = &l.result else { continue };
        l.covered_by = in_list.covering(v).map(Covered::List).or_else(|| {
            in_text.covering(v).map(|by| {
                let line = first_line.get(&by).copied().unwrap_or(0);
                Covered::Line(by, line)
            })
        });
    }
}

/// `text` with the entry of line `line` (1-based) replaced by `with`, the rest of the line (a CSV's other
/// columns) as it was.
pub fn replace_entry(text: &str, line: usize, with: &str) -> String {
    text.split('\n')
        .enumerate()
        .map(|(i, raw)| {
            let field = first_field(raw);
            if i + 1 == line && !field.is_empty() { raw.replacen(field, with, 1) } else { raw.to_string() }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The distinct valid values of checked lines, in order.
pub fn valid_values(lines: &[CheckedLine]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    lines.iter().filter_map(|l| l.result.as_ref().ok()).filter(|v| seen.insert((*v).clone())).cloned().collect()
}
