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

/// The README a user reads first stays short: the rest is in docs/.
const README_MAX_LINES: usize = 250;

fn repo() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every Markdown file under docs/, recursively.
fn markdown_files() -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut files = vec![repo().join("README.md")];
    walk(&repo().join("docs"), &mut files);
    files.sort();
    files
}

/// The lines outside fenced code blocks: neither their links nor their `#` lines count.
fn prose(doc: &str) -> Vec<&str> {
    let mut fenced = false;
    doc.lines()
        .filter(|line| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// A line without its inline code spans, where `[x](y)` is code, not a link.
fn without_code_spans(line: &str) -> String {
    line.split('`').step_by(2).collect()
}

/// The targets of a document's inline links: `[label](target)`.
fn link_targets(doc: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose(doc) {
        let line = without_code_spans(line);
        for (_, rest) in line.match_indices("](").map(|(i, _)| line.split_at(i + 2)) {
            if let Some(end) = rest.find(')') {
                targets.push(rest[..end].to_string());
            }
        }
    }
    targets
}

/// GitHub's anchors for a document's headings, a repeated one suffixed `-1`, `-2`, ...
fn heading_anchors(doc: &str) -> Vec<String> {
    let mut anchors: Vec<String> = Vec::new();
    for line in prose(doc) {
        let Some(text) = line
            .strip_prefix('#')
            .map(|l| l.trim_start_matches('#'))
            .and_then(|l| l.strip_prefix(' '))
        else {
            continue;
        };
        let base = anchor(text.trim());
        let repeats = anchors
            .iter()
            .filter(|a| {
                *a == &base
                    || a.strip_prefix(&format!("{base}-"))
                        .is_some_and(|n| n.parse::<u32>().is_ok())
            })
            .count();
        anchors.push(if repeats == 0 {
            base
        } else {
            format!("{base}-{repeats}")
        });
    }
    anchors
}

/// What is wrong with one relative link of `file`, if anything.
fn broken(file: &std::path::Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, fragment) = target.split_once('#').unwrap_or((target, ""));
    let resolved = if path.is_empty() {
        file.to_path_buf()
    } else {
        file.parent().expect("a file's directory").join(path)
    };
    if !resolved.exists() {
        return Some(format!("{target}: no such file"));
    }
    if fragment.is_empty() {
        return None;
    }
    if resolved.extension().is_none_or(|e| e != "md") {
        return Some(format!(
            "{target}: an anchor into a file that is not Markdown"
        ));
    }
    let doc = std::fs::read_to_string(&resolved).expect("a Markdown file");
    (!heading_anchors(&doc).iter().any(|a| a == fragment))
        .then(|| format!("{target}: no heading with the anchor #{fragment}"))
}

#[test]
fn every_relative_link_of_the_docs_resolves() {
    let files = markdown_files();
    assert!(files.len() > 10, "the README and the docs/ site: {files:?}");
    let mut links = 0;
    let mut problems = Vec::new();
    for file in &files {
        let doc = std::fs::read_to_string(file).expect("a Markdown file");
        for target in link_targets(&doc) {
            links += 1;
            if let Some(problem) = broken(file, &target) {
                let name = file.strip_prefix(repo()).unwrap_or(file);
                problems.push(format!("{}: {problem}", name.display()));
            }
        }
    }
    assert!(links > 50, "the docs link each other: {links} links");
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_link_check_tells_a_broken_link_from_a_good_one() {
    let readme = repo().join("README.md");
    assert_eq!(broken(&readme, "docs/index.md"), None);
    assert_eq!(broken(&readme, "#quick-start"), None);
    assert_eq!(broken(&readme, "https://example.com/x#y"), None);
    assert!(broken(&readme, "docs/nothing-here.md").is_some());
    assert!(broken(&readme, "#no-such-section").is_some());
    assert!(broken(&readme, "docs/reference.md#no-such-heading").is_some());
    assert_eq!(broken(&readme, "docs/reference.md#checks"), None);
    assert_eq!(
        heading_anchors("# A\n```sh\n# not a heading\n```\n## A\n### The auditor's `own` RBAC\n"),
        ["a", "a-1", "the-auditors-own-rbac"]
    );
    assert_eq!(
        link_targets("[a](x.md) `[b](code.md)` [c](y.md#z)\n```\n[d](fenced.md)\n```\n"),
        ["x.md", "y.md#z"]
    );
}

#[test]
fn the_readme_is_short() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, at most {README_MAX_LINES}: move the details into docs/"
    );
}
