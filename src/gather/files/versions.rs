//! The kopf version an operator's files pin: requirements files, `pyproject.toml`, lock
//! files (poetry, uv, Pipfile) and `pip install` lines in a Dockerfile. The rules of
//! posting depend on it (kopf 1.41 added `settings.posting.loggers`).

use crate::model::source::{KopfPin, Location};

/// The kopf pin in a file, by its name; `None` when it names no kopf version.
pub(crate) fn pin(path: &str, text: &str) -> Option<KopfPin> {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name {
        "poetry.lock" | "uv.lock" => locked(path, text),
        "Pipfile.lock" => pipfile_lock(path, text),
        _ => requirement(path, text),
    }
}

/// A requirement on kopf in any line: `kopf==1.37.2`, `kopf[full-auth]>=1.38`,
/// `"kopf~=1.41"` (pyproject), `kopf = "^1.37"` (poetry), `pip install kopf==1.45.2`.
fn requirement(path: &str, text: &str) -> Option<KopfPin> {
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        let mut rest = line;
        while let Some(at) = rest.find("kopf") {
            let before = rest[..at].chars().next_back();
            let after = &rest[at + 4..];
            rest = after;
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
                continue;
            }
            let after = match after.strip_prefix('[') {
                Some(extras) => extras.split_once(']').map_or("", |(_, r)| r),
                None => after,
            };
            let spec = after
                .trim_start_matches([' ', '"', '\'', '=', ':'])
                .trim_start();
            let exact = after.trim_start().starts_with("==")
                || (after.contains('=')
                    && spec.starts_with(|c: char| c.is_ascii_digit())
                    && !after.contains(">=")
                    && !after.contains("~="));
            let spec = spec.trim_start_matches(['>', '<', '=', '~', '^', '!', ' ']);
            let version: String = spec
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            if version.contains('.') {
                return Some(KopfPin {
                    version: version.trim_end_matches('.').to_string(),
                    exact,
                    location: Location::new(path, line_number(n)),
                });
            }
        }
    }
    None
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
    Some(KopfPin {
        version: version.to_string(),
        exact: true,
        location: Location::new(path, line_number(n)),
    })
}

/// `"kopf": {"version": "==1.38.0"}` in a Pipfile.lock.
fn pipfile_lock(path: &str, text: &str) -> Option<KopfPin> {
    let json: serde_json::Value = serde_json::from_str(text).ok()?;
    let version = json["default"]["kopf"]["version"].as_str()?;
    let line = text
        .lines()
        .position(|l| l.contains("\"kopf\""))
        .unwrap_or(0);
    Some(KopfPin {
        version: version.trim_start_matches("==").to_string(),
        exact: true,
        location: Location::new(path, line_number(line)),
    })
}

fn line_number(index: usize) -> u32 {
    u32::try_from(index + 1).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(path: &str, text: &str) -> Option<(String, bool, u32)> {
        pin(path, text).map(|p| (p.version, p.exact, p.location.line))
    }

    #[test]
    fn requirement_lines_in_every_usual_form() {
        let v = |s: &str| version("requirements.txt", s);
        assert_eq!(
            v("kubernetes==29.0\nkopf==1.37.2\n"),
            Some(("1.37.2".into(), true, 2))
        );
        assert_eq!(
            v("kopf[full-auth]>=1.38,<2"),
            Some(("1.38".into(), false, 1))
        );
        assert_eq!(
            v("kopf~=1.41.0  # latest"),
            Some(("1.41.0".into(), false, 1))
        );
        assert_eq!(v("kopf\n"), None);
        assert_eq!(v("kopf-audit==0.1.0\nmykopf==2.0"), None);
        assert_eq!(
            version(
                "pyproject.toml",
                "[project]\ndependencies = [\n  \"kopf==1.45.2\",\n]\n"
            ),
            Some(("1.45.2".into(), true, 3))
        );
        assert_eq!(
            version(
                "pyproject.toml",
                "[tool.poetry.dependencies]\nkopf = \"^1.37\"\n"
            ),
            Some(("1.37".into(), false, 2))
        );
        assert_eq!(
            version(
                "Dockerfile",
                "FROM python\nRUN pip install --no-cache-dir kopf==1.40.1 kubernetes\n"
            ),
            Some(("1.40.1".into(), true, 2))
        );
    }

    #[test]
    fn lock_files_pin_exactly() {
        assert_eq!(
            version(
                "poetry.lock",
                "[[package]]\nname = \"kopf\"\nversion = \"1.38.0\"\n"
            ),
            Some(("1.38.0".into(), true, 3))
        );
        assert_eq!(
            version(
                "Pipfile.lock",
                "{\"default\": {\n \"kopf\": {\"version\": \"==1.39.1\"}}}"
            ),
            Some(("1.39.1".into(), true, 2))
        );
    }

    #[test]
    fn posting_loggers_arrived_in_1_41() {
        let p = |v: &str| KopfPin {
            version: v.into(),
            exact: true,
            location: Location::default(),
        };
        assert_eq!(p("1.37.2").has_posting_loggers(), Some(false));
        assert_eq!(p("1.41").has_posting_loggers(), Some(true));
        assert_eq!(p("2.0").has_posting_loggers(), Some(true));
        assert_eq!(p("x").has_posting_loggers(), None);
    }
}
