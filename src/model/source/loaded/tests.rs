use super::*;
use crate::model::source::ParseProblem;

fn import(file: &str, module: &str, level: u32, names: &[&str]) -> Import {
    Import {
        location: Location::new(file, 1),
        module: module.into(),
        level,
        names: names.iter().map(|n| n.to_string()).collect(),
    }
}

fn facts(imports: Vec<Import>) -> SourceFacts {
    SourceFacts {
        imports,
        ..SourceFacts::default()
    }
}

fn files(loaded: Loaded) -> Vec<String> {
    match loaded {
        Loaded::Files(f) => f.into_iter().collect(),
        Loaded::Unknown => panic!("expected the files loaded"),
    }
}

#[test]
fn a_path_follows_absolute_imports_and_leaves_out_the_rest() {
    let python = [
        "mainOperator.py",
        "helpers.py",
        "emptyOperator.py",
        "Archive/basic-op.py",
    ];
    let facts = facts(vec![
        import("mainOperator.py", "helpers", 0, &[]),
        import("mainOperator.py", "kubernetes", 0, &[]),
        import("Archive/basic-op.py", "helpers", 0, &[]),
    ]);
    let loaded = facts
        .import_graph(&python)
        .loaded_from(&[Entry::Path("/app/mainOperator.py".into())]);
    assert_eq!(files(loaded), ["helpers.py", "mainOperator.py"]);
}

#[test]
fn a_container_path_matches_the_longest_tail_a_file_has() {
    let python = ["src/op/main.py", "op/main.py", "other/main.py"];
    let loaded = facts(vec![])
        .import_graph(&python)
        .loaded_from(&[Entry::Path("/app/src/op/main.py".into())]);
    assert_eq!(files(loaded), ["src/op/main.py"]);
    // Only the file's name matches: every file of that name may be the one copied.
    let loaded = facts(vec![])
        .import_graph(&python)
        .loaded_from(&[Entry::Path("/srv/main.py".into())]);
    assert_eq!(
        files(loaded),
        ["op/main.py", "other/main.py", "src/op/main.py"]
    );
}

#[test]
fn a_module_loads_its_packages_and_from_imports_load_submodules() {
    let python = [
        "src/pkg/__init__.py",
        "src/pkg/handlers.py",
        "src/pkg/util/__init__.py",
        "src/pkg/util/k8s.py",
        "src/pkg/unused.py",
    ];
    let facts = facts(vec![import("src/pkg/handlers.py", "pkg.util", 0, &["k8s"])]);
    let loaded = facts
        .import_graph(&python)
        .loaded_from(&[Entry::Module("pkg.handlers".into())]);
    assert_eq!(
        files(loaded),
        [
            "src/pkg/__init__.py",
            "src/pkg/handlers.py",
            "src/pkg/util/__init__.py",
            "src/pkg/util/k8s.py",
        ]
    );
}

#[test]
fn python_dash_m_runs_a_package_s_main() {
    let python = [
        "op/__init__.py",
        "op/__main__.py",
        "op/handlers.py",
        "op/unused.py",
    ];
    let facts = facts(vec![import("op/__main__.py", "handlers", 1, &[])]);
    let loaded = facts
        .import_graph(&python)
        .loaded_from(&[Entry::Main("op".into())]);
    assert_eq!(
        files(loaded),
        ["op/__init__.py", "op/__main__.py", "op/handlers.py"]
    );
}

#[test]
fn relative_imports_resolve_from_the_importing_package() {
    let python = [
        "op/__init__.py",
        "op/main.py",
        "op/sub/__init__.py",
        "op/sub/a.py",
        "op/b.py",
        "b.py",
    ];
    let facts = facts(vec![
        import("op/main.py", "", 1, &["b"]),
        import("op/main.py", "sub.a", 1, &[]),
        import("op/sub/a.py", "", 2, &["b"]),
    ]);
    let loaded = facts
        .import_graph(&python)
        .loaded_from(&[Entry::Path("op/main.py".into())]);
    assert_eq!(
        files(loaded),
        [
            "op/__init__.py",
            "op/b.py",
            "op/main.py",
            "op/sub/__init__.py",
            "op/sub/a.py"
        ]
    );
}

#[test]
fn what_cannot_be_followed_leaves_every_file_in() {
    let python = ["main.py", "plugin.py"];
    let none = facts(vec![]);
    assert_eq!(none.import_graph(&python).loaded_from(&[]), Loaded::Unknown);
    assert_eq!(
        none.import_graph(&python)
            .loaded_from(&[Entry::Path("missing.py".into())]),
        Loaded::Unknown
    );
    let dynamic = SourceFacts {
        dynamic_imports: vec![Location::new("main.py", 3)],
        ..SourceFacts::default()
    };
    assert_eq!(
        dynamic
            .import_graph(&python)
            .loaded_from(&[Entry::Path("main.py".into())]),
        Loaded::Unknown
    );
    let broken = SourceFacts {
        problems: vec![ParseProblem {
            location: Location::new("main.py", 1),
            message: "invalid syntax".into(),
        }],
        ..SourceFacts::default()
    };
    assert_eq!(
        broken
            .import_graph(&python)
            .loaded_from(&[Entry::Path("main.py".into())]),
        Loaded::Unknown
    );
}

#[test]
fn import_cycles_end() {
    let python = ["a.py", "b.py"];
    let facts = facts(vec![
        import("a.py", "b", 0, &[]),
        import("b.py", "a", 0, &[]),
    ]);
    let loaded = facts
        .import_graph(&python)
        .loaded_from(&[Entry::Path("a.py".into())]);
    assert_eq!(files(loaded), ["a.py", "b.py"]);
}

#[test]
fn only_keeps_the_facts_of_the_files_given() {
    let mut facts = facts(vec![import("a.py", "b", 0, &[])]);
    facts.problems.push(ParseProblem {
        location: Location::new("old.py", 1),
        message: "invalid syntax".into(),
    });
    facts.files = 3;
    let kept = facts.only(&["a.py".to_string()].into_iter().collect());
    assert_eq!(kept.imports.len(), 1);
    assert!(kept.problems.is_empty());
    assert_eq!(kept.files, 1);
}

#[test]
fn the_comparisons_are_bounded_and_running_out_leaves_every_file_in() {
    let names: Vec<String> = (0..10).map(|i| format!("d{i}/op.py")).collect();
    let python: Vec<&str> = names.iter().map(String::as_str).collect();
    let facts = facts(vec![]);
    let graph = facts.import_graph(&python);
    graph.budget.set(25);
    // Ten candidates of that name: compared, all kept.
    assert_eq!(
        files(graph.loaded_from(&[Entry::Path("op.py".into())])),
        names
    );
    assert_eq!(graph.budget.get(), 15);
    // Then twice more: the second runs out.
    assert!(matches!(
        graph.loaded_from(&[Entry::Path("op.py".into())]),
        Loaded::Files(_)
    ));
    assert_eq!(
        graph.loaded_from(&[Entry::Path("op.py".into())]),
        Loaded::Unknown
    );
}
