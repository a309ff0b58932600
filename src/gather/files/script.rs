//! Reads a repository's shell scripts for the line that starts kopf: an image's `CMD`
//! (or a container's command) often runs a script of the repository
//! (`start-operator.sh`) whose last line is `exec kopf run operator.py`, which is how a
//! reviewer sees that the container runs kopf. Only those lines are kept.

use crate::model::source::Location;

/// Most lines that start kopf kept per script.
const MAX_RUNS_PER_SCRIPT: usize = 4;

/// A line of a script that starts kopf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ScriptRun {
    /// Where the line is.
    pub(crate) at: Location,
    /// Its words, `exec` and leading variable assignments dropped.
    pub(crate) words: Vec<String>,
}

/// The lines of the script `path` that start kopf (`kopf run`, `python -m kopf run`),
/// comments and heredocs aside.
pub(crate) fn kopf_runs(path: &str, text: &str) -> Vec<ScriptRun> {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let line = line.trim();
            if line.starts_with('#') || !mentions_kopf_run(line) {
                return None;
            }
            let words = command_words(line);
            mentions_kopf_run(&words.join(" ")).then(|| ScriptRun {
                at: Location::new(path, u32::try_from(i + 1).unwrap_or(u32::MAX)),
                words,
            })
        })
        .take(MAX_RUNS_PER_SCRIPT)
        .collect()
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
        let runs = kopf_runs("run.sh", "python -m kopf run -A op.py && echo done\n");
        assert_eq!(
            runs[0].words,
            ["python", "-m", "kopf", "run", "-A", "op.py"]
        );
        assert!(kopf_runs("x.sh", "echo kopf run\n# kopf run\nkopfx run\n").is_empty());
    }
}
