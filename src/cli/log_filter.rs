//! `--log-level`: a level, or comma-separated `target=level` directives, checked
//! before tracing sees them. tracing's `EnvFilter` reads a word that is no level as a
//! target name: `--log-level=warning` or `verbose` would enable every level of a
//! target of that name and nothing else, silencing the operator. Here such a value is
//! refused with the levels it may take. The chart's values.schema.json enumerates the
//! same levels (`logLevel`).

use std::fmt;

/// The levels tracing knows (tracing-core's `LevelFilter::from_str`), lowercase, plus
/// `warning`, Python's name for `warn` (kopf's users write it), read as `warn`.
pub(crate) const LEVELS: [&str; 7] = ["error", "warn", "warning", "info", "debug", "trace", "off"];

/// A validated `--log-level`: an `EnvFilter` directive string in which every
/// directive names a known level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LogFilter(String);

impl LogFilter {
    /// The directives as tracing's `EnvFilter` reads them (`warning` spelt `warn`).
    pub(crate) fn directives(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for LogFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// clap's value parser for `--log-level`: each comma-separated directive is a level
/// (`info`) or `target=level` (`kopf_audit=debug`, target a Rust module path).
pub(crate) fn parse(value: &str) -> Result<LogFilter, String> {
    let directives = value
        .split(',')
        .map(directive)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(LogFilter(directives.join(",")))
}

fn directive(text: &str) -> Result<String, String> {
    let (target, level) = match text.split_once('=') {
        Some((target, level)) => (Some(target), level),
        None => (None, text),
    };
    let level = known_level(level).ok_or_else(|| unknown_level(text, level))?;
    match target {
        None => Ok(level.to_string()),
        Some(target) if is_module_path(target) => Ok(format!("{target}={level}")),
        Some(target) => Err(format!(
            "`{text}`: `{target}` is no Rust module path (e.g. kopf_audit or kube_client::client)"
        )),
    }
}

/// The level tracing reads for `word`, `warning` read as `warn`.
fn known_level(word: &str) -> Option<&'static str> {
    match word {
        "warning" => Some("warn"),
        _ => LEVELS.iter().copied().find(|level| *level == word),
    }
}

fn unknown_level(directive: &str, level: &str) -> String {
    let why = if level.is_empty() {
        "an empty level".to_string()
    } else {
        format!("`{level}` is no level")
    };
    format!(
        "`{directive}`: {why}; a level is one of {} (or `target=level`, e.g. info,kopf_audit=debug)",
        LEVELS.join(", ")
    )
}

/// `a`, `a_b::c`: identifiers joined by `::`, as tracing's targets are module paths.
fn is_module_path(target: &str) -> bool {
    target.split("::").all(|part| {
        let mut chars = part.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_level_is_accepted_and_warning_is_read_as_warn() {
        for level in ["error", "warn", "info", "debug", "trace", "off"] {
            assert_eq!(parse(level).map(|f| f.to_string()), Ok(level.to_string()));
        }
        assert_eq!(parse("warning").map(|f| f.to_string()), Ok("warn".into()));
        assert_eq!(
            parse("warning,kopf_audit=warning").map(|f| f.to_string()),
            Ok("warn,kopf_audit=warn".into())
        );
    }

    #[test]
    fn directives_per_target_are_kept() {
        let filter = parse("info,kopf_audit=debug,kube_client::client=trace").expect("valid");
        assert_eq!(
            filter.directives(),
            "info,kopf_audit=debug,kube_client::client=trace"
        );
        assert!(tracing_subscriber::EnvFilter::try_new(filter.directives()).is_ok());
    }

    #[test]
    fn a_word_that_is_no_level_is_refused_with_the_levels() {
        for bad in [
            "verbose",
            "INFO",
            "warnings",
            "",
            "info,",
            "info,kopf_audit",
        ] {
            let err = parse(bad).expect_err(bad);
            assert!(
                err.contains("error, warn, warning, info, debug, trace, off"),
                "{bad}: {err}"
            );
        }
        assert_eq!(
            parse("verbose").expect_err("verbose"),
            "`verbose`: `verbose` is no level; a level is one of error, warn, warning, info, \
             debug, trace, off (or `target=level`, e.g. info,kopf_audit=debug)"
        );
    }

    #[test]
    fn a_target_that_is_no_module_path_is_refused() {
        for bad in [
            "=debug",
            "kopf-audit=debug",
            "a::=info",
            "1x=info",
            "a[span]=info",
        ] {
            let err = parse(bad).expect_err(bad);
            assert!(err.contains("no Rust module path"), "{bad}: {err}");
        }
    }
}
