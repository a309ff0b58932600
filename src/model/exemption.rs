//! Exemptions as their owners write them, and the one rule that decides whether the
//! auditor honours one. Three forms exist: a `skip.kopfaudit.dev/<check>` annotation
//! on a Deployment (its value), a `# kopf-audit: ignore[<check>]` comment in Python (its
//! text), and a check in a KopfAudit's `spec.checks.disable` (with an optional date in
//! `spec.checks.disabledUntil`). Each may carry the last day it holds, as Trivy's and
//! Snyk's ignores do: `until 2027-03-31: the reason`. From the day after (UTC) it
//! lapses, and the check's findings come back by themselves.

use jiff::civil::Date;

/// How the auditor treats exemptions (`--refuse-exemptions`,
/// `--require-exemption-expiry`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ExemptionPolicy {
    /// No exemption is honoured: a tenant cannot switch a check off.
    pub(crate) refuse: bool,
    /// Only exemptions with an end date are honoured.
    pub(crate) require_expiry: bool,
}

/// Where an exemption was written, for the words of a refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// A `skip.kopfaudit.dev/<check>` annotation.
    Annotation,
    /// A `# kopf-audit: ignore[<check>]` comment.
    Comment,
    /// `spec.checks.disable`.
    Disable,
}

impl Form {
    /// The form, as a refusal names it.
    fn plural(self) -> &'static str {
        match self {
            Form::Annotation => "exemption annotations",
            Form::Comment => "`# kopf-audit: ignore[...]` comments",
            Form::Disable => "disabled checks (spec.checks.disable)",
        }
    }

    /// How to write an end date in this form.
    fn how_to_date(self) -> &'static str {
        match self {
            Form::Annotation | Form::Comment => "`until YYYY-MM-DD: reason`",
            Form::Disable => "spec.checks.disabledUntil",
        }
    }
}

/// Whether an exemption holds, and what status says of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// It holds: the check's findings are dropped. The text status shows.
    Honoured(String),
    /// It does not hold (refused, malformed, or lapsed): the check runs. Why.
    Refused(String),
}

impl Decision {
    /// Whether the exemption holds.
    pub(crate) fn honoured(&self) -> bool {
        matches!(self, Decision::Honoured(_))
    }

    /// What status says of it.
    pub(crate) fn text(&self) -> &str {
        match self {
            Decision::Honoured(t) | Decision::Refused(t) => t,
        }
    }
}

/// An exemption's text split into its end date and reason: `until 2027-03-31: reason`
/// (or `until 2027-03-31 reason`); `Err` with the date as written when `until` is not
/// followed by a date.
fn split(text: &str) -> Result<(Option<Date>, &str), String> {
    let text = text.trim();
    let Some(rest) = text.strip_prefix("until ") else {
        return Ok((None, text));
    };
    let rest = rest.trim_start();
    let end = rest
        .find(|c: char| c == ':' || c.is_whitespace())
        .unwrap_or(rest.len());
    let (written, reason) = rest.split_at(end);
    let date: Date = written.parse().map_err(|_| written.to_string())?;
    let reason = reason.strip_prefix(':').unwrap_or(reason).trim();
    Ok((Some(date), reason))
}

/// Decides the annotation or comment exemption `text` on `today` (UTC). `quote` makes
/// the tenant's text safe to show (it is cleaned and bounded by the caller's rule).
pub(crate) fn decide(
    text: &str,
    form: Form,
    policy: ExemptionPolicy,
    today: Date,
    quote: impl Fn(&str) -> String,
) -> Decision {
    let given = || quote(text.trim());
    if policy.refuse {
        return Decision::Refused(format!(
            "refused: the auditor does not accept {} (given: \"{}\")",
            form.plural(),
            given()
        ));
    }
    let (until, reason) = match split(text) {
        Ok(split) => split,
        Err(written) => {
            return Decision::Refused(format!(
                "refused: `until` needs a date as YYYY-MM-DD, not \"{}\"",
                quote(&written)
            ));
        }
    };
    if reason.is_empty() {
        return Decision::Refused(match form {
            Form::Comment => {
                "refused: a `# kopf-audit: ignore[...]` comment needs a reason after it".into()
            }
            _ => "refused: an exemption needs a reason as the annotation's value".into(),
        });
    }
    dated(until, form, policy, today, reason, &quote)
}

/// Decides a check of `spec.checks.disable` whose end date is `until` (written in
/// `spec.checks.disabledUntil`, `None` when absent or not a date).
pub(crate) fn decide_disable(
    until: Option<Date>,
    policy: ExemptionPolicy,
    today: Date,
) -> Decision {
    if policy.refuse {
        return Decision::Refused(format!(
            "refused: the auditor does not accept {}",
            Form::Disable.plural()
        ));
    }
    dated(
        until,
        Form::Disable,
        policy,
        today,
        "disabled in spec.checks.disable",
        &str::to_string,
    )
}

/// The decision on an exemption with a reason, by its end date. An honoured reason is
/// kept as written (status cleans and bounds it); one quoted in a refusal is `quote`d.
fn dated(
    until: Option<Date>,
    form: Form,
    policy: ExemptionPolicy,
    today: Date,
    reason: &str,
    quote: &dyn Fn(&str) -> String,
) -> Decision {
    match until {
        Some(last) if today > last => Decision::Refused(format!(
            "lapsed on {last}: the check runs again (given: \"{}\"); renew the date, or fix what it finds",
            quote(reason)
        )),
        Some(last) => Decision::Honoured(format!("until {last}: {reason}")),
        None if policy.require_expiry => Decision::Refused(format!(
            "refused: the auditor accepts only exemptions with an end date ({}); given: \"{}\"",
            form.how_to_date(),
            quote(reason)
        )),
        None => Decision::Honoured(reason.to_string()),
    }
}

/// Today's date in UTC, at `now`.
pub(crate) fn today(now: jiff::Timestamp) -> Date {
    now.to_zoned(jiff::tz::TimeZone::UTC).date()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(text: &str) -> Date {
        text.parse().expect("a date")
    }

    fn open() -> ExemptionPolicy {
        ExemptionPolicy::default()
    }

    fn decided(text: &str, policy: ExemptionPolicy, today: &str) -> Decision {
        decide(text, Form::Annotation, policy, day(today), str::to_string)
    }

    #[test]
    fn an_exemption_holds_through_its_last_day_and_lapses_the_day_after() {
        let text = "until 2027-03-31: vendored chart, fixed upstream in 2.1";
        assert_eq!(
            decided(text, open(), "2027-03-31"),
            Decision::Honoured("until 2027-03-31: vendored chart, fixed upstream in 2.1".into())
        );
        let lapsed = decided(text, open(), "2027-04-01");
        assert!(!lapsed.honoured());
        assert!(
            lapsed.text().starts_with("lapsed on 2027-03-31"),
            "{lapsed:?}"
        );
        // Without the colon too.
        assert!(decided("until 2027-03-31 reason", open(), "2027-01-01").honoured());
    }

    #[test]
    fn an_undated_exemption_holds_unless_the_policy_requires_a_date() {
        assert_eq!(
            decided("a reason", open(), "2030-01-01"),
            Decision::Honoured("a reason".into())
        );
        let strict = ExemptionPolicy {
            require_expiry: true,
            ..open()
        };
        let refused = decided("a reason", strict, "2030-01-01");
        assert!(
            refused.text().contains("only exemptions with an end date"),
            "{refused:?}"
        );
        assert!(decided("until 2030-02-01: a reason", strict, "2030-01-01").honoured());
    }

    #[test]
    fn malformed_dates_empty_reasons_and_the_refusing_policy_refuse() {
        let bad = decided("until tomorrow: x", open(), "2030-01-01");
        assert!(bad.text().contains("not \"tomorrow\""), "{bad:?}");
        assert!(!decided("until 2030-02-01:", open(), "2030-01-01").honoured());
        assert!(!decided("  ", open(), "2030-01-01").honoured());
        let refused = decided(
            "x",
            ExemptionPolicy {
                refuse: true,
                ..open()
            },
            "2030-01-01",
        );
        assert!(
            refused
                .text()
                .starts_with("refused: the auditor does not accept exemption annotations")
        );
    }

    #[test]
    fn a_disabled_check_lapses_on_its_date() {
        assert!(decide_disable(None, open(), day("2030-01-01")).honoured());
        let lapsed = decide_disable(Some(day("2029-12-31")), open(), day("2030-01-01"));
        assert!(
            lapsed.text().starts_with("lapsed on 2029-12-31"),
            "{lapsed:?}"
        );
        let strict = ExemptionPolicy {
            require_expiry: true,
            ..open()
        };
        assert!(
            decide_disable(None, strict, day("2030-01-01"))
                .text()
                .contains("spec.checks.disabledUntil")
        );
    }
}
