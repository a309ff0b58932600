//! The architecture, checked: layers run one way and modules import each other without
//! cycles, and the pure layers perform no I/O. Reads `src/` as text.
//!
//! catalog ← api ← model ← {gather, checks} ← evaluate ← publish ← reconcile ← cli

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module's layer; a module may import its own layer's parent modules
/// only if they are lower. Siblings on one layer (gather and checks) may not import
/// each other.
const LAYERS: [(&str, u8); 9] = [
    ("catalog", 0),
    ("api", 1),
    ("model", 2),
    ("gather", 3),
    ("checks", 3),
    ("evaluate", 4),
    ("publish", 5),
    ("reconcile", 6),
    ("cli", 7),
];

/// The layers that must not perform I/O.
const PURE: [&str; 5] = ["catalog", "api", "model", "checks", "evaluate"];

/// What I/O looks like in Rust source here.
const IO_MARKERS: [&str; 6] = [
    "kube::Client",
    "kube::api::Api",
    "Api<",
    ".await",
    "async fn",
    "tokio::",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file, two levels deep (`checks::events`, `api`).
fn module_of(path: &Path) -> Vec<String> {
    let rel = path.strip_prefix(src()).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .filter(|p| p != "mod")
        .collect();
    parts.truncate(2);
    parts
}

/// Whether a file holds only tests (`tests.rs`, `testing.rs`).
fn is_test_file(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n == "tests.rs" || n == "testing.rs")
}

/// The source without `#[cfg(test)]` items at the end and without comments.
fn production_code(text: &str) -> String {
    let cut = text.find("#[cfg(test)]\nmod tests").unwrap_or(text.len());
    text[..cut]
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

#[test]
fn no_module_imports_from_a_higher_layer_or_a_sibling() {
    let mut violations = Vec::new();
    for (from, targets) in imports(&production_files()) {
        let Some(own) = from.first().and_then(|m| layer(m)) else {
            continue;
        };
        for to in targets {
            let Some(target) = to.first() else { continue };
            let Some(theirs) = layer(target) else {
                continue;
            };
            if from.first() != Some(target) && theirs >= own {
                violations.push(format!("{} imports {}", from.join("::"), to.join("::")));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "imports against the layers:\n{}",
        violations.join("\n")
    );
}

#[test]
fn the_pure_layers_perform_no_io() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut violations = Vec::new();
    for file in files.iter().filter(|f| !is_test_file(f)) {
        let module = module_of(file);
        if !module.first().is_some_and(|m| PURE.contains(&m.as_str())) {
            continue;
        }
        let code = production_code(&std::fs::read_to_string(file).expect("readable"));
        for marker in IO_MARKERS {
            if code.contains(marker) {
                violations.push(format!("{}: {marker}", file.display()));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "I/O in a pure layer:\n{}",
        violations.join("\n")
    );
}

/// A file's full module path (`cli::ci`, `gather::files::python`, `cli` for
/// `cli/mod.rs`) from its path relative to `src/`.
fn module_path(rel: &Path) -> Vec<String> {
    rel.iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .filter(|p| p != "mod" && p != "lib" && p != "main")
        .collect()
}

/// Splits `text` at the commas outside braces.
fn top_level_items(text: &str) -> Vec<&str> {
    let (mut depth, mut from, mut out) = (0usize, 0usize, Vec::new());
    for (at, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&text[from..at]);
                from = at + 1;
            }
            _ => {}
        }
    }
    out.push(&text[from..]);
    out.into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Every path a `use` tree names, groups expanded: `super::{a, b::{c, d}}` gives
/// `super::a`, `super::b::c` and `super::b::d`. `self` in a group names the group's
/// own path; a glob names the path it is taken from; `as` renames are dropped.
fn use_tree_paths(tree: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    for item in top_level_items(tree) {
        if let Some(open) = item.find('{') {
            let head = item[..open].trim().trim_end_matches("::");
            let inner = item[open + 1..].trim_end().trim_end_matches('}');
            let mut path = prefix.to_vec();
            path.extend(segments(head));
            use_tree_paths(inner, &path, out);
        } else {
            let leaf = item.split_whitespace().next().unwrap_or("");
            let mut path = prefix.to_vec();
            let top = path.is_empty();
            path.extend(segments(leaf).filter(|s| s != "self" || top));
            if path.last().is_some_and(|s| s == "*") {
                path.pop();
            }
            out.push(path);
        }
    }
}

/// The `::`-separated segments of a path, without spaces.
fn segments(path: &str) -> impl Iterator<Item = String> + '_ {
    path.split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The `use` declarations of `code` (with any visibility) as their trees, and the code
/// with them taken out.
fn use_declarations(code: &str) -> (Vec<String>, String) {
    let (mut trees, mut rest, mut text) = (Vec::new(), String::new(), code);
    while let Some(at) = find_use(text) {
        rest.push_str(&text[..at]);
        let body = &text[at + "use ".len()..];
        let end = body.find(';').unwrap_or(body.len());
        trees.push(body[..end].to_string());
        text = body.get(end + 1..).unwrap_or("");
    }
    rest.push_str(text);
    (trees, rest)
}

/// Where the next `use ` keyword starts a declaration: at a line's start, after a
/// visibility, or after an attribute or a brace.
fn find_use(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text[from..].find("use ") {
        let at = from + found;
        let before = text[..at].trim_end();
        let starts = before.is_empty()
            || before.ends_with(['\n', ';', '{', '}', ']', ')'])
            || before.ends_with("pub");
        let after_word = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        if starts && after_word {
            return Some(at);
        }
        from = at + "use ".len();
    }
    None
}

/// The `crate::`, `super::` and `self::` paths written inline in `code` (outside `use`).
fn inline_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for root in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(found) = code[from..].find(root) {
            let at = from + found;
            from = at + root.len();
            let word_start = code[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == ':'));
            if !word_start {
                continue;
            }
            let path: String = code[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            out.push(segments(&path).collect());
        }
    }
    out
}

/// `path` as written in module `from`, made absolute (without `crate`); `None` for a
/// path into another crate.
fn resolve(from: &[String], path: &[String], known: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    let (first, rest) = path.split_first()?;
    let mut base: Vec<String> = match first.as_str() {
        "crate" => Vec::new(),
        "self" => from.to_vec(),
        "super" => from[..from.len().checked_sub(1)?].to_vec(),
        _ => {
            let mut child = from.to_vec();
            child.push(first.clone());
            if !known.contains(&child) {
                return None;
            }
            child
        }
    };
    let mut rest = rest;
    if first == "super" {
        while let Some(("super", more)) = rest.split_first().map(|(h, t)| (h.as_str(), t)) {
            base.pop();
            rest = more;
        }
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The longest known module a resolved path lies in.
fn owning_module(path: &[String], known: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| known.contains(p))
}

/// Every module each production file imports, resolved: `use` trees (grouped and
/// nested) and inline paths alike. `files` are (path relative to `src/`, source).
fn imports(files: &[(PathBuf, String)]) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let known: BTreeSet<Vec<String>> = files.iter().map(|(p, _)| module_path(p)).collect();
    let mut graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (file, text) in files {
        let from = module_path(file);
        let (trees, rest) = use_declarations(&production_code(text));
        let mut paths = Vec::new();
        for tree in &trees {
            use_tree_paths(tree, &[], &mut paths);
        }
        paths.extend(inline_paths(&rest));
        for path in paths {
            let Some(to) = resolve(&from, &path, &known).and_then(|p| owning_module(&p, &known))
            else {
                continue;
            };
            // A module naming its own parent's items is not an edge (`super::Error`).
            if to != from && !from.starts_with(&to) {
                graph.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    graph
}

/// A cycle in `graph`, found by depth-first search for a back edge.
fn find_cycle(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Option<Vec<String>> {
    fn visit(
        node: &Vec<String>,
        graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        state.insert(node.clone(), 1);
        stack.push(node.clone());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|s| s == next).unwrap_or(0);
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(next, graph, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(node.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if state.get(node).copied().unwrap_or(0) == 0
            && let Some(cycle) = visit(node, graph, &mut state, &mut Vec::new())
        {
            return Some(cycle.iter().map(|m| m.join("::")).collect());
        }
    }
    None
}

/// The production files under `src/`, each with its path relative to `src/`.
fn production_files() -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files
        .into_iter()
        .filter(|f| !is_test_file(f))
        .map(|f| {
            let text = std::fs::read_to_string(&f).expect("readable");
            (
                f.strip_prefix(src()).expect("under src").to_path_buf(),
                text,
            )
        })
        .collect()
}

#[test]
fn modules_import_each_other_without_cycles() {
    let graph = imports(&production_files());
    assert!(
        graph.values().map(BTreeSet::len).sum::<usize>() > 50,
        "read the imports: {graph:?}"
    );
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "modules import each other in a cycle: {}",
            cycle.join(" -> ")
        );
    }
}

/// A planted tree: `(path, source)` pairs as `production_files` gives them.
fn planted(files: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
    files
        .iter()
        .map(|(p, s)| (PathBuf::from(p), (*s).to_string()))
        .collect()
}

#[test]
fn grouped_and_nested_use_trees_are_expanded() {
    let mut paths = Vec::new();
    use_tree_paths(
        "super::{a, b::{c, d as e}, self}, crate::x::{y::*, z}",
        &[],
        &mut paths,
    );
    let joined: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        joined,
        [
            "super::a",
            "super::b::c",
            "super::b::d",
            "super",
            "crate::x::y",
            "crate::x::z"
        ]
    );
}

#[test]
fn a_planted_cycle_through_grouped_imports_is_found() {
    let files = planted(&[
        ("lib.rs", "mod a;\n"),
        ("a/mod.rs", "mod b;\nmod c;\nmod d;\nuse b::Thing;\n"),
        (
            "a/b.rs",
            "use super::{\n    d::Helper,\n    c::{Other, self},\n};\npub struct Thing;\n",
        ),
        (
            "a/c.rs",
            "pub(crate) use crate::a::{d, b::{Thing as T}};\npub struct Other;\n",
        ),
        ("a/d.rs", "use std::{fmt, io};\npub struct Helper;\n"),
    ]);
    let graph = imports(&files);
    let cycle = find_cycle(&graph).expect("the b <-> c cycle");
    assert!(
        cycle.contains(&"a::b".to_string()) && cycle.contains(&"a::c".to_string()),
        "{cycle:?}"
    );
    // The same tree without c's import back has no cycle.
    let mut acyclic = files.clone();
    acyclic[3].1 = "pub(crate) use crate::a::{d};\npub struct Other;\n".to_string();
    assert_eq!(
        find_cycle(&imports(&acyclic)),
        None,
        "{:?}",
        imports(&acyclic)
    );
}

#[test]
fn a_planted_cycle_through_a_nested_crate_group_is_found() {
    let files = planted(&[
        ("x/mod.rs", "pub mod p;\npub mod q;\n"),
        ("x/p.rs", "use crate::{api::A, x::{q::{Q}}};\n"),
        ("x/q.rs", "fn f() { let _ = super::p::make(); }\n"),
        ("api.rs", "pub struct A;\n"),
    ]);
    let cycle = find_cycle(&imports(&files)).expect("the p <-> q cycle");
    assert_eq!(cycle.first(), cycle.last(), "{cycle:?}");
    assert!(cycle.contains(&"x::p".to_string()), "{cycle:?}");
}

/// A check `area.some-name` lives in one place: the function `some_name` in
/// `checks/<area>.rs` (or, for an RBAC permission, `model/needs.rs`), or the module
/// `checks/<area>/<some_name>.rs`, which holds its deciders (`fn live`, `fn source`,
/// or both: every check decided two ways has one): then no other file of `checks/`
/// may hold a `fn some_name`, a second decider.
#[test]
fn every_check_id_has_a_function_or_a_module_named_after_it() {
    let catalog = std::fs::read_to_string(src().join("catalog/checks.rs")).expect("catalog");
    let ids: Vec<&str> = catalog
        .lines()
        .filter_map(|l| {
            l.split('"')
                .nth(1)
                .filter(|s| s.contains('.') && l.contains(" = \""))
        })
        .collect();
    assert!(ids.len() > 30, "read the check IDs: {ids:?}");
    let mut checks_files = Vec::new();
    rust_files(&src().join("checks"), &mut checks_files);
    let mut missing = Vec::new();
    let mut modules = 0;
    for id in ids {
        let (area, name) = id.split_once('.').expect("area.name");
        let snake = name.replace('-', "_");
        let function = format!("fn {snake}(");
        let module = src().join(format!("checks/{area}/{snake}.rs"));
        if let Ok(text) = std::fs::read_to_string(&module) {
            modules += 1;
            if !(text.contains("fn live(") || text.contains("fn source(")) {
                missing.push(format!(
                    "{id}: checks/{area}/{snake}.rs holds neither `fn live(` nor `fn source(`"
                ));
            }
            for other in checks_files
                .iter()
                .filter(|f| **f != module && !is_test_file(f))
            {
                let code = production_code(&std::fs::read_to_string(other).expect("readable"));
                if code.contains(&function) {
                    missing.push(format!(
                        "{id}: {} decides it outside checks/{area}/{snake}.rs",
                        other.display()
                    ));
                }
            }
            continue;
        }
        let homes = [
            src().join(format!("checks/{area}.rs")),
            src().join("model/needs.rs"),
        ];
        let found = homes
            .iter()
            .any(|h| std::fs::read_to_string(h).is_ok_and(|text| text.contains(&function)));
        if !found {
            missing.push(format!(
                "{id}: no `{function}` in checks/{area}.rs or model/needs.rs, and no checks/{area}/{snake}.rs"
            ));
        }
    }
    assert!(
        modules >= 4,
        "the checks with a module of their own: {modules}"
    );
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn a_grouped_crate_import_is_seen_by_the_layer_rule() {
    let files = planted(&[
        ("checks/mod.rs", "mod x;\n"),
        ("checks/x.rs", "use crate::{model::M, gather::{G, self}};\n"),
        ("model.rs", "pub struct M;\n"),
        ("gather.rs", "pub struct G;\n"),
    ]);
    let graph = imports(&files);
    let from = vec!["checks".to_string(), "x".to_string()];
    let targets: Vec<String> = graph[&from].iter().map(|m| m.join("::")).collect();
    assert_eq!(targets, ["gather", "model"]);
}
