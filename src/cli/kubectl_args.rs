//! Arguments in the syntax kubectl users type: a label selector (`-l`) and a duration
//! (`--timeout`), read into kube's own types so that what reaches the API server is
//! what kube would send, and a malformed one is refused before any request.

use kube::core::{Expression, Selector};
use std::collections::BTreeSet;
use std::time::Duration;

/// A kubectl label selector (`a=b,c!=d,e in (x,y),f notin (z),g,!h`) as kube's
/// [`Selector`]; the error says which requirement is malformed.
pub(crate) fn selector(text: &str) -> Result<Selector, String> {
    let mut expressions = Vec::new();
    for requirement in requirements(text)? {
        expressions.push(expression(requirement.trim()).ok_or_else(|| {
            format!("malformed label selector {text:?}: cannot read {requirement:?}")
        })?);
    }
    if expressions.is_empty() {
        return Err("empty label selector".to_string());
    }
    Ok(Selector::from_iter(expressions))
}

/// The comma-separated requirements of a selector, commas inside `( )` kept.
fn requirements(text: &str) -> Result<Vec<&str>, String> {
    let (mut depth, mut from, mut out) = (0i32, 0usize, Vec::new());
    for (at, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&text[from..at]);
                from = at + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(format!("malformed label selector {text:?}: unbalanced ( )"));
        }
    }
    if depth != 0 {
        return Err(format!("malformed label selector {text:?}: unbalanced ( )"));
    }
    out.push(&text[from..]);
    Ok(out)
}

/// One requirement as an expression, or `None` when malformed.
fn expression(text: &str) -> Option<Expression> {
    if let Some((key, values)) = set_requirement(text, " notin ") {
        return Some(Expression::NotIn(key, values));
    }
    if let Some((key, values)) = set_requirement(text, " in ") {
        return Some(Expression::In(key, values));
    }
    if let Some((key, value)) = text.split_once("!=") {
        return Some(Expression::NotEqual(key_of(key)?, value_of(value)?));
    }
    if let Some((key, value)) = text.split_once("==").or_else(|| text.split_once('=')) {
        return Some(Expression::Equal(key_of(key)?, value_of(value)?));
    }
    match text.strip_prefix('!') {
        Some(key) => Some(Expression::DoesNotExist(key_of(key)?)),
        None => Some(Expression::Exists(key_of(text)?)),
    }
}

/// `key in (a,b)` split at `operator`, the values read.
fn set_requirement(text: &str, operator: &str) -> Option<(String, BTreeSet<String>)> {
    let (key, rest) = text.split_once(operator)?;
    let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
    let values: Option<BTreeSet<String>> = inner.split(',').map(value_of).collect();
    Some((key_of(key)?, values?))
}

/// A label key: an optional DNS prefix and `/`, then a name of at most 63 characters.
fn key_of(text: &str) -> Option<String> {
    let key = text.trim();
    let name = key.rsplit_once('/').map_or(key, |(_, n)| n);
    (!name.is_empty() && name.len() <= 63 && key.len() <= 317 && key.chars().all(key_char))
        .then(|| key.to_string())
}

/// A label value: at most 63 characters of `[A-Za-z0-9._-]` (it may be empty).
fn value_of(text: &str) -> Option<String> {
    let value = text.trim();
    (value.len() <= 63
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    .then(|| value.to_string())
}

/// Whether `c` may appear in a label key.
fn key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/')
}

/// A kubectl duration (`30s`, `2m`, `1m30s`, `500ms`; `0` alone) as read by kube's
/// Go-style [`kube::core::Duration`]; a negative one is refused.
pub(crate) fn duration(text: &str) -> Result<Duration, String> {
    match text.trim() {
        "0" => return Ok(Duration::ZERO),
        "" => return Err("empty duration: write it as kubectl does, e.g. 30s or 2m".into()),
        _ => {}
    }
    let parsed: kube::core::Duration = text.trim().parse().map_err(|e| {
        format!("malformed duration {text:?} ({e}): write it as kubectl does, e.g. 30s or 2m")
    })?;
    if parsed.is_negative() {
        return Err(format!("negative duration {text:?}"));
    }
    Ok(parsed.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_selectors_read_as_kube_would_send_them() {
        let read = |t: &str| selector(t).map(|s| s.to_string());
        assert_eq!(read("app=op").as_deref(), Ok("app=op"));
        assert_eq!(read("app==op").as_deref(), Ok("app=op"));
        assert_eq!(
            read("team in (a, b),tier!=web,kopfaudit.dev/audited,!legacy").as_deref(),
            Ok("team in (a,b),tier!=web,kopfaudit.dev/audited,!legacy")
        );
        assert_eq!(read("x notin (y)").as_deref(), Ok("x notin (y)"));
    }

    #[test]
    fn a_malformed_selector_is_refused_with_what_is_wrong() {
        // An empty value is valid, as in kubectl (`app=` matches app="").
        assert_eq!(
            selector("app=").map(|s| s.to_string()).as_deref(),
            Ok("app=")
        );
        for bad in [
            "",
            "=op",
            "app=op,",
            "a b=c",
            "app=o p",
            "team in (a,b",
            "team in a,b)",
            "x in ((y))",
        ] {
            let e = selector(bad).expect_err(bad);
            assert!(e.contains("selector"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn kubectl_durations_and_zero_are_read_and_nonsense_refused() {
        assert_eq!(duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(duration("0"), Ok(Duration::ZERO));
        for bad in ["", "30", "soon", "-5s", "2 m"] {
            assert!(duration(bad).is_err(), "{bad:?}");
        }
    }
}
