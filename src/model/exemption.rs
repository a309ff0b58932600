//! Exemptions as their owners write them, and the one rule that decides whether the
//! auditor honours one, in one set of words. Three forms exist: a
//! `skip.kopfaudit.dev/<check>` annotation on a Deployment (its value), a
//! `# kopf-audit: ignore[<check>]` comment in Python (its text), and a check in a
//! KopfAudit's `spec.checks.disable` (with an optional date in
//! `spec.checks.disabledUntil`). Each source finds its exemptions itself and hands them
//! here as an [`Exemption`]; [`Exemption::decide`] is the only rule and the only
//! wording, so the same exemption reads the same in a KopfAudit's status and in lint's
//! output. Each may carry the last day it holds, as Trivy's and Snyk's ignores do:
//! `until 2027-03-31: the reason`. From the day after (UTC) it lapses, and the check's
//! findings come back by themselves.

use crate::api::SkippedCheck;
use crate::catalog::CheckId;
use crate::model::bounded::{MAX_QUOTED_REASON_BYTES, MAX_REASON_BYTES, clean, clean_name};
use jiff::civil::Date;

/// How the auditor treats exemptions (`--refuse-exemptions`,
/// `--require-exemption-expiry`), whatever their form.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ExemptionPolicy {
    /// No exemption is honoured: a tenant cannot switch a check off.
    pub(crate) refuse: bool,
    /// Only exemptions with an end date are honoured.
    pub(crate) require_expiry: bool,
}

/// Where an exemption was written, for the few words that differ by form.
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
    /// The form, as a refusal by the policy names it.
    fn plural(self) -> &'static str {
        match self {
            Form::Annotation => "exemption annotations",
            Form::Comment => "`# kopf-audit: ignore[...]` comments",
            Form::Disable => "disabled checks (spec.checks.disable)",
        }
    }

    /// Where this form's end date is written.
    fn date_field(self) -> &'static str {
        match self {
            Form::Annotation | Form::Comment => "`until`",
            Form::Disable => "spec.checks.disabledUntil",
        }
    }

    /// How to write an end date in this form.
    fn how_to_date(self) -> &'static str {
        match self {
            Form::Annotation | Form::Comment => "`until YYYY-MM-DD: reason`",
            Form::Disable => "a date in spec.checks.disabledUntil",
        }
    }

    /// Where this form's reason is written.
    fn reason_place(self) -> &'static str {
        match self {
            Form::Annotation => "as the annotation's value",
            Form::Comment => "after the comment's `ignore[<check>]`",
            Form::Disable => "in spec.checks.disable",
        }
    }
}

/// The reason a disabled check gives: the spec has no field for one.
const DISABLED_REASON: &str = "disabled in spec.checks.disable";

/// An exemption's end date, as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Until<'a> {
    /// None given.
    Open,
    /// The last day it holds.
    On(Date),
    /// Given, but not a date: as written.
    Unreadable(&'a str),
}

/// One exemption, as its source read it: which form, its end date and its reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Exemption<'a> {
    form: Form,
    until: Until<'a>,
    reason: &'a str,
}

impl<'a> Exemption<'a> {
    /// An annotation's value or a comment's text: `until 2027-03-31: reason` (or
    /// `until 2027-03-31 reason`), or the reason alone.
    pub(crate) fn written(form: Form, text: &'a str) -> Self {
        let text = text.trim();
        let Some(rest) = text.strip_prefix("until ") else {
            return Exemption {
                form,
                until: Until::Open,
                reason: text,
            };
        };
        let rest = rest.trim_start();
        let end = rest
            .find(|c: char| c == ':' || c.is_whitespace())
            .unwrap_or(rest.len());
        let (written, reason) = rest.split_at(end);
        let reason = reason.strip_prefix(':').unwrap_or(reason).trim();
        Exemption {
            form,
            until: until(written),
            reason,
        }
    }

    /// A check of `spec.checks.disable`, with its `spec.checks.disabledUntil` entry if
    /// it has one.
    pub(crate) fn disabled(until_written: Option<&'a str>) -> Self {
        Exemption {
            form: Form::Disable,
            until: until_written.map_or(Until::Open, |w| until(w.trim())),
            reason: DISABLED_REASON,
        }
    }

    /// Whether the exemption holds on `today` (UTC) under `policy`, and what status and
    /// lint say of it. Every refusal ends by quoting the reason given, cleaned and
    /// bounded (a tenant wrote it).
    pub(crate) fn decide(&self, policy: ExemptionPolicy, today: Date) -> Decision {
        let form = self.form;
        let given = || {
            format!(
                "(given: \"{}\")",
                clean(self.reason, MAX_QUOTED_REASON_BYTES)
            )
        };
        if policy.refuse {
            return Decision::Refused(format!(
                "refused: the auditor does not accept {} {}",
                form.plural(),
                given()
            ));
        }
        if let Until::Unreadable(written) = self.until {
            return Decision::Refused(format!(
                "refused: {} needs a date as YYYY-MM-DD, not \"{}\" {}",
                form.date_field(),
                clean(written, MAX_QUOTED_REASON_BYTES),
                given()
            ));
        }
        if self.reason.is_empty() {
            return Decision::Refused(format!(
                "refused: an exemption needs a reason, written {}",
                form.reason_place()
            ));
        }
        match self.until {
            Until::On(last) if today > last => Decision::Refused(format!(
                "lapsed on {last}: the check runs again; renew the date, or fix what it finds {}",
                given()
            )),
            Until::On(last) => Decision::Honoured(format!("until {last}: {}", self.reason)),
            _ if policy.require_expiry => Decision::Refused(format!(
                "refused: the auditor accepts only exemptions with an end date; give one as {} {}",
                form.how_to_date(),
                given()
            )),
            _ => Decision::Honoured(self.reason.to_string()),
        }
    }
}

/// An end date as written.
fn until(written: &str) -> Until<'_> {
    written
        .parse()
        .map_or(Until::Unreadable(written), Until::On)
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

    /// The decision on `check`'s exemption for `target`, as status and lint list it:
    /// the text cleaned and bounded (an honoured reason is the tenant's, as written).
    pub(crate) fn skipped(&self, check: CheckId, target: &str) -> SkippedCheck {
        SkippedCheck {
            check,
            target: clean_name(target),
            reason: clean(self.text(), MAX_REASON_BYTES),
            honoured: self.honoured(),
        }
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

    fn strict() -> ExemptionPolicy {
        ExemptionPolicy {
            require_expiry: true,
            ..open()
        }
    }

    fn decided(text: &str, policy: ExemptionPolicy, today: &str) -> Decision {
        Exemption::written(Form::Annotation, text).decide(policy, day(today))
    }

    #[test]
    fn an_exemption_holds_through_its_last_day_and_lapses_the_day_after() {
        let text = "until 2027-03-31: vendored chart, fixed upstream in 2.1";
        assert_eq!(
            decided(text, open(), "2027-03-31"),
            Decision::Honoured("until 2027-03-31: vendored chart, fixed upstream in 2.1".into())
        );
        assert_eq!(
            decided(text, open(), "2027-04-01"),
            Decision::Refused(
                "lapsed on 2027-03-31: the check runs again; renew the date, or fix what it finds (given: \"vendored chart, fixed upstream in 2.1\")".into()
            )
        );
        // Without the colon too.
        assert!(decided("until 2027-03-31 reason", open(), "2027-01-01").honoured());
    }

    /// The three forms lapse, and are refused for want of a date, in the same words;
    /// only the form's own nouns (where its date goes) and a disabled check's reason
    /// differ.
    #[test]
    fn every_form_is_decided_by_one_rule_in_one_set_of_words() {
        let annotation = Exemption::written(Form::Annotation, "until 2029-12-31: the mesh probes");
        let comment = Exemption::written(Form::Comment, "until 2029-12-31: the mesh probes");
        let disabled = Exemption::disabled(Some("2029-12-31"));
        let lapsed = |reason: &str| {
            format!(
                "lapsed on 2029-12-31: the check runs again; renew the date, or fix what it finds (given: \"{reason}\")"
            )
        };
        for (exemption, reason) in [
            (annotation, "the mesh probes"),
            (comment, "the mesh probes"),
            (disabled, DISABLED_REASON),
        ] {
            assert!(exemption.decide(open(), day("2029-12-31")).honoured());
            assert_eq!(
                exemption.decide(open(), day("2030-01-01")),
                Decision::Refused(lapsed(reason)),
                "{exemption:?}"
            );
        }

        let undated = [
            (
                Exemption::written(Form::Annotation, "the mesh probes"),
                "`until YYYY-MM-DD: reason`",
                "the mesh probes",
            ),
            (
                Exemption::written(Form::Comment, "the mesh probes"),
                "`until YYYY-MM-DD: reason`",
                "the mesh probes",
            ),
            (
                Exemption::disabled(None),
                "a date in spec.checks.disabledUntil",
                DISABLED_REASON,
            ),
        ];
        for (exemption, how, reason) in undated {
            assert!(exemption.decide(open(), day("2030-01-01")).honoured());
            assert_eq!(
                exemption.decide(strict(), day("2030-01-01")),
                Decision::Refused(format!(
                    "refused: the auditor accepts only exemptions with an end date; give one as {how} (given: \"{reason}\")"
                )),
                "{exemption:?}"
            );
        }
    }

    #[test]
    fn a_date_that_is_no_date_is_refused_in_every_form() {
        let refused = decided("until tomorrow: x", open(), "2030-01-01");
        assert_eq!(
            refused.text(),
            "refused: `until` needs a date as YYYY-MM-DD, not \"tomorrow\" (given: \"x\")"
        );
        let comment = Exemption::written(Form::Comment, "until tomorrow: x");
        assert_eq!(comment.decide(open(), day("2030-01-01")), refused);
        // The CRD's pattern lets 2027-13-45 through: it is no date, and refused (not
        // taken as undated, which would hold for ever).
        assert_eq!(
            Exemption::disabled(Some("2027-13-45"))
                .decide(open(), day("2030-01-01"))
                .text(),
            "refused: spec.checks.disabledUntil needs a date as YYYY-MM-DD, not \"2027-13-45\" (given: \"disabled in spec.checks.disable\")"
        );
    }

    #[test]
    fn empty_reasons_and_the_refusing_policy_refuse() {
        assert!(!decided("until 2030-02-01:", open(), "2030-01-01").honoured());
        assert_eq!(
            decided("  ", open(), "2030-01-01").text(),
            "refused: an exemption needs a reason, written as the annotation's value"
        );
        assert_eq!(
            Exemption::written(Form::Comment, "")
                .decide(open(), day("2030-01-01"))
                .text(),
            "refused: an exemption needs a reason, written after the comment's `ignore[<check>]`"
        );
        let refusing = ExemptionPolicy {
            refuse: true,
            ..open()
        };
        assert_eq!(
            decided("until 2031-01-01: x", refusing, "2030-01-01").text(),
            "refused: the auditor does not accept exemption annotations (given: \"x\")"
        );
        assert_eq!(
            Exemption::disabled(None)
                .decide(refusing, day("2030-01-01"))
                .text(),
            "refused: the auditor does not accept disabled checks (spec.checks.disable) (given: \"disabled in spec.checks.disable\")"
        );
    }

    #[test]
    fn a_refusal_quotes_the_reason_cleaned_and_bounded() {
        let reason = format!("password=hunter2 \u{202E}{}", "x".repeat(4096));
        let text = format!("until 2000-01-01: {reason}");
        let lapsed = decided(&text, open(), "2030-01-01");
        assert!(!lapsed.text().contains("hunter2"), "{lapsed:?}");
        assert!(!lapsed.text().contains('\u{202E}'), "{lapsed:?}");
        let skipped = lapsed.skipped(CheckId::WorkloadLiveness, "op");
        assert!(
            skipped.reason.len() <= MAX_REASON_BYTES,
            "{}",
            skipped.reason.len()
        );
        assert!(!skipped.honoured);
    }
}
