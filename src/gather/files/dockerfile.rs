//! Reads a Dockerfile's final stage: its `ENTRYPOINT` and `CMD`, which start kopf when
//! the Deployment sets no command, and the kopf version it pins with `pip install`.

use crate::model::source::Location;

/// What a Dockerfile's final stage runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Image {
    /// The Dockerfile's path, as findings name it.
    pub(crate) path: String,
    /// The last `ENTRYPOINT`, as exec words, and where it is.
    pub(crate) entrypoint: Option<(Vec<String>, Location)>,
    /// The last `CMD`, as exec words, and where it is.
    pub(crate) cmd: Option<(Vec<String>, Location)>,
    /// The final stage's base image (`FROM` without `--platform` or `AS`), and where.
    pub(crate) base: Option<(String, Location)>,
}

impl Image {
    /// The words the container runs, as the kubelet builds them from the container's
    /// `command` and `args` and the image's `ENTRYPOINT` and `CMD`: `command` replaces
    /// the entrypoint (and drops `CMD`), `args` replaces `CMD`.
    pub(crate) fn effective(
        &self,
        command: Option<&[String]>,
        args: Option<&[String]>,
    ) -> (Vec<String>, Option<Location>) {
        let entry = self.entrypoint.as_ref();
        let cmd = self.cmd.as_ref();
        match (command, args) {
            (Some(c), Some(a)) => ([c, a].concat(), None),
            (Some(c), None) => (c.to_vec(), None),
            (None, Some(a)) => {
                let mut words = entry.map(|(w, _)| w.clone()).unwrap_or_default();
                words.extend(a.iter().cloned());
                (words, entry.map(|(_, l)| l.clone()))
            }
            (None, None) => {
                let mut words = entry.map(|(w, _)| w.clone()).unwrap_or_default();
                words.extend(cmd.map(|(w, _)| w.clone()).unwrap_or_default());
                let at = cmd.or(entry).map(|(_, l)| l.clone());
                (words, at)
            }
        }
    }
}

/// Reads a Dockerfile; `path` is how findings name it.
pub(crate) fn read(path: &str, text: &str) -> Image {
    let mut image = Image {
        path: path.to_string(),
        ..Image::default()
    };
    for (line, instruction) in instructions(text) {
        let (keyword, rest) = instruction
            .split_once(char::is_whitespace)
            .unwrap_or((instruction.as_str(), ""));
        let at = Location::new(path, line);
        match keyword.to_ascii_uppercase().as_str() {
            "FROM" => {
                image.entrypoint = None;
                image.cmd = None;
                image.base = rest
                    .split_whitespace()
                    .find(|w| !w.starts_with("--"))
                    .map(|w| (w.to_string(), at));
            }
            "ENTRYPOINT" => image.entrypoint = Some((words(rest.trim()), at)),
            "CMD" => image.cmd = Some((words(rest.trim()), at)),
            _ => {}
        }
    }
    image
}

/// Whether a text is a Dockerfile by its content: its first instruction, after comments
/// (parser directives are comments), blank lines and the `ARG`s that may come before
/// it, is `FROM`.
pub(crate) fn starts_with_from(text: &str) -> bool {
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let keyword = line.split_whitespace().next().unwrap_or("");
        if keyword.eq_ignore_ascii_case("ARG") {
            continue;
        }
        return keyword.eq_ignore_ascii_case("FROM");
    }
    false
}

/// Whether a file's name lets lint sniff its content for a Dockerfile: no extension,
/// or `dockerfile`/`containerfile` in it (`x-dockerfile`, `Containerfile.ubi`).
pub(crate) fn sniffable(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let has_extension = std::path::Path::new(name).extension().is_some();
    !has_extension || lower.contains("dockerfile") || lower.contains("containerfile")
}

/// The instructions with their first line, continuation lines joined, comments dropped.
fn instructions(text: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let mut current: Option<(u32, String)> = None;
    for (n, raw) in text.lines().enumerate() {
        let number = u32::try_from(n + 1).unwrap_or(u32::MAX);
        let trimmed = raw.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_none()) {
            continue;
        }
        let (body, continues) = match trimmed.strip_suffix('\\') {
            Some(body) => (body, true),
            None => (trimmed, false),
        };
        match &mut current {
            Some((_, text)) => {
                text.push(' ');
                text.push_str(body.trim());
            }
            None => current = Some((number, body.trim().to_string())),
        }
        if !continues && let Some(done) = current.take() {
            out.push(done);
        }
    }
    out.extend(current);
    out
}

/// The exec words of `CMD`/`ENTRYPOINT`: the JSON form as written, the shell form as
/// `/bin/sh -c TEXT` (as Docker runs it), or split on spaces when it has no shell syntax.
fn words(rest: &str) -> Vec<String> {
    if rest.starts_with('[')
        && let Ok(list) = serde_json::from_str::<Vec<String>>(rest)
    {
        return list;
    }
    let shell_syntax = rest.contains(['&', '|', ';', '$', '`', '>', '<', '"', '\'']);
    if shell_syntax {
        vec!["/bin/sh".into(), "-c".into(), rest.to_string()]
    } else {
        rest.split_whitespace().map(str::to_string).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dockerfile_is_told_by_its_first_instruction() {
        assert!(starts_with_from(
            "# syntax=docker/dockerfile:1\n\n# the operator\nFROM python:3.12\n"
        ));
        assert!(starts_with_from("ARG PY=3.12\nfrom python:${PY}\n"));
        assert!(!starts_with_from("all:\n\tcargo build\n"));
        assert!(!starts_with_from("# only comments\n"));
        assert!(!starts_with_from("RUN x\nFROM y\n"));
        assert!(sniffable("component-operator-dockerfile"));
        assert!(sniffable("Containerfile.ubi"));
        assert!(sniffable("x-DockerFile"));
        assert!(sniffable("Makefile"));
        assert!(!sniffable("notes.md"));
    }

    #[test]
    fn the_last_stage_cmd_in_exec_form_is_read_with_its_line() {
        let image = read(
            "Dockerfile",
            "FROM python:3.12 AS build\nCMD [\"make\"]\nFROM python:3.12-slim\nRUN pip install \\\n  kopf==1.45.2\nCMD [\"kopf\", \"run\", \"-A\", \"/app/op.py\"]\n",
        );
        let (words, at) = image.cmd.clone().expect("a CMD");
        assert_eq!(words, ["kopf", "run", "-A", "/app/op.py"]);
        assert_eq!(at, Location::new("Dockerfile", 6));
        assert!(image.entrypoint.is_none());
    }

    #[test]
    fn the_kubelet_rules_combine_command_args_entrypoint_and_cmd() {
        let image = read(
            "Dockerfile",
            "FROM x\nENTRYPOINT [\"kopf\", \"run\"]\nCMD [\"--standalone\", \"op.py\"]\n",
        );
        let words = |c: Option<&[String]>, a: Option<&[String]>| image.effective(c, a).0;
        assert_eq!(words(None, None), ["kopf", "run", "--standalone", "op.py"]);
        let args = ["-A".to_string(), "op.py".to_string()];
        assert_eq!(words(None, Some(&args)), ["kopf", "run", "-A", "op.py"]);
        let command = ["python".to_string(), "main.py".to_string()];
        assert_eq!(words(Some(&command), None), ["python", "main.py"]);
    }

    #[test]
    fn the_shell_form_runs_under_sh_when_it_has_shell_syntax() {
        let image = read("Dockerfile", "FROM x\nCMD kopf run -A op.py\n");
        assert_eq!(image.cmd.expect("cmd").0, ["kopf", "run", "-A", "op.py"]);
        let image = read("Dockerfile", "FROM x\nCMD kopf run -n \"$NS\" op.py\n");
        assert_eq!(
            image.cmd.expect("cmd").0,
            ["/bin/sh", "-c", "kopf run -n \"$NS\" op.py"]
        );
    }
}
