//! The user docs that name public API must name all of it: every condition reason has
//! a row in the troubleshooting table, and the table names no reason the code lacks.

use kopf_audit::catalog::conditions::ConditionReason;

fn troubleshooting() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/troubleshooting.md");
    std::fs::read_to_string(path).expect("docs/troubleshooting.md")
}

/// The reason of each table row: its first cell, between backquotes.
fn rows(doc: &str) -> Vec<String> {
    doc.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`'))
        .map(|(reason, _)| reason.to_string())
        .collect()
}

#[test]
fn every_condition_reason_has_a_troubleshooting_row() {
    let rows = rows(&troubleshooting());
    let missing: Vec<&str> = ConditionReason::ALL
        .iter()
        .map(|r| r.as_str())
        .filter(|r| !rows.iter().any(|row| row == r))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/troubleshooting.md has no row for {missing:?}"
    );
}

#[test]
fn the_troubleshooting_table_names_only_real_reasons() {
    let rows = rows(&troubleshooting());
    assert!(rows.len() >= ConditionReason::ALL.len(), "{rows:?}");
    let unknown: Vec<&String> = rows
        .iter()
        .filter(|row| ConditionReason::parse(row).is_none())
        .collect();
    assert!(unknown.is_empty(), "not condition reasons: {unknown:?}");
    let mut sorted = rows.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), rows.len(), "a reason has two rows: {rows:?}");
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn the_readme_contents_link_every_section_and_only_real_ones() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = std::fs::read_to_string(path).expect("README.md");
    let (before, _) = readme.split_once("\n## ").expect("the README has sections");
    let contents = before
        .split_once("**Contents.**")
        .map(|(_, c)| c)
        .expect("the README's contents, before its first section");
    let anchors: Vec<String> = readme
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(anchor)
        .collect();
    let unlinked: Vec<&String> = anchors
        .iter()
        .filter(|a| !contents.contains(&format!("(#{a})")))
        .collect();
    assert!(
        unlinked.is_empty(),
        "sections missing from the contents: {unlinked:?}"
    );
    let dangling: Vec<&str> = contents
        .split("(#")
        .skip(1)
        .filter_map(|rest| rest.split_once(')').map(|(a, _)| a))
        .filter(|a| !anchors.iter().any(|known| known == a))
        .collect();
    assert!(
        dangling.is_empty(),
        "contents link no section: {dangling:?}"
    );
}
