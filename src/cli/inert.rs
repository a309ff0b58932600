//! Inert text: what every command prints passes through [`inert`] last, so that no
//! string from a linted file, a chart or the cluster can act on the reader's terminal
//! or CI. `kopf-audit lint` runs on pull requests from strangers, and a Deployment
//! named `"web\n::error ...::All checks passed"` would otherwise print a line that
//! GitHub Actions reads as a workflow command, and an escape sequence would retitle
//! or clear the terminal.
//!
//! The pass replaces every character that acts instead of showing (C0 controls but
//! `\n` and `\t`, DEL, C1 controls, the invisible and bidi characters of
//! [`kopf_log::is_invisible`], the line and paragraph separators, Unicode
//! noncharacters) with [`REPLACEMENT`], and breaks every CI logging command marker
//! with [`MARK`]: a line whose first non-whitespace characters are `::` (GitHub Actions
//! workflow commands; the runner trims leading whitespace first), and `##[` or `##vso[`
//! anywhere (GitHub's legacy commands and Azure Pipelines' logging commands, which
//! their runners look for anywhere in a line). It only replaces characters JSON, YAML
//! and XML escape never produce, and inserts [`MARK`] where none of them gives it a
//! meaning, so their output stays well-formed.

/// What a character that acts instead of showing becomes: visibly something was there.
pub(crate) const REPLACEMENT: char = '\u{FFFD}';

/// What breaks a CI command marker: visible, not whitespace (which the runners trim),
/// and no indicator in JSON, YAML, XML or HTML.
pub(crate) const MARK: char = '\u{B7}';

/// The SGR sequences the coloured table writes (reset, bold, red bold, yellow, cyan):
/// [`inert_styled`] keeps these and nothing else that starts with ESC.
pub(crate) const STYLES: [&str; 5] = ["\x1b[0m", "\x1b[1m", "\x1b[1;31m", "\x1b[33m", "\x1b[36m"];

/// `text` made inert: the final pass over every output and every error message.
pub(crate) fn inert(text: &str) -> String {
    pass(text, false)
}

/// Like [`inert`], but the table's own colours ([`STYLES`]) are kept: the one way an
/// ESC reaches the output.
pub(crate) fn inert_styled(text: &str) -> String {
    pass(text, true)
}

/// A single-line field (a name, a path, a note, a reason): its line breaks and tabs
/// become spaces, so that it cannot start a line of its own, then [`inert`].
pub(crate) fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if breaks_line(c) { ' ' } else { c })
        .collect();
    inert(&flat)
}

/// Whether `c` ends a line for some reader (a terminal, a CI runner, an editor).
fn breaks_line(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\t' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Whether `c` acts instead of showing, or is no character to show at all.
pub(crate) fn acts(c: char) -> bool {
    let code = u32::from(c);
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{2028}' | '\u{2029}')
        || kopf_log::is_invisible(c)
        || (0xFDD0..=0xFDEF).contains(&code)
        || code & 0xFFFE == 0xFFFE
}

/// The pass: characters replaced, then each line's markers broken.
fn pass(text: &str, keep_styles: bool) -> String {
    let chars = replace_acting(text, keep_styles);
    let mut out = String::with_capacity(chars.len() + 8);
    for (n, line) in chars.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        neutralise_line(&mut out, line);
    }
    out
}

/// `text` with every character that [`acts`] replaced (the styles kept when asked).
/// Printable ASCII, newlines and tabs are copied whole: most of what lint prints.
fn replace_acting(text: &str, keep_styles: bool) -> String {
    let inert_byte = |b: &u8| matches!(b, b' '..=b'~' | b'\n' | b'\t');
    if text.as_bytes().iter().all(inert_byte) {
        return text.to_string();
    }
    let mut chars = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if keep_styles
            && c == '\x1b'
            && let Some(style) = STYLES.iter().find(|s| rest.starts_with(**s))
        {
            chars.push_str(style);
            rest = &rest[style.len()..];
            continue;
        }
        chars.push(if acts(c) { REPLACEMENT } else { c });
        rest = &rest[c.len_utf8()..];
    }
    chars
}

/// Appends `line` with [`MARK`] before a leading `::` and inside every `##[`/`##vso[`.
fn neutralise_line(out: &mut String, line: &str) {
    let body = line.trim_start();
    let indent = &line[..line.len() - body.len()];
    out.push_str(indent);
    if body.starts_with("::") || starts_with_style(body, "::") {
        out.push(MARK);
    }
    let mut rest = body;
    while let Some(at) = rest.find("##") {
        let after = &rest[at + 2..];
        out.push_str(&rest[..at + 1]);
        if opens_command(after) {
            out.push(MARK);
        }
        rest = &rest[at + 1..];
    }
    out.push_str(rest);
}

/// Whether what follows a `##` makes it a logging command: `[` or `vso[` (any case).
fn opens_command(after: &str) -> bool {
    after.starts_with('[')
        || after
            .get(..4)
            .is_some_and(|v| v.eq_ignore_ascii_case("vso["))
}

/// Whether `body` starts with colours and then `marker`: the runner sees the line
/// without them only if something strips them, but a coloured `::` is no safer.
fn starts_with_style(body: &str, marker: &str) -> bool {
    let mut rest = body;
    while let Some(style) = STYLES.iter().find(|s| rest.starts_with(**s)) {
        rest = rest[style.len()..].trim_start();
    }
    rest.len() != body.len() && rest.starts_with(marker)
}

/// The tests, and the hostile results the other formats' tests share.
#[cfg(test)]
pub(crate) mod tests;
