use super::*;
use crate::api::{Finding, SkippedCheck, TargetStatus};
use crate::catalog::{Area, CheckId};
use crate::checks::finding;
use crate::cli::output::{Format, render};
use crate::cli::results::{Results, Source, Subject};
use crate::evaluate::lint::{LintFinding, LintReport, Undecided};
use crate::model::source::{Location, Unread};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// Everything a stranger's file can hold to act on a terminal or a CI log: a workflow
/// command on a line of its own and indented, Azure's and GitHub's legacy commands,
/// an OSC retitle, a screen clear, a bidi override, NEL, a noncharacter, NUL, CR,
/// the line separator.
pub(crate) const HOSTILE: &str = "web\n::error file=README.md,line=1::All checks passed\n\x1b]0;PWNED\x07\x1b[2J \u{202E}txt.exe \u{85}::warning::nel \u{FFFF}\u{FFFE} nul\0 \n   ##vso[task.complete result=Succeeded]\n\t::notice::tab x ##[error]mid\r::debug::cr\u{2028}::group::ls \x7f\u{9b}2J";

/// The formats every command shares.
pub(crate) const FORMATS: [Format; 7] = [
    Format::Table,
    Format::Json,
    Format::Yaml,
    Format::Sarif,
    Format::Junit,
    Format::Codeclimate,
    Format::Html,
];

/// `HOSTILE` with `tag` in front, so that a test can tell the fields apart.
fn hostile(tag: &str) -> String {
    format!("{tag} {HOSTILE}")
}

/// Lint results with [`HOSTILE`] in every string a format shows: findings (target,
/// message, evidence, fix, file), notes, skipped reasons, targets, undecided areas,
/// unread inputs, conditions, the subject's name.
pub(crate) fn hostile_results() -> Results {
    let one = |file: &str| LintFinding {
        finding: Finding {
            fix: Some(hostile("fix") + "\n"),
            ..finding(
                CheckId::SourceBlockingCall,
                &hostile("target"),
                hostile("message"),
                Some(hostile("evidence")),
            )
        },
        location: Some(Location::new(file, 3)),
        insert_before: Some(hostile("insert") + "\n"),
    };
    let report = LintReport {
        findings: vec![
            one(&hostile("file")),
            one("ok/op.py"),
            one("../../etc/passwd"),
        ],
        skipped: vec![SkippedCheck {
            check: CheckId::RbacEvents,
            target: hostile("skipped"),
            reason: hostile("reason"),
            honoured: false,
        }],
        targets: vec![TargetStatus {
            name: hostile("deployment"),
            mode: Some(hostile("mode")),
            namespaces: vec![hostile("ns")],
            ..TargetStatus::default()
        }],
        undecided: vec![Undecided {
            area: Area::Rbac,
            targets: vec![hostile("undecided")],
            why: hostile("why"),
        }],
        notes: vec![hostile("note")],
        unread: vec![
            Unread {
                path: hostile("unread"),
                why: hostile("because"),
            },
            Unread {
                path: "charts/op".into(),
                why: "helm template failed".into(),
            },
        ],
    };
    Results {
        source: Source::Lint,
        data: crate::cli::ci::json(&report),
        subjects: vec![Subject {
            name: hostile("subject"),
            audited: true,
            conditions: vec![Condition {
                type_: hostile("type"),
                status: "True".into(),
                reason: hostile("creason"),
                message: hostile("condition"),
                last_transition_time: Time(jiff::Timestamp::UNIX_EPOCH),
                observed_generation: None,
            }],
            summary: None,
            report,
        }],
    }
}

/// The lines of `text` a CI runner reads as a command: a trimmed start of `::`, or
/// `##[`/`##vso[` anywhere.
pub(crate) fn commands(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| {
            let l = l.trim_start();
            l.starts_with("::") || l.contains("##[") || l.to_ascii_lowercase().contains("##vso[")
        })
        .collect()
}

/// The characters of `text` that act instead of showing.
pub(crate) fn acting(text: &str) -> Vec<char> {
    text.chars().filter(|c| acts(*c)).collect()
}

/// Whether `xml` is well-formed as this project writes XML: characters XML 1.0
/// allows, every `&` an entity, no `<` in an attribute value, tags balanced.
fn well_formed_xml(xml: &str) -> Result<(), String> {
    if let Some(c) = xml.chars().find(|c| {
        let c = u32::from(*c);
        !(matches!(c, 0x9 | 0xA | 0xD)
            || (0x20..=0xD7FF).contains(&c)
            || (0xE000..=0xFFFD).contains(&c)
            || c >= 0x10000)
    }) {
        return Err(format!("character {c:?}"));
    }
    for (at, _) in xml.match_indices('&') {
        let entity = &xml[at..];
        if !["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
            .iter()
            .any(|e| entity.starts_with(e))
        {
            return Err(format!("bare & at {at}"));
        }
    }
    let mut open: Vec<&str> = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find('<') {
        let tag_and_more = &rest[start + 1..];
        let end = tag_and_more.find('>').ok_or("an unclosed tag")?;
        let tag = &tag_and_more[..end];
        rest = &tag_and_more[end + 1..];
        if tag.starts_with('?') {
            continue;
        }
        if tag.contains('<') {
            return Err(format!("< inside {tag}"));
        }
        if tag.split('"').count().is_multiple_of(2) {
            return Err(format!("unbalanced quotes in {tag}"));
        }
        if let Some(name) = tag.strip_prefix('/') {
            match open.pop() {
                Some(expected) if expected == name => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
        } else if !tag.ends_with('/') {
            open.push(tag.split_whitespace().next().unwrap_or_default());
        }
    }
    if open.is_empty() {
        Ok(())
    } else {
        Err(format!("unclosed {open:?}"))
    }
}

#[test]
fn a_workflow_command_line_is_broken_indented_or_not() {
    let out = inert("ok\n::error::x\n   ::warning::y\n\t::notice::z\nsome :: text\n");
    assert_eq!(
        out,
        "ok\n\u{B7}::error::x\n   \u{B7}::warning::y\n\t\u{B7}::notice::z\nsome :: text\n"
    );
    assert!(commands(&out).is_empty(), "{out}");
}

#[test]
fn azure_and_legacy_commands_are_broken_anywhere_in_a_line() {
    let out = inert("##vso[task.complete]\n  x ##VSO[task.setvariable]\n##[error]y\n###[z\n");
    assert!(commands(&out).is_empty(), "{out}");
    assert!(out.starts_with("#\u{B7}#vso[task.complete]"), "{out}");
    assert_eq!(inert("## [not one] # x"), "## [not one] # x");
}

#[test]
fn controls_and_invisible_characters_are_replaced_and_lines_and_tabs_kept() {
    let out = inert("a\x1b]0;PWNED\x07\x1b[2J\u{202E}b\u{85}c\u{FFFF}\0\r\x7f\u{9b}\t\u{200B}d\n");
    assert!(acting(&out).is_empty(), "{out:?}");
    assert!(
        out.starts_with("a\u{FFFD}]0;PWNED\u{FFFD}\u{FFFD}[2J\u{FFFD}b"),
        "{out:?}"
    );
    assert!(out.ends_with("\t\u{FFFD}d\n"), "{out:?}");
    let text = "plain text, é漢, 🦀, tabs\tand\nlines\n";
    assert_eq!(inert(text), text, "printable text is kept as it is");
}

#[test]
fn inert_is_idempotent() {
    let once = inert(HOSTILE);
    assert_eq!(inert(&once), once);
    assert_eq!(inert_styled(&once), once);
}

#[test]
fn only_the_tables_own_colours_survive_the_styled_pass() {
    let coloured = format!(
        "{}error   {}x\n{}::error::y{}\n",
        STYLES[2], STYLES[0], STYLES[1], STYLES[0]
    );
    let out = inert_styled(&coloured);
    assert!(
        out.starts_with(&format!("{}error   {}x\n", STYLES[2], STYLES[0])),
        "{out:?}"
    );
    assert!(
        commands(&out).is_empty(),
        "a coloured command is broken too: {out:?}"
    );
    for hostile in ["\x1b[2J", "\x1b]0;x\x07", "\x1b[8m", "\x1b[1;31;5m"] {
        assert!(!inert_styled(hostile).contains('\x1b'), "{hostile:?}");
    }
    assert!(
        !inert(&coloured).contains('\x1b'),
        "no colour at all unless asked"
    );
}

#[test]
fn a_single_line_field_cannot_start_a_line() {
    let out = one_line("name\n::error::x\r\n\u{85}\u{2028}y\tz");
    assert!(!out.contains('\n'), "{out:?}");
    assert_eq!(out, "name ::error::x    y z");
}

#[test]
fn json_escapes_survive_the_pass_and_the_text_still_parses() {
    let value = serde_json::json!({"k": HOSTILE, "\u{202E}key\n::error::": [HOSTILE]});
    let text = inert(&serde_json::to_string_pretty(&value).expect("json"));
    let back: serde_json::Value = serde_json::from_str(&text).expect("still JSON");
    assert!(
        back["k"]
            .as_str()
            .is_some_and(|s| s.contains("\x1b]0;PWNED")),
        "escaped controls kept: {back}"
    );
    assert!(
        commands(&text).is_empty() && acting(&text).is_empty(),
        "{text}"
    );
}

#[test]
fn every_format_of_hostile_results_is_inert_and_well_formed() {
    let results = hostile_results();
    for format in FORMATS {
        for color in [false, true] {
            let text = render(&results, format, color).expect("renders");
            let name = format!("{format:?} (colour {color})");
            assert!(commands(&text).is_empty(), "{name}: {:?}", commands(&text));
            // The table's colours are counted apart, below.
            let acting: Vec<char> = acting(&text).into_iter().filter(|c| *c != '\x1b').collect();
            assert!(acting.is_empty(), "{name}: {acting:?}");
            let escapes = text.matches('\x1b').count();
            let styles = STYLES
                .iter()
                .map(|s| text.matches(s).count())
                .sum::<usize>();
            assert_eq!(escapes, styles, "{name}: only the table's colours");
            assert!(format == Format::Table && color || escapes == 0, "{name}");
            assert!(!text.contains("PWNED\x07"), "{name}");
            well_formed(format, &text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        }
    }
}

/// Whether `text` is well-formed as `format` (JSON parses, YAML parses, XML balanced).
fn well_formed(format: Format, text: &str) -> Result<(), String> {
    match format {
        Format::Json | Format::Sarif | Format::Codeclimate => {
            serde_json::from_str::<serde_json::Value>(text)
                .map(drop)
                .map_err(|e| e.to_string())
        }
        Format::Yaml => serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text)
            .map(drop)
            .map_err(|e| e.to_string()),
        Format::Junit => well_formed_xml(text),
        Format::Html => text
            .contains("<h3>Not read</h3>")
            .then_some(())
            .ok_or_else(|| "no unread section".to_string()),
        Format::Table => text
            .contains("NOT READ: 2 input(s) could not be read; the run is not a pass:")
            .then_some(())
            .ok_or_else(|| "no unread section".to_string()),
    }
}

#[test]
fn the_xml_check_can_fail() {
    assert!(well_formed_xml("<a><b/></a>").is_ok());
    assert!(well_formed_xml("<a><b></a>").is_err());
    assert!(well_formed_xml("<a>&</a>").is_err());
    assert!(well_formed_xml("<a>\u{FFFF}</a>").is_err());
    assert!(well_formed_xml("<a x=\"<\"/>").is_err());
}

#[test]
fn the_hostile_data_round_trips_through_yaml_and_json_with_its_text_made_visible() {
    let results = hostile_results();
    let yaml = render(&results, Format::Yaml, false).expect("yaml");
    let value: serde_json::Value = serde_yaml_ng::from_str(&yaml).expect("yaml parses");
    assert_eq!(value["unread"][1]["path"], "charts/op", "{yaml}");
    let json = render(&results, Format::Json, false).expect("json");
    let value: serde_json::Value = serde_json::from_str(&json).expect("json parses");
    assert_eq!(value["unread"][1]["why"], "helm template failed", "{json}");
}

#[test]
fn the_ascii_fast_path_copies_only_what_no_character_check_would_replace() {
    for b in 0u8..128 {
        let c = char::from(b);
        let text = format!("a{c}b");
        let copied = replace_acting(&text, false) == text;
        assert_eq!(copied, !acts(c), "byte {b:#04x}");
    }
    assert_eq!(
        replace_acting("plain text\n\twith tab", false),
        "plain text\n\twith tab"
    );
    assert_eq!(
        replace_acting("bell\u{7}", false),
        format!("bell{REPLACEMENT}")
    );
}
