//! The one output layer of `check`, `report` and `lint`: the same `-o` formats,
//! `--fail-on` and `--color` on all three, as users know them from other linters. It
//! picks the renderer; the shape every renderer reads ([`Results`]) lives below it, in
//! [`super::results`], so that the renderers never import the module that calls them.

use super::results::{Results, Source};
use super::{ci, html, table};
use crate::catalog::Severity;
use clap::ValueEnum;
use std::io::IsTerminal as _;
use std::process::ExitCode;

/// An output format of `check`, `report` and `lint`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// For people: findings with their evidence and fix, exemptions, conditions.
    #[value(alias = "text")]
    Table,
    /// The command's data: `check` the status the operator would write, `report` the
    /// stored KopfAudits, `lint` the findings with their file and line.
    Json,
    /// The same data as `json`, as YAML.
    Yaml,
    /// SARIF 2.1.0 for code scanning (a live audit's findings point at the root).
    Sarif,
    /// JUnit XML, one test case per check, failed by its findings.
    Junit,
    /// GitLab Code Quality.
    Codeclimate,
    /// One self-contained HTML page: no script, no network, no external asset.
    Html,
}

/// The least severe finding that fails the command (exit 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum FailOn {
    /// Fail on an error.
    Error,
    /// Fail on a warning or an error.
    Warning,
    /// Fail on any finding.
    Info,
    /// Never fail on findings.
    #[value(alias = "never")]
    None,
}

impl FailOn {
    /// The severity at which the command fails, if any.
    fn threshold(self) -> Option<Severity> {
        match self {
            FailOn::Error => Some(Severity::Error),
            FailOn::Warning => Some(Severity::Warning),
            FailOn::Info => Some(Severity::Info),
            FailOn::None => None,
        }
    }
}

/// When the table is coloured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColorChoice {
    /// When stdout is a terminal and `NO_COLOR` is unset or empty.
    #[default]
    Auto,
    /// Always (even into a pipe).
    Always,
    /// Never.
    Never,
}

impl ColorChoice {
    /// Whether to colour: `always` and `never` as said; `auto` only on a terminal, and
    /// not when `NO_COLOR` is set to anything but the empty string (no-color.org).
    pub(crate) fn enabled(self, no_color: Option<&std::ffi::OsStr>, terminal: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => terminal && no_color.is_none_or(std::ffi::OsStr::is_empty),
        }
    }

    /// [`Self::enabled`] for this process's stdout and environment.
    fn for_stdout(self) -> bool {
        self.enabled(
            std::env::var_os("NO_COLOR").as_deref(),
            std::io::stdout().is_terminal(),
        )
    }
}

/// The output flags `check`, `report` and `lint` share.
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct OutputArgs {
    /// Output format.
    #[arg(short, long, value_enum, default_value = "table")]
    pub(crate) output: Format,
    /// Exit 1 when a finding is at least this severe (`none`: never). Default: `error`
    /// for `check` and `lint`, `none` for `report`.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub(crate) fail_on: Option<FailOn>,
    /// Colour the table: `auto` on a terminal unless NO_COLOR is set.
    #[arg(long, value_enum, default_value = "auto", value_name = "WHEN")]
    pub(crate) color: ColorChoice,
}

/// Why a format could not be rendered.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RenderError {
    /// JSON serialization failed.
    #[error("cannot render JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// YAML serialization failed.
    #[error("cannot render YAML: {0}")]
    Yaml(#[from] serde_yaml_ng::Error),
}

/// `--fail-on`'s default: `report` reads what is stored and fails only when asked.
fn default_fail_on(source: Source) -> FailOn {
    match source {
        Source::Check | Source::Lint => FailOn::Error,
        Source::Report => FailOn::None,
    }
}

/// `results` in `format`, made [`inert`](super::inert::inert) as a whole: whatever a
/// format let through, no control character and no CI command reaches the reader.
/// `color` applies to the table only, whose colours alone survive the pass.
pub(crate) fn render(
    results: &Results,
    format: Format,
    color: bool,
) -> Result<String, RenderError> {
    let text = formatted(results, format, color)?;
    Ok(if format == Format::Table && color {
        super::inert::inert_styled(&text)
    } else {
        super::inert::inert(&text)
    })
}

/// `results` in `format`, before the inert pass.
fn formatted(results: &Results, format: Format, color: bool) -> Result<String, RenderError> {
    let pretty = |value: &serde_json::Value| serde_json::to_string_pretty(value).map(|s| s + "\n");
    Ok(match format {
        Format::Table => table::render(results, color),
        Format::Json => pretty(&results.data)?,
        Format::Yaml => serde_yaml_ng::to_string(&results.data)?,
        Format::Sarif => pretty(&ci::sarif(&results.merged()))?,
        Format::Junit => ci::junit(results),
        Format::Codeclimate => pretty(&ci::code_quality(&results.merged()))?,
        Format::Html => html::render(results),
    })
}

/// The exit code for `worst` under `fail_on`: 1 when the worst finding is at the
/// threshold or above, else 0.
pub(crate) fn exit_code(fail_on: FailOn, worst: Option<Severity>) -> ExitCode {
    match (fail_on.threshold(), worst) {
        (Some(threshold), Some(worst)) if worst >= threshold => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    }
}

/// Prints `results` as `args` ask and returns the command's exit code: 2 when the
/// output could not be made, 1 when a finding is at `--fail-on` or above, else 0.
pub(crate) fn finish(results: &Results, args: &OutputArgs) -> ExitCode {
    match render(results, args.output, args.color.for_stdout()) {
        Ok(text) => super::out(text),
        Err(e) => {
            super::error(e);
            return ExitCode::from(2);
        }
    }
    let fail_on = args
        .fail_on
        .unwrap_or_else(|| default_fail_on(results.source));
    exit_code(fail_on, results.worst())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn colour_only_on_a_terminal_without_no_color_unless_forced() {
        let auto = ColorChoice::Auto;
        assert!(auto.enabled(None, true));
        assert!(!auto.enabled(None, false), "never into a pipe");
        assert!(!auto.enabled(Some(OsStr::new("1")), true), "NO_COLOR");
        assert!(auto.enabled(Some(OsStr::new("")), true), "NO_COLOR empty");
        assert!(ColorChoice::Always.enabled(Some(OsStr::new("1")), false));
        assert!(!ColorChoice::Never.enabled(None, true));
    }

    #[test]
    fn fail_on_fails_at_its_threshold_and_above_only() {
        let code = |f: FailOn, w: Option<Severity>| exit_code(f, w) == ExitCode::from(1);
        assert!(code(FailOn::Error, Some(Severity::Error)));
        assert!(!code(FailOn::Error, Some(Severity::Warning)));
        assert!(code(FailOn::Warning, Some(Severity::Error)));
        assert!(code(FailOn::Info, Some(Severity::Info)));
        assert!(!code(FailOn::None, Some(Severity::Error)));
        assert!(!code(FailOn::Info, None));
        assert_eq!(default_fail_on(Source::Report), FailOn::None);
        assert_eq!(default_fail_on(Source::Check), FailOn::Error);
    }
}
