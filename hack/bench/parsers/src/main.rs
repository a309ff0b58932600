//! Bench only: how fast three Rust Python parsers parse a tree of `.py` files, how many
//! files each fails, and which current-syntax samples (Python 3.12 to 3.14) each accepts.
//! Usage: `bench-parsers [--reps N] DIR...` (BENCHMARKS.md, "Choosing the Python parser").

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Rounds per parser; the best (fastest) round is reported, as the least disturbed one.
const ROUNDS: usize = 5;

/// One parser under test: its name and "parse this text, tell whether it was valid".
struct Candidate {
    name: &'static str,
    parse: fn(&mut State, &str) -> bool,
}

/// Per-parser state kept across files (tree-sitter's `Parser` is built once, as a real
/// caller would).
struct State {
    tree_sitter: tree_sitter::Parser,
}

fn ruff(_: &mut State, text: &str) -> bool {
    // As src/gather/files/python.rs calls it.
    black_box(ruff_python_parser::parse_module(text)).is_ok()
}

fn tree_sitter(state: &mut State, text: &str) -> bool {
    match black_box(state.tree_sitter.parse(text, None)) {
        Some(tree) => !tree.root_node().has_error(),
        None => false,
    }
}

fn rustpython(_: &mut State, text: &str) -> bool {
    black_box(rustpython_parser::parse(
        text,
        rustpython_parser::Mode::Module,
        "<bench>",
    ))
    .is_ok()
}

const CANDIDATES: [Candidate; 3] = [
    Candidate {
        name: "ruff_python_parser 0.0.10",
        parse: ruff,
    },
    Candidate {
        name: "tree-sitter 0.27.1 + tree-sitter-python 0.25.0",
        parse: tree_sitter,
    },
    Candidate {
        name: "rustpython-parser 0.4.0",
        parse: rustpython,
    },
];

/// Syntax samples: (label, source, whether a correct Python 3.14 parser accepts it).
const SAMPLES: [(&str, &str, bool); 9] = [
    (
        "3.10 match statement (control)",
        "match p:\n    case {\"x\": x, **rest}:\n        pass\n    case [1, *_]:\n        pass\n",
        true,
    ),
    (
        "3.11 except* (PEP 654)",
        "try:\n    pass\nexcept* ValueError as e:\n    pass\n",
        true,
    ),
    (
        "3.12 type alias (PEP 695)",
        "type Pair[T] = tuple[T, T]\ntype Id = int\n",
        true,
    ),
    (
        "3.12 generic def/class (PEP 695)",
        "def first[T](xs: list[T]) -> T:\n    return xs[0]\n\nclass Box[T: int, *Ts, **P]:\n    pass\n",
        true,
    ),
    (
        "3.12 nested f-strings (PEP 701)",
        "x = 1\ns = f\"{f\"{x}\"}\"\nt = f\"{'\\n'.join(['a'])}\"\nu = f\"{\n    x  # a comment\n}\"\n",
        true,
    ),
    (
        "3.13 type parameter defaults (PEP 696)",
        "def f[T = int](x: T) -> T:\n    return x\n",
        true,
    ),
    (
        "3.14 except A, B: (PEP 758)",
        "try:\n    pass\nexcept ValueError, TypeError:\n    pass\n",
        true,
    ),
    (
        "3.14 template strings (PEP 750)",
        "name = 'x'\ntemplate = t\"Hello {name}!\"\nraw = rt\"\\d{name}\"\n",
        true,
    ),
    (
        "invalid: `def f(:` (must be rejected)",
        "def f(:\n    pass\n",
        false,
    ),
];

/// All `.py` files under `dir`, sorted, read into memory (reading is not measured).
fn read_tree(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "py") {
                match std::fs::read_to_string(&path) {
                    Ok(text) => found.push((path, text)),
                    Err(e) => eprintln!("skipping {}: {e}", path.display()),
                }
            }
        }
    }
    found.sort();
    found
}

fn new_state() -> State {
    let mut tree_sitter = tree_sitter::Parser::new();
    tree_sitter
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .expect("tree-sitter-python's ABI matches tree-sitter's");
    State { tree_sitter }
}

/// Best of [`ROUNDS`] rounds of `reps` passes over all files; returns one pass's time.
fn time_parser(candidate: &Candidate, files: &[(PathBuf, String)], reps: usize) -> Duration {
    let mut state = new_state();
    let mut best = Duration::MAX;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        for _ in 0..reps {
            for (_, text) in files {
                black_box((candidate.parse)(&mut state, black_box(text)));
            }
        }
        best = best.min(start.elapsed());
    }
    best / reps as u32
}

fn bench_tree(dir: &Path, reps: usize) {
    let files = read_tree(dir);
    let bytes: usize = files.iter().map(|(_, t)| t.len()).sum();
    let lines: usize = files.iter().map(|(_, t)| t.lines().count()).sum();
    println!(
        "\n{}: {} files, {} lines, {:.3} MB; best of {ROUNDS} rounds of {reps} passes",
        dir.display(),
        files.len(),
        lines,
        bytes as f64 / 1e6
    );
    println!(
        "| parser | one pass (ms) | files/s | MB/s | files failed |\n|---|---:|---:|---:|---:|"
    );
    for candidate in &CANDIDATES {
        eprintln!("[bench-parsers] {}: {}", dir.display(), candidate.name);
        let mut state = new_state();
        let failed: Vec<&Path> = files
            .iter()
            .filter(|(_, text)| !(candidate.parse)(&mut state, text))
            .map(|(path, _)| path.as_path())
            .collect();
        let pass = time_parser(candidate, &files, reps);
        let secs = pass.as_secs_f64();
        println!(
            "| {} | {:.2} | {:.0} | {:.1} | {} |",
            candidate.name,
            secs * 1e3,
            files.len() as f64 / secs,
            bytes as f64 / 1e6 / secs,
            failed.len()
        );
        for path in failed {
            eprintln!("[bench-parsers]   failed: {}", path.display());
        }
    }
}

fn print_samples() {
    let header: Vec<&str> = CANDIDATES.iter().map(|c| c.name).collect();
    println!("\nSyntax samples (yes = accepted without error; expected in brackets)");
    println!("| sample | {} |", header.join(" | "));
    println!("|---|{}", "---|".repeat(CANDIDATES.len()));
    for (label, source, valid) in SAMPLES {
        let cells: Vec<&str> = CANDIDATES
            .iter()
            .map(|c| {
                let accepted = (c.parse)(&mut new_state(), source);
                match (accepted, accepted == valid) {
                    (true, true) => "yes",
                    (false, true) => "no (correct)",
                    (true, false) => "yes (WRONG)",
                    (false, false) => "**no**",
                }
            })
            .collect();
        println!(
            "| {label} [{}] | {} |",
            if valid { "yes" } else { "no" },
            cells.join(" | ")
        );
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut reps = 20;
    let mut dirs = Vec::new();
    while let Some(arg) = args.next() {
        if arg == "--reps" {
            reps = args
                .next()
                .and_then(|n| n.parse().ok())
                .expect("--reps takes a number");
        } else {
            dirs.push(PathBuf::from(arg));
        }
    }
    print_samples();
    for dir in &dirs {
        bench_tree(dir, reps);
    }
}
