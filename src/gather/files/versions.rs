//! The kopf versions an operator's files allow: requirements files, `setup.cfg`,
//! `pyproject.toml` (PEP 621 and Poetry), `Pipfile`, lock files (poetry, uv, Pipfile,
//! pip-compile output) and `pip install` lines in a Dockerfile. A requirement is a
//! range (`^1.38.0` allows every 1.x from 1.38); a lock file gives the one version
//! installed. The rules of posting depend on it (kopf 1.41 added
//! `settings.posting.loggers`).

use crate::model::source::Location;
use crate::model::source::kopf_version::{End, KopfPin, KopfRange, KopfVersion, parse_version};

/// The kopf pin in a file, by its name; `None` when it names no kopf version.
pub(crate) fn pin(path: &str, text: &str) -> Option<KopfPin> {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name {
        "poetry.lock" | "uv.lock" => locked(path, text),
        "Pipfile.lock" => pipfile_lock(path, text),
        _ => requirement(path, text),
    }
}

/// A requirement on kopf in any line: `kopf==1.37.2`, `kopf[full-auth]>=1.38,<2`,
/// `"kopf~=1.41"` (PEP 621), `kopf = "^1.37"` and `kopf = {version = "~1.38"}`
/// (Poetry, Pipfile), `pip install kopf==1.45.2`. pip-compile output
/// (`kopf==1.38.0` with `# via` after it) is a lock.
fn requirement(path: &str, text: &str) -> Option<KopfPin> {
    let lines: Vec<&str> = text.lines().collect();
    let compiled = text.contains("pip-compile");
    for (n, raw) in lines.iter().enumerate() {
        let line = raw.split('#').next().unwrap_or("");
        let Some((written, range)) = kopf_specifier(line) else {
            continue;
        };
        let via = raw.contains("# via")
            || lines
                .get(n + 1)
                .is_some_and(|next| next.trim_start().starts_with("# via"));
        return Some(KopfPin {
            locked: range.exact().is_some() && (compiled || via),
            range,
            written,
            location: Location::new(path, line_number(n)),
        });
    }
    None
}

/// The first requirement on kopf in a line: the specifier as written and its range.
fn kopf_specifier(line: &str) -> Option<(String, KopfRange)> {
    let mut rest = line;
    while let Some(at) = rest.find("kopf") {
        let before = rest[..at].chars().next_back();
        let after = &rest[at + 4..];
        rest = after;
        let is_name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
        if before.is_some_and(is_name_char) || after.starts_with(is_name_char) {
            continue;
        }
        let after = match after.strip_prefix('[') {
            Some(extras) => extras.split_once(']').map_or("", |(_, r)| r),
            None => after,
        };
        let written = match toml_value(after) {
            Some(value) => value.trim(),
            None => pep508(after),
        };
        if let Some(range) = specifiers(written) {
            return Some((written.to_string(), range));
        }
    }
    None
}

/// The version string of a TOML entry (`= "^1.38"`, `= {version = ">=1.38"}`): what
/// follows `kopf` in Poetry's and Pipfile's tables; `None` when it is no TOML entry.
fn toml_value(after: &str) -> Option<&str> {
    let value = after.trim_start().strip_prefix('=')?;
    if value.starts_with('=') {
        return None;
    }
    let value = value.trim_start();
    let quoted = match value.strip_prefix('{') {
        Some(table) => table
            .split_once("version")?
            .1
            .trim_start()
            .strip_prefix('=')?,
        None => value,
    };
    let quoted = quoted.trim_start();
    let quote = quoted.chars().next().filter(|c| matches!(c, '"' | '\''))?;
    quoted[1..].split(quote).next()
}

/// The specifiers of a PEP 508 requirement after the name: up to a marker (`;`), a
/// quote, a parenthesis's end, or a word that is not a specifier (the next package of
/// a `pip install` line).
fn pep508(after: &str) -> &str {
    let after = after.trim_start();
    let after = after.strip_prefix('(').unwrap_or(after);
    let mut end = 0;
    let mut in_version = false;
    for (at, c) in after.char_indices() {
        match c {
            ';' | '"' | '\'' | ')' => break,
            ' ' | '\t' if in_version => {
                let next = after[at..].trim_start();
                if !next.starts_with([',', '<', '>', '=', '!', '~']) {
                    break;
                }
                in_version = false;
            }
            ',' | '<' | '>' | '=' | '!' | '~' | ' ' | '\t' => in_version = false,
            _ => in_version = true,
        }
        end = at + c.len_utf8();
    }
    &after[..end]
}

/// The range a comma-joined list of specifiers allows (`>=1.38,<2`, `^1.38.0`, `*`,
/// `1.38.0` bare as Poetry reads it); `None` when one does not read or none names a
/// version (a bare `kopf`: no pin).
fn specifiers(written: &str) -> Option<KopfRange> {
    let written = written.trim();
    if written == "*" {
        return Some(KopfRange::default());
    }
    if written.is_empty() || written.contains("||") {
        return None;
    }
    written
        .split(',')
        .map(|clause| specifier(clause.trim()))
        .try_fold(KopfRange::default(), |range, clause| {
            Some(range.and(clause?))
        })
}

/// The operators of a specifier, longest first so that `===` is not read as `==`.
const OPERATORS: [&str; 10] = ["===", "==", "~=", ">=", "<=", "!=", ">", "<", "^", "~"];

/// The range of one specifier.
fn specifier(clause: &str) -> Option<KopfRange> {
    let operator = OPERATORS
        .into_iter()
        .find(|op| clause.starts_with(op))
        .unwrap_or("");
    let text = clause[operator.len()..].trim();
    if text == "*" {
        return Some(KopfRange::default());
    }
    let wildcard = text.strip_suffix(".*");
    let version = parse_version(wildcard.unwrap_or(text))?;
    let parts = wildcard.unwrap_or(text).split('.').count();
    let range = |lower, upper| KopfRange { lower, upper };
    Some(match (operator, wildcard) {
        ("==" | "===" | "", Some(_)) => KopfRange::from_until(version, bump(version, parts - 1)),
        ("==" | "===" | "", None) => KopfRange::exactly(version),
        (">=", _) => range(Some(End::inclusive(version)), None),
        (">", _) => range(Some(End::exclusive(version)), None),
        ("<=", _) => range(None, Some(End::inclusive(version))),
        ("<", _) => range(None, Some(End::exclusive(version))),
        ("!=", _) => KopfRange::default(),
        ("~=", _) if parts >= 2 => KopfRange::from_until(version, bump(version, parts - 2)),
        ("~", _) => KopfRange::from_until(version, bump(version, parts.min(2) - 1)),
        ("^", _) => KopfRange::from_until(version, caret_upper(version, parts)),
        _ => return None,
    })
}

/// The version after `version` with its part at `index` (0 major, 1 minor, 2 patch)
/// raised by one and the later parts zeroed: the exclusive upper end of `~=`, `~`,
/// `==x.y.*`.
fn bump(version: KopfVersion, index: usize) -> KopfVersion {
    match index {
        0 => KopfVersion::new(version.major.saturating_add(1), 0, 0),
        1 => KopfVersion::new(version.major, version.minor.saturating_add(1), 0),
        _ => KopfVersion::new(
            version.major,
            version.minor,
            version.patch.saturating_add(1),
        ),
    }
}

/// Poetry's caret: the first non-zero part of those written may not change (`^1.38`
/// < 2.0.0, `^0.27` < 0.28.0, `^0.0.3` < 0.0.4, `^0` < 1.0.0).
fn caret_upper(version: KopfVersion, parts: usize) -> KopfVersion {
    if version.major > 0 || parts == 1 {
        bump(version, 0)
    } else if version.minor > 0 || parts == 2 {
        bump(version, 1)
    } else {
        bump(version, 2)
    }
}

/// `name = "kopf"` followed by `version = "1.38.0"` (poetry.lock, uv.lock).
fn locked(path: &str, text: &str) -> Option<KopfPin> {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines.iter().position(|l| l.trim() == "name = \"kopf\"")?;
    let (n, line) = lines
        .iter()
        .enumerate()
        .skip(at + 1)
        .take(3)
        .find(|(_, l)| l.trim_start().starts_with("version"))?;
    let version = line.split('"').nth(1)?;
    lock_pin(path, n, version)
}

/// `"kopf": {"version": "==1.38.0"}` in a Pipfile.lock.
fn pipfile_lock(path: &str, text: &str) -> Option<KopfPin> {
    let json: serde_json::Value = serde_json::from_str(text).ok()?;
    let version = json["default"]["kopf"]["version"].as_str()?;
    let line = text
        .lines()
        .position(|l| l.contains("\"kopf\""))
        .unwrap_or(0);
    lock_pin(path, line, version.trim_start_matches("=="))
}

/// The pin of a lock file: the one version installed.
fn lock_pin(path: &str, index: usize, version: &str) -> Option<KopfPin> {
    Some(KopfPin {
        range: KopfRange::exactly(parse_version(version)?),
        written: version.to_string(),
        locked: true,
        location: Location::new(path, line_number(index)),
    })
}

/// A 1-based line number from a 0-based index.
fn line_number(index: usize) -> u32 {
    u32::try_from(index + 1).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests;
