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

/// Every `crate::a::b` path a source names, as `[a, b]` (b may be an item, kept anyway).
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let path: Vec<String> = rest
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .next()
            .unwrap_or("")
            .split("::")
            .filter(|s| !s.is_empty())
            .take(2)
            .map(str::to_string)
            .collect();
        out.push(path);
    }
    out
}

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

#[test]
fn no_module_imports_from_a_higher_layer_or_a_sibling() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut violations = Vec::new();
    for file in files.iter().filter(|f| !is_test_file(f)) {
        let module = module_of(file);
        let Some(own) = module.first().and_then(|m| layer(m)) else {
            continue;
        };
        let text = std::fs::read_to_string(file).expect("readable");
        for path in crate_paths(&production_code(&text)) {
            let Some(target) = path.first() else { continue };
            let Some(theirs) = layer(target) else {
                continue;
            };
            let same_module = module.first() == Some(target);
            if !same_module && theirs >= own {
                violations.push(format!(
                    "{} imports crate::{}",
                    file.display(),
                    path.join("::")
                ));
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

#[test]
fn modules_import_each_other_without_cycles() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let known: BTreeSet<String> = files
        .iter()
        .filter(|f| !is_test_file(f))
        .map(|f| module_of(f).join("::"))
        .collect();
    for file in files.iter().filter(|f| !is_test_file(f)) {
        let from = module_of(file).join("::");
        let code = production_code(&std::fs::read_to_string(file).expect("readable"));
        let mut paths = crate_paths(&code);
        // `super::x` inside a submodule names a sibling of the same parent.
        if let Some(parent) = module_of(file)
            .first()
            .filter(|_| module_of(file).len() == 2)
        {
            let mut rest = code.as_str();
            while let Some(at) = rest.find("super::") {
                rest = &rest[at + "super::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                paths.push(vec![parent.clone(), name]);
            }
        }
        for path in paths {
            let two = path.join("::");
            let one = path.first().cloned().unwrap_or_default();
            let to = if known.contains(&two) { two } else { one };
            if to != from && known.contains(&to) && !from.starts_with(&format!("{to}::")) {
                graph.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    // Depth-first search for a back edge.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        stack.push(node.to_string());
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
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if state.get(node).copied().unwrap_or(0) == 0
            && let Some(cycle) = visit(node, &graph, &mut state, &mut Vec::new())
        {
            panic!(
                "modules import each other in a cycle: {}",
                cycle.join(" -> ")
            );
        }
    }
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
