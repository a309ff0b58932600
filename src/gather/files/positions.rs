//! The line each field of a YAML document is written on, so that a finding about
//! `resources.limits.memory` points at that line and not at the document's first: a
//! code-scanning annotation lands where the fix goes.
//!
//! A scan of the block style Kubernetes manifests are written in (indentation, `key:`,
//! `- ` items), not a YAML parser: the document was parsed already, this only finds
//! lines. What it cannot follow (flow collections, anchors, multi-line keys) keeps the
//! line of the nearest field it could, at worst the document's.

/// `path → line` of one document: paths as [`FieldPath`] writes them
/// (`spec.template.spec.containers[0].resources`), lines in the file, first occurrence
/// of each path kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldLines {
    lines: Vec<(String, u32)>,
}

/// Most fields indexed in one document: a bound on a hostile file's cost.
const MAX_FIELDS: usize = 20_000;

impl FieldLines {
    /// The line of `path`, or of its nearest ancestor that has one.
    pub(crate) fn line_of(&self, path: &str) -> Option<u32> {
        let mut path = path;
        loop {
            if let Some((_, line)) = self.lines.iter().find(|(p, _)| p == path) {
                return Some(*line);
            }
            path = parent(path)?;
        }
    }
}

/// `a.b[0].c` → `a.b[0]` → `a.b` → `a` → none.
fn parent(path: &str) -> Option<&str> {
    let cut = path.rfind(['.', '['])?;
    Some(&path[..cut])
}

/// One open collection of the scan.
struct Open {
    /// The column of its key, or of its item's dash.
    indent: usize,
    /// Its full path.
    path: String,
    /// Whether it is a sequence item (`- `) rather than a key.
    item: bool,
    /// How many items it has had, when it holds a sequence.
    items: usize,
}

/// The field lines of `text`, a document whose first line is line `first` of its file.
pub(crate) fn field_lines(text: &str, first: u32) -> FieldLines {
    let mut out = FieldLines::default();
    let mut open: Vec<Open> = Vec::new();
    let mut block_scalar: Option<usize> = None;
    for (n, raw) in text.lines().enumerate() {
        let line = first.saturating_add(u32::try_from(n).unwrap_or(u32::MAX));
        let indent = raw.len() - raw.trim_start_matches(' ').len();
        let content = raw.trim();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        if block_scalar.is_some_and(|owner| indent > owner) {
            continue;
        }
        if out.lines.len() >= MAX_FIELDS {
            break;
        }
        block_scalar = scan_line(&mut open, &mut out, indent, content, line);
    }
    out
}

/// One line of [`field_lines`]: its items and key recorded. Returns the column of the
/// key whose value is a block scalar (`|`, `>`) starting on the next line, if any.
fn scan_line(
    open: &mut Vec<Open>,
    out: &mut FieldLines,
    mut indent: usize,
    mut content: &str,
    line: u32,
) -> Option<usize> {
    while let Some(rest) = dash(content) {
        while open
            .last()
            .is_some_and(|o| o.indent > indent || (o.indent == indent && o.item))
        {
            open.pop();
        }
        let index = open.last_mut().map_or(0, |o| {
            o.items += 1;
            o.items - 1
        });
        let path = format!("{}[{index}]", open.last().map_or("", |o| o.path.as_str()));
        record(out, &path, line);
        open.push(Open {
            indent,
            path,
            item: true,
            items: 0,
        });
        let skipped = content.len() - rest.len();
        indent += skipped;
        content = rest.trim_start();
        indent += rest.len() - content.len();
    }
    let (key, value) = key_value(content)?;
    while open.last().is_some_and(|o| o.indent >= indent) {
        open.pop();
    }
    let path = match open.last() {
        Some(o) => format!("{}.{key}", o.path),
        None => key.to_string(),
    };
    record(out, &path, line);
    open.push(Open {
        indent,
        path,
        item: false,
        items: 0,
    });
    let value = value.trim();
    (value.starts_with('|') || value.starts_with('>')).then_some(indent)
}

/// What follows a sequence item's dash (`- x`, or `-` alone), if `content` is one.
fn dash(content: &str) -> Option<&str> {
    if content == "-" {
        return Some("");
    }
    content.strip_prefix("- ")
}

/// `key: value` (or `key:`) split, the key unquoted; `None` for anything else (a
/// scalar, a flow collection, a complex key).
fn key_value(content: &str) -> Option<(&str, &str)> {
    let (key, value) =
        if let Some(quote) = content.chars().next().filter(|c| *c == '"' || *c == '\'') {
            let end = content[1..].find(quote)? + 1;
            let after = content[end + 1..].strip_prefix(':')?;
            (&content[1..end], after)
        } else {
            let at = content
                .find(": ")
                .or_else(|| content.ends_with(':').then(|| content.len() - 1))?;
            (&content[..at], &content[at + 1..])
        };
    if key.is_empty() || key.starts_with(['{', '[', '&', '*', '!', '?', '#']) {
        return None;
    }
    Some((key, value))
}

/// Keeps the first line of `path`.
fn record(out: &mut FieldLines, path: &str, line: u32) {
    if !out.lines.iter().any(|(p, _)| p == path) {
        out.lines.push((path.to_string(), line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEPLOYMENT: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: op
  annotations:
    note: |
      replicas: 9
      spec: nonsense
spec:
  replicas: 2
  strategy: {type: RollingUpdate}
  template:
    spec:
      serviceAccountName: op
      containers:
      - name: sidecar
        image: x
      - name: op
        image: op
        args: [run, -A]
        resources:
          limits:
            memory: 128Mi
          requests: {cpu: 10m}
        # a comment
        livenessProbe:
          httpGet:
            path: /healthz
";

    #[test]
    fn each_field_has_its_own_line() {
        let f = field_lines(DEPLOYMENT, 10);
        assert_eq!(f.line_of("spec.replicas"), Some(19));
        assert_eq!(
            f.line_of("spec.strategy.type"),
            Some(20),
            "flow: the key's line"
        );
        assert_eq!(f.line_of("spec.template.spec.serviceAccountName"), Some(23));
        assert_eq!(f.line_of("spec.template.spec.containers[0]"), Some(25));
        assert_eq!(f.line_of("spec.template.spec.containers[1].args"), Some(29));
        assert_eq!(
            f.line_of("spec.template.spec.containers[1].resources.limits.memory"),
            Some(32)
        );
        assert_eq!(
            f.line_of("spec.template.spec.containers[1].resources.requests.cpu"),
            Some(33)
        );
        assert_eq!(
            f.line_of("spec.template.spec.containers[1].livenessProbe"),
            Some(35)
        );
        assert_eq!(f.line_of("metadata.annotations.note"), Some(15));
        assert_eq!(f.line_of("metadata"), Some(12));
    }

    #[test]
    fn a_block_scalar_is_not_read_as_fields() {
        let f = field_lines(DEPLOYMENT, 1);
        assert_eq!(f.line_of("metadata.annotations.note.replicas"), Some(6));
        assert_eq!(f.line_of("spec"), Some(9));
    }

    #[test]
    fn nested_and_indented_sequences_and_quoted_keys() {
        let text = "rules:\n  - apiGroups: [\"\"]\n    resources:\n      - pods\n  - \"verbs\": [get]\n    resources: [events]\nitems:\n- - a\n  - b\n";
        let f = field_lines(text, 1);
        assert_eq!(f.line_of("rules[0].resources"), Some(3));
        assert_eq!(f.line_of("rules[0].resources[0]"), Some(4));
        assert_eq!(f.line_of("rules[1].verbs"), Some(5));
        assert_eq!(f.line_of("rules[1].resources"), Some(6));
        assert_eq!(f.line_of("items[0][1]"), Some(9));
        assert_eq!(f.line_of("nothing.here"), None);
    }
}
