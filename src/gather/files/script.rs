//! Reads a repository's shell scripts for the line that starts kopf: an image's `CMD`
//! (or a container's command) often runs a script of the repository
//! (`start-operator.sh`) whose last line is `exec kopf run operator.py`, which is how a
//! reviewer sees that the container runs kopf. Only those lines are kept, and the
//! lines that hand over to another script (`exec ./run.sh`), which lint follows a few
//! scripts deep.

use crate::model::source::Location;

/// Most lines that start kopf kept per script.
const MAX_RUNS_PER_SCRIPT: usize = 4;
/// Most lines that run another script kept per script.
const MAX_HANDOFFS_PER_SCRIPT: usize = 4;

/// A line of a script that starts kopf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ScriptRun {
    /// Where the line is.
    pub(crate) at: Location,
    /// Its words, `exec` and leading variable assignments dropped.
    pub(crate) words: Vec<String>,
}

/// The settings a `kopf-opt.sh` gives the run script of the `python-kopf-s2i` builder
/// images (github.com/rhpds/python-kopf-s2i, `s2i/bin/run`), which sources it and then
/// runs `kopf run --liveness=http://0.0.0.0:8080/healthz $KOPF_OPTIONS
/// ${KOPF_OPERATORS:-operator.py}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct S2iOptions {
    /// Where the file is.
    pub(crate) path: String,
    /// `KOPF_OPTIONS`, split.
    pub(crate) options: Vec<String>,
    /// `KOPF_STANDALONE=true`.
    pub(crate) standalone: bool,
    /// `KOPF_NAMESPACE`.
    pub(crate) namespace: Option<String>,
    /// `KOPF_NAMESPACED=true`: the operator's own namespace.
    pub(crate) namespaced: bool,
    /// `KOPF_PEERING`.
    pub(crate) peering: Option<String>,
    /// `KOPF_OPERATORS`, split.
    pub(crate) operators: Vec<String>,
}

impl S2iOptions {
    /// The command line the run script builds, with `own_namespace` for
    /// `KOPF_NAMESPACED` (the pod's own namespace; `--priority` left out: the script
    /// derives it from the pod's IP).
    pub(crate) fn command_line(&self, own_namespace: &str) -> Vec<String> {
        let mut words = vec![
            "kopf".to_string(),
            "run".to_string(),
            "--liveness=http://0.0.0.0:8080/healthz".to_string(),
        ];
        words.extend(self.options.iter().cloned());
        if self.standalone {
            words.push("--standalone".into());
        }
        match (&self.namespace, self.namespaced) {
            (Some(ns), _) => words.push(format!("--namespace={ns}")),
            (None, true) => words.push(format!("--namespace={own_namespace}")),
            (None, false) => words.push("--all-namespaces".into()),
        }
        if let Some(peering) = &self.peering {
            words.push(format!("--peering={peering}"));
        }
        if self.operators.is_empty() {
            words.push("operator.py".into());
        } else {
            words.extend(self.operators.iter().cloned());
        }
        words
    }
}

/// The `KOPF_*` assignments of a `kopf-opt.sh` (plain `NAME=value` lines, quotes
/// removed; anything else is left alone).
pub(crate) fn s2i_options(path: &str, text: &str) -> S2iOptions {
    let mut out = S2iOptions {
        path: path.to_string(),
        ..S2iOptions::default()
    };
    for (_, line) in logical_lines(text) {
        let line = line.trim();
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let value = command_words(value).join(" ");
        let split = || value.split_whitespace().map(str::to_string).collect();
        match name {
            "KOPF_OPTIONS" => out.options = split(),
            "KOPF_STANDALONE" => out.standalone = value == "true",
            "KOPF_NAMESPACE" => out.namespace = Some(value.clone()).filter(|v| !v.is_empty()),
            "KOPF_NAMESPACED" => out.namespaced = value == "true",
            "KOPF_PEERING" => out.peering = Some(value.clone()).filter(|v| !v.is_empty()),
            "KOPF_OPERATORS" => out.operators = split(),
            _ => {}
        }
    }
    out
}

/// The lines of the script `path` that start kopf (`kopf run`, `python -m kopf run`),
/// a line continued with `\` read whole, comments aside.
pub(crate) fn kopf_runs(path: &str, text: &str) -> Vec<ScriptRun> {
    logical_lines(text)
        .into_iter()
        .filter_map(|(number, line)| {
            let line = line.trim();
            if line.starts_with('#') || !mentions_kopf_run(line) {
                return None;
            }
            let words = command_words(line);
            mentions_kopf_run(&words.join(" ")).then(|| ScriptRun {
                at: Location::new(path, number),
                words,
            })
        })
        .take(MAX_RUNS_PER_SCRIPT)
        .collect()
}

/// The lines of the script `path` that start kopf ([`kopf_runs`]) and, after them, the
/// lines that run another script of the repository (a word ending in `.sh` among the
/// first three of the command: `exec ./run.sh`, `bash /app/start.sh`, `. ./env.sh`).
pub(crate) fn starts(path: &str, text: &str) -> Vec<ScriptRun> {
    let handoffs = logical_lines(text)
        .into_iter()
        .filter_map(|(number, line)| {
            let line = line.trim();
            if line.starts_with('#') || line.starts_with("echo ") || line.starts_with("printf ") {
                return None;
            }
            let words = command_words(line);
            let hands_off = !starts_kopf(&words) && names_script(&words).is_some();
            hands_off.then(|| ScriptRun {
                at: Location::new(path, number),
                words,
            })
        })
        .take(MAX_HANDOFFS_PER_SCRIPT);
    let mut out = kopf_runs(path, text);
    out.extend(handoffs);
    out
}

/// Whether a command's words start kopf (`kopf run`, `python -m kopf run`).
pub(crate) fn starts_kopf(words: &[String]) -> bool {
    mentions_kopf_run(&words.join(" "))
}

/// The file name of the script a command runs: a word ending in `.sh` among its first
/// three (`./start.sh`, `sh /app/start.sh`, `bash -e run.sh`).
pub(crate) fn names_script(words: &[String]) -> Option<String> {
    words
        .iter()
        .take(3)
        .map(|w| w.rsplit('/').next().unwrap_or(w))
        .find(|w| w.ends_with(".sh"))
        .map(str::to_string)
}

/// Most physical lines joined into one logical line.
const MAX_CONTINUED_LINES: usize = 64;

/// The script's logical lines with the number of the first physical line of each: a
/// line ending in `\` goes on with the next (at most [`MAX_CONTINUED_LINES`]).
fn logical_lines(text: &str) -> Vec<(u32, String)> {
    let mut out: Vec<(u32, String)> = Vec::new();
    let mut current: Option<(u32, String, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        let number = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let (continues, body) = match line.trim_end().strip_suffix('\\') {
            Some(body) => (true, body),
            None => (false, line),
        };
        let (start, mut joined, count) = current.take().unwrap_or((number, String::new(), 0));
        joined.push_str(body);
        joined.push(' ');
        if continues && count + 1 < MAX_CONTINUED_LINES {
            current = Some((start, joined, count + 1));
        } else {
            out.push((start, joined));
        }
    }
    out.extend(current.map(|(start, joined, _)| (start, joined)));
    out
}

/// Whether `line` runs `kopf run` as a command (not in an `echo`).
fn mentions_kopf_run(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    words.windows(2).any(|w| {
        let base = w[0].rsplit('/').next().unwrap_or(w[0]);
        base == "kopf" && w[1] == "run"
    }) && !line.starts_with("echo ")
        && !line.starts_with("printf ")
}

/// The words of a simple command line: split on blanks outside quotes, quotes removed,
/// up to the first `;`, `&&`, `||`, `|` or `#` outside quotes, with a leading `exec` and
/// `NAME=value` assignments dropped.
fn command_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (None, ';' | '|' | '#') => break,
            (None, '&') if chars.peek() == Some(&'&') => break,
            (None, c) if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut current));
                    started = false;
                }
            }
            (None, c) => {
                current.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(current);
    }
    let skip = words
        .iter()
        .take_while(|w| *w == "exec" || is_assignment(w))
        .count();
    words.split_off(skip)
}

/// Whether `word` is a `NAME=value` assignment.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_s2i_options_file_makes_the_run_scripts_command_line() {
        let opts = s2i_options(
            "op/kopf-opt.sh",
            "#!/bin/sh\n# Do not coordinate.\nKOPF_STANDALONE=true\nKOPF_NAMESPACED=true\nKOPF_OPTIONS=\"--log-format=json\"\n",
        );
        assert_eq!(
            opts.command_line("team"),
            [
                "kopf",
                "run",
                "--liveness=http://0.0.0.0:8080/healthz",
                "--log-format=json",
                "--standalone",
                "--namespace=team",
                "operator.py"
            ]
        );
        let opts = s2i_options("kopf-opt.sh", "KOPF_PEERING=\"babylon-notifier\"\n");
        assert_eq!(
            opts.command_line("team")[3..],
            [
                "--all-namespaces",
                "--peering=babylon-notifier",
                "operator.py"
            ]
        );
    }

    #[test]
    fn the_line_that_starts_kopf_is_found_and_split() {
        let runs = kopf_runs(
            "start-operator.sh",
            "#!/bin/sh\nset -e\n# kopf run is below\necho \"kopf run starting\"\nexport X=1\nexec env=1 kopf run --standalone -n \"$NS\" /app/operator.py # run it\n",
        );
        assert_eq!(runs.len(), 1, "{runs:?}");
        assert_eq!(runs[0].at.line, 6);
        assert_eq!(
            runs[0].words,
            [
                "kopf",
                "run",
                "--standalone",
                "-n",
                "$NS",
                "/app/operator.py"
            ]
        );
        let runs = kopf_runs(
            "run.sh",
            "cd ./operator\n\nexec kopf run \\\n  --standalone \\\n  --all-namespaces \\\n  operator.py\n",
        );
        assert_eq!(runs[0].at.line, 3);
        assert_eq!(
            runs[0].words,
            [
                "kopf",
                "run",
                "--standalone",
                "--all-namespaces",
                "operator.py"
            ]
        );
        let runs = kopf_runs("run.sh", "python -m kopf run -A op.py && echo done\n");
        assert_eq!(
            runs[0].words,
            ["python", "-m", "kopf", "run", "-A", "op.py"]
        );
        assert!(kopf_runs("x.sh", "echo kopf run\n# kopf run\nkopfx run\n").is_empty());
    }
}
