//! How a container runs kopf, read from its command, args and environment: kopf states
//! neither its namespaces nor its peering mode in its logs at INFO, so the pod spec is
//! the only place to learn them for sure (`kopf run --help`, kopf 1.45 `cli.py`; every
//! option also reads `KOPF_RUN_<OPTION>`). When the command line hides them, the log
//! tells a lower bound: the namespaces of the objects it names, and whether peering is
//! at work.

use super::names::is_dns_label;
use super::source::{Entry, Literal, PyStart};
use k8s_openapi::api::core::v1::Container;
pub(crate) use kopf_log::LogFormat as KopfLogFormat;
use std::collections::BTreeSet;

/// Which namespaces the operator serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// `-n`/`--namespace` (or `KOPF_RUN_NAMESPACE(S)`): these names or patterns.
    Namespaced(Vec<String>),
    /// `-A`/`--all-namespaces` (or `KOPF_RUN_CLUSTERWIDE`).
    ClusterWide,
    /// Neither flag: kopf warns and falls back to cluster-wide.
    Implicit,
    /// The command line does not show kopf's flags (kopf starts from the image's `CMD`,
    /// from Python with `kopf.run()`, or from a wrapper script), and nothing seen tells
    /// the namespaces: the auditor asks only about the operator's own namespace.
    Unknown,
}

impl Scope {
    /// Whether kopf serves every namespace, as far as the auditor knows (not when the
    /// scope is unknown).
    pub(crate) fn is_cluster_wide(&self) -> bool {
        matches!(self, Scope::ClusterWide | Scope::Implicit)
    }

    /// Whether any `-n` value is a pattern kopf must list namespaces to resolve.
    pub(crate) fn has_patterns(&self) -> bool {
        match self {
            Scope::Namespaced(values) => values.iter().any(|v| !is_specific_name(v)),
            _ => false,
        }
    }

    /// The `-n` values that name one namespace each: what kopf falls back to when it
    /// may not list namespaces (`select_specific_namespaces`, kopf 1.45
    /// `_cogs/structs/references.py`). A value that is no valid namespace name (the
    /// Deployment's args may hold anything) names no namespace: it is left out, so it
    /// never reaches a request path.
    pub(crate) fn specific_names(&self) -> Vec<String> {
        match self {
            Scope::Namespaced(values) => values
                .iter()
                .filter(|v| is_specific_name(v) && is_dns_label(v))
                .cloned()
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Whether kopf serves `namespace`, as kopf 1.45 decides (`match_namespace`).
    pub(crate) fn serves(&self, namespace: &str) -> bool {
        match self {
            Scope::Namespaced(values) => values.iter().any(|p| match_namespace(namespace, p)),
            // Unknown: any namespace may be served; what is read stays within reach.
            _ => true,
        }
    }

    /// The word shown in status.
    pub(crate) fn mode_name(&self) -> &'static str {
        match self {
            Scope::Namespaced(_) => "namespaced",
            Scope::ClusterWide | Scope::Implicit => "cluster-wide",
            Scope::Unknown => "unknown",
        }
    }
}

/// kopf's test for a `-n` value that names exactly one namespace.
fn is_specific_name(value: &str) -> bool {
    !value.contains(['!', '*', '?', ','])
}

/// kopf's namespace pattern: comma-separated globs, `!` excludes; a leading exclusion
/// implies a catch-all first; later inclusions only re-match what the first matched.
pub(crate) fn match_namespace(name: &str, pattern: &str) -> bool {
    let mut globs: Vec<&str> = pattern.split(',').map(str::trim).collect();
    if globs.first().is_none_or(|g| g.starts_with('!')) {
        globs.insert(0, "*");
    }
    let first_match = fnmatch(name, globs[0]);
    let mut matches = first_match;
    for glob in &globs[1..] {
        if let Some(excluded) = glob.strip_prefix('!') {
            matches = matches && !fnmatch(name, excluded.trim_start_matches('!'));
        } else {
            matches = matches || (first_match && fnmatch(name, glob));
        }
    }
    matches
}

/// Python's `fnmatch.fnmatch` on POSIX: `*`, `?`, `[seq]` and `[!seq]`, case-sensitive.
/// Iterative, in time proportional to the name's length times the glob's and with no
/// recursion: the globs come from a Deployment's args, which a tenant writes.
pub(crate) fn fnmatch(name: &str, glob: &str) -> bool {
    let name: Vec<char> = name.chars().collect();
    let tokens = glob_tokens(glob);
    let (mut n, mut t) = (0, 0);
    // After the last `*` seen: the token after it and the name position it resumes at.
    let mut resume: Option<(usize, usize)> = None;
    while n < name.len() {
        match tokens.get(t) {
            Some(GlobToken::Star) => {
                resume = Some((t + 1, n));
                t += 1;
            }
            Some(token) if token.matches(name[n]) => {
                n += 1;
                t += 1;
            }
            _ => match resume {
                // Let the last `*` take one more character, and try again after it.
                Some((after_star, from)) => {
                    resume = Some((after_star, from + 1));
                    t = after_star;
                    n = from + 1;
                }
                None => return false,
            },
        }
    }
    tokens[t..]
        .iter()
        .all(|token| matches!(token, GlobToken::Star))
}

/// One element of a glob: each but `*` matches exactly one character.
#[derive(Debug, PartialEq)]
enum GlobToken {
    /// `*`: any run of characters.
    Star,
    /// `?`: any one character.
    One,
    /// `[...]` or `[!...]`: one character of (or not of) the members; `a-z` is a range.
    Class { members: Vec<char>, negated: bool },
    /// Any other character, itself.
    Literal(char),
}

impl GlobToken {
    /// Whether this single-character token matches `c` (never called for `*`).
    fn matches(&self, c: char) -> bool {
        match self {
            GlobToken::Star | GlobToken::One => true,
            GlobToken::Literal(l) => *l == c,
            GlobToken::Class { members, negated } => class_has(members, c) != *negated,
        }
    }
}

/// Whether a class's members (with `a-z` ranges) hold `c`.
fn class_has(members: &[char], c: char) -> bool {
    let mut j = 0;
    while j < members.len() {
        if j + 2 < members.len() && members[j + 1] == '-' {
            if members[j] <= c && c <= members[j + 2] {
                return true;
            }
            j += 3;
        } else {
            if members[j] == c {
                return true;
            }
            j += 1;
        }
    }
    false
}

/// A glob as tokens; consecutive `*` are one.
fn glob_tokens(glob: &str) -> Vec<GlobToken> {
    let glob: Vec<char> = glob.chars().collect();
    let mut out = Vec::with_capacity(glob.len());
    let mut i = 0;
    while i < glob.len() {
        let (token, len) = match glob[i] {
            '*' => (GlobToken::Star, 1),
            '?' => (GlobToken::One, 1),
            // An unclosed `[` is a literal, as in Python.
            '[' => char_class(&glob[i..]).unwrap_or((GlobToken::Literal('['), 1)),
            c => (GlobToken::Literal(c), 1),
        };
        if !(token == GlobToken::Star && out.last() == Some(&GlobToken::Star)) {
            out.push(token);
        }
        i += len;
    }
    out
}

/// A `[...]` class at the start of `glob`: the token and its length in chars.
fn char_class(glob: &[char]) -> Option<(GlobToken, usize)> {
    let mut i = 1;
    let negated = glob.get(i) == Some(&'!');
    if negated {
        i += 1;
    }
    let start = i;
    // A `]` right after the opening (or after `!`) is a member, not the end.
    if glob.get(i) == Some(&']') {
        i += 1;
    }
    while glob.get(i).is_some_and(|c| *c != ']') {
        i += 1;
    }
    if i >= glob.len() {
        return None;
    }
    let members = glob[start..i].to_vec();
    Some((GlobToken::Class { members, negated }, i + 1))
}

/// Whether kopf peers with other instances.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Peering {
    /// `--standalone`: no peering; one replica only.
    Standalone,
    /// `--peering NAME`: peering is mandatory.
    Named(String),
    /// Neither: peering is used if kopf's peering CRD exists.
    Auto,
    /// The command line hides kopf's flags: `--standalone` or `--peering` may be there.
    Unknown,
}

impl Peering {
    /// The word shown in status.
    pub(crate) fn display(&self) -> String {
        match self {
            Peering::Standalone => "standalone".into(),
            Peering::Named(name) => name.clone(),
            Peering::Auto => "auto".into(),
            Peering::Unknown => "unknown".into(),
        }
    }
}

/// How much kopf logs: `-q`, the default, `-v`, `-d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Verbosity {
    /// `-q`/`--quiet`: WARNING and above.
    Quiet,
    /// The default: INFO and above.
    Normal,
    /// `-v`/`--verbose` (DEBUG).
    Verbose,
    /// `-d`/`--debug` (DEBUG, and asyncio's debug mode).
    Debug,
}

/// How the auditor knows that a container runs kopf, and so where its facts come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RunOrigin {
    /// `kopf run` (or `python -m kopf run`) is in the container's command or args: the
    /// flags were read there.
    CommandLine,
    /// The command line does not show kopf (the image's `CMD` or `ENTRYPOINT`,
    /// `kopf.run()` from Python, a wrapper script), but the container's log does: kopf's
    /// own lines. The flags are unknown; what the log tells is learned from it.
    Log(LogRecognition),
    /// Read from the operator's files by `kopf-audit lint`: the image's `CMD` or
    /// `ENTRYPOINT` in its Dockerfile, or a `kopf.run()` call in its Python.
    Files(FilesStart),
}

/// Where `kopf-audit lint` found kopf started, when the manifests' command line does not
/// show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FilesStart {
    /// What starts kopf and where (`the image's CMD, Dockerfile:12`).
    pub(crate) how: String,
    /// Whether kopf's flags (or `kopf.run()`'s keyword arguments) were read in full.
    pub(crate) flags_known: bool,
}

/// What a container's log showed of kopf when its command line did not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LogRecognition {
    /// The pod whose log was read.
    pub(crate) pod: String,
    /// How many of the lines read are kopf's own (its formats and messages).
    pub(crate) kopf_lines: u64,
    /// A line that only kopf writes, quoted (bounded, redacted).
    pub(crate) example: String,
    /// kopf's `FutureWarning` that neither namespaces nor cluster-wide were given.
    pub(crate) implicit_scope: bool,
    /// The namespaces of the objects kopf's records name (`[namespace/name]`, or a JSON
    /// record's `object`): kopf serves at least these (bounded, valid names only).
    pub(crate) namespaces: BTreeSet<String>,
    /// kopf's peering records (pausing for or resuming after peers, conflicts, a
    /// peering task failing): peering is on, so kopf does not run standalone.
    pub(crate) peering: bool,
    /// The `apiVersion` and `kind` of the objects kopf's JSON records name (bounded):
    /// kinds kopf handles, if the operator's RBAC lets it watch them.
    pub(crate) kinds: BTreeSet<(String, String)>,
    /// What the wording of the lines read tells of kopf's version (often nothing).
    pub(crate) version: kopf_log::VersionRange,
}

impl RunOrigin {
    /// Whether the flags were read from the command line.
    pub(crate) fn flags_known(&self) -> bool {
        match self {
            RunOrigin::CommandLine => true,
            RunOrigin::Log(_) => false,
            RunOrigin::Files(start) => start.flags_known,
        }
    }
}

/// Everything the auditor learns about a kopf container from its spec (or, when the
/// command line hides kopf, from its log).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KopfRun {
    /// The container's name.
    pub(crate) container: String,
    /// How kopf was recognised: where the facts below come from.
    pub(crate) origin: RunOrigin,
    /// Namespaces served.
    pub(crate) scope: Scope,
    /// Peering mode.
    pub(crate) peering: Peering,
    /// `--priority` (peering), when given.
    pub(crate) priority: Option<i64>,
    /// `--dev`: priority 666 and peering optional (for development, not production).
    pub(crate) dev: bool,
    /// Log format.
    pub(crate) log_format: KopfLogFormat,
    /// How much kopf logs, and which flag said so.
    pub(crate) verbosity: (Verbosity, Option<String>),
    /// The `--liveness` URL, if any.
    pub(crate) liveness: Option<String>,
    /// What kopf is told to load: `kopf run`'s paths and `-m` modules, or the file
    /// that calls `kopf.run()`; empty when not known.
    pub(crate) entries: Vec<Entry>,
}

impl KopfRun {
    /// The namespaces kopf is known to serve by name: its `-n` values that name one
    /// namespace each; with the scope unknown, those its log names objects in (kopf
    /// serves at least these). Empty for cluster-wide.
    pub(crate) fn served_names(&self) -> Vec<String> {
        match (&self.scope, &self.origin) {
            (Scope::Unknown, RunOrigin::Log(seen)) => seen.namespaces.iter().cloned().collect(),
            (scope, _) => scope.specific_names(),
        }
    }
}

/// The containers of a Deployment's pod template: where kopf is looked for.
pub(crate) fn template_containers(
    deployment: &k8s_openapi::api::apps::v1::Deployment,
) -> &[Container] {
    deployment
        .spec
        .template
        .spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or(&[])
}

/// Finds the container that runs kopf: the named one if given, else the first that does.
/// `namespace` is the pod's, for `$(VAR)` references to `metadata.namespace`.
pub(crate) fn find_kopf<'a>(
    containers: &'a [Container],
    wanted: Option<&str>,
    namespace: Option<&str>,
) -> Option<(&'a Container, KopfRun)> {
    containers
        .iter()
        .filter(|c| wanted.is_none_or(|w| c.name == w))
        .find_map(|c| parse_in_namespace(c, namespace).map(|run| (c, run)))
}

/// Parses one container of a pod in `namespace`, expanding `$(VAR)` references as the
/// kubelet does; `None` when it does not run kopf.
pub(crate) fn parse_in_namespace(
    container: &Container,
    namespace: Option<&str>,
) -> Option<KopfRun> {
    let words: Vec<String> = command_words(container)
        .iter()
        .map(|w| expand_vars(w, container, namespace))
        .collect();
    let run_at = kopf_run_position(&words)?;
    let mut run = KopfRun {
        container: container.name.clone(),
        origin: RunOrigin::CommandLine,
        scope: Scope::Implicit,
        peering: Peering::Auto,
        priority: None,
        dev: false,
        log_format: KopfLogFormat::Full,
        verbosity: (Verbosity::Normal, None),
        liveness: None,
        entries: Vec::new(),
    };
    apply_env(&mut run, container, namespace);
    apply_flags(&mut run, &words[run_at..]);
    Some(run)
}

/// A container whose command line hides kopf, recognised from its log: the scope and
/// peering mode unknown (unless kopf's warning shows that neither namespaces nor
/// cluster-wide were given), no liveness endpoint known, INFO, and the log format the
/// log is written in. `KOPF_RUN_*` variables still
/// count: kopf reads them however it is started.
pub(crate) fn from_log(
    container: &Container,
    namespace: Option<&str>,
    seen: LogRecognition,
    log_format: KopfLogFormat,
) -> KopfRun {
    let mut run = KopfRun {
        container: container.name.clone(),
        origin: RunOrigin::CommandLine,
        scope: if seen.implicit_scope {
            Scope::Implicit
        } else {
            Scope::Unknown
        },
        peering: Peering::Unknown,
        priority: None,
        dev: false,
        log_format,
        verbosity: (Verbosity::Normal, None),
        liveness: None,
        entries: Vec::new(),
    };
    let peering_seen = seen.peering;
    run.origin = RunOrigin::Log(seen);
    apply_env(&mut run, container, namespace);
    // Peering at work: `--standalone` was not given (its name, if `--peering` named
    // one, is not in kopf's peering lines).
    if run.peering == Peering::Unknown && peering_seen {
        run.peering = Peering::Auto;
    }
    run
}

/// A container that starts kopf from Python (`kopf.run(...)`, `kopf.operator(...)`): its
/// keyword arguments set what `kopf run`'s flags set, and are kopf's defaults when not
/// given (kopf 1.45 `_core/reactor/running.py`). An argument the linter cannot read
/// (a variable) leaves that fact unknown. `KOPF_RUN_*` variables do not apply: only
/// kopf's command line reads them.
pub(crate) fn from_python(container: &Container, start: &PyStart) -> KopfRun {
    let mut known = true;
    let scope = match (&start.clusterwide, &start.namespaces) {
        (Some(Literal::Bool(true)), _) => Scope::ClusterWide,
        (_, Some(Literal::Strings(names))) if !names.is_empty() => Scope::Namespaced(names.clone()),
        (None | Some(Literal::Bool(false)), None | Some(Literal::Strings(_))) => Scope::Implicit,
        _ => {
            known = false;
            Scope::Unknown
        }
    };
    let peering = match (&start.standalone, &start.peering_name) {
        (Some(Literal::Bool(true)), _) => Peering::Standalone,
        (_, Some(Literal::Str(name))) => Peering::Named(name.clone()),
        (None | Some(Literal::Bool(false) | Literal::None), None | Some(Literal::None)) => {
            Peering::Auto
        }
        _ => {
            known = false;
            Peering::Unknown
        }
    };
    let liveness = match &start.liveness_endpoint {
        Some(Literal::Str(url)) => Some(url.clone()),
        None | Some(Literal::None) => None,
        Some(_) => {
            known = false;
            None
        }
    };
    let priority = match &start.priority {
        Some(Literal::Int(p)) => Some(*p),
        _ => None,
    };
    KopfRun {
        container: container.name.clone(),
        origin: RunOrigin::Files(FilesStart {
            how: format!("{}() at {}", start.function, start.location),
            flags_known: known,
        }),
        scope,
        peering,
        priority,
        dev: false,
        log_format: KopfLogFormat::Full,
        verbosity: (Verbosity::Normal, None),
        liveness,
        // Which file the container runs is in its command, not in the call.
        entries: Vec::new(),
    }
}

/// The value of an env var as the kubelet would set it: a literal, or the pod's namespace
/// for a `metadata.namespace` field reference.
fn env_value(container: &Container, name: &str, namespace: Option<&str>) -> Option<String> {
    let var = container.env.iter().flatten().find(|e| e.name == name)?;
    if let Some(v) = &var.value {
        return Some(v.clone());
    }
    let field = var.value_from.as_ref()?.field_ref.as_ref()?;
    (field.field_path == "metadata.namespace")
        .then(|| namespace.map(str::to_string))
        .flatten()
}

/// Expands `$(VAR)` in a command word; unknown references stay as written.
fn expand_vars(word: &str, container: &Container, namespace: Option<&str>) -> String {
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    while let Some(start) = rest.find("$(") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find(')') {
            Some(end) => {
                let name = &after[..end];
                match env_value(container, name, namespace) {
                    Some(v) => out.push_str(&v),
                    None => out.push_str(&rest[start..start + 2 + end + 1]),
                }
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The command line as words; `sh -c "..."` scripts are split on whitespace.
fn command_words(container: &Container) -> Vec<String> {
    let mut words: Vec<String> = container
        .command
        .iter()
        .flatten()
        .chain(container.args.iter().flatten())
        .cloned()
        .collect();
    let is_shell = words.first().is_some_and(|w| {
        let base = w.rsplit('/').next().unwrap_or(w);
        matches!(base, "sh" | "bash" | "dash" | "ash")
    });
    if is_shell && let Some(pos) = words.iter().position(|w| w == "-c") {
        let script: Vec<String> = words[pos + 1..]
            .iter()
            .flat_map(|s| s.split_whitespace().map(|w| w.trim_matches(['"', '\''])))
            .map(str::to_string)
            .collect();
        words = script;
    }
    words
}

/// The index just after `run` in `kopf run ...` / `python -m kopf run ...`.
fn kopf_run_position(words: &[String]) -> Option<usize> {
    let is_kopf = |w: &str| w.rsplit('/').next() == Some("kopf");
    for (i, w) in words.iter().enumerate() {
        let next_is_run = words.get(i + 1).is_some_and(|n| n == "run");
        if is_kopf(w) && next_is_run {
            let prev_is_m = i > 0 && words[i - 1] == "-m";
            let is_program = i == 0 || prev_is_m || !words[i - 1].starts_with('-');
            if is_program {
                return Some(i + 2);
            }
        }
    }
    None
}

/// Applies the `KOPF_RUN_*` variables, literal or the pod's namespace (a
/// `metadata.namespace` field reference, as `KOPF_RUN_NAMESPACES` is often set).
fn apply_env(run: &mut KopfRun, container: &Container, namespace: Option<&str>) {
    for var in container.env.iter().flatten() {
        let Some(value) = env_value(container, &var.name, namespace) else {
            continue;
        };
        let value = value.as_str();
        match var.name.as_str() {
            "KOPF_RUN_NAMESPACES" | "KOPF_RUN_NAMESPACE" => {
                let names: Vec<String> = value.split_whitespace().map(str::to_string).collect();
                if !names.is_empty() {
                    run.scope = Scope::Namespaced(names);
                }
            }
            "KOPF_RUN_CLUSTERWIDE" if is_truthy(value) => run.scope = Scope::ClusterWide,
            "KOPF_RUN_STANDALONE" if is_truthy(value) => run.peering = Peering::Standalone,
            "KOPF_RUN_PEERING_NAME" if !value.is_empty() => {
                run.peering = Peering::Named(value.into())
            }
            "KOPF_RUN_PRIORITY" => run.priority = value.trim().parse().ok().or(run.priority),
            "KOPF_RUN_DEV" if is_truthy(value) => run.dev = true,
            "KOPF_RUN_VERBOSE" if is_truthy(value) => {
                run.verbosity = (Verbosity::Verbose, Some(format!("{}={value}", var.name)))
            }
            "KOPF_RUN_DEBUG" if is_truthy(value) => {
                run.verbosity = (Verbosity::Debug, Some(format!("{}={value}", var.name)))
            }
            "KOPF_RUN_QUIET" if is_truthy(value) => run.verbosity = (Verbosity::Quiet, None),
            "KOPF_RUN_LOG_FORMAT" => {
                if let Some(f) = KopfLogFormat::parse(value) {
                    run.log_format = f;
                }
            }
            "KOPF_RUN_LIVENESS_ENDPOINT" if !value.is_empty() => run.liveness = Some(value.into()),
            _ => {}
        }
    }
}

fn is_truthy(value: &str) -> bool {
    matches!(
        value.to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on" | "t" | "y"
    )
}

/// Splits `--flag=value` and yields (flag, inline value).
fn split_flag(word: &str) -> (&str, Option<&str>) {
    match word.split_once('=') {
        Some((f, v)) if f.starts_with("--") => (f, Some(v)),
        _ => (word, None),
    }
}

/// Words of a `sh -c` line that end kopf's command.
const SHELL_OPERATORS: [&str; 6] = ["&&", "||", ";", "|", "&", ">"];

fn apply_flags(run: &mut KopfRun, words: &[String]) {
    let mut namespaces = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let (flag, inline) = split_flag(&words[i]);
        let takes_value = matches!(
            flag,
            "-n" | "--namespace"
                | "-P"
                | "--peering"
                | "-L"
                | "--liveness"
                | "--log-format"
                | "-p"
                | "--priority"
                | "-m"
                | "--module"
                | "--log-refkey"
        );
        let value = if takes_value && inline.is_none() {
            i += 1;
            words.get(i).map(String::as_str)
        } else {
            inline
        };
        match (flag, value) {
            ("-A" | "--all-namespaces", _) => run.scope = Scope::ClusterWide,
            ("-n" | "--namespace", Some(v)) => namespaces.push(v.to_string()),
            ("--standalone", _) => run.peering = Peering::Standalone,
            ("-P" | "--peering", Some(v)) => run.peering = Peering::Named(v.to_string()),
            ("-p" | "--priority", Some(v)) => run.priority = v.trim().parse().ok(),
            ("--dev", _) => run.dev = true,
            ("-v" | "--verbose", _) => {
                run.verbosity = run
                    .verbosity
                    .clone()
                    .max((Verbosity::Verbose, Some(flag.into())))
            }
            ("-d" | "--debug", _) => run.verbosity = (Verbosity::Debug, Some(flag.into())),
            ("-q" | "--quiet", _) => run.verbosity = (Verbosity::Quiet, None),
            ("-L" | "--liveness", Some(v)) => run.liveness = Some(v.to_string()),
            ("--log-format", Some(v)) => {
                if let Some(f) = KopfLogFormat::parse(v) {
                    run.log_format = f;
                }
            }
            ("-m" | "--module", Some(v)) => run.entries.push(Entry::Module(v.to_string())),
            // The shell runs what follows, not kopf.
            (word, _) if SHELL_OPERATORS.contains(&word) => break,
            (word, None) if !word.starts_with('-') => run.entries.push(Entry::Path(word.into())),
            _ => {}
        }
        i += 1;
    }
    if !namespaces.is_empty() {
        run.scope = Scope::Namespaced(namespaces);
    }
}

/// A `--liveness` URL, as kopf 1.45 serves it (`_core/engines/probing.py`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LivenessEndpoint {
    /// The host kopf binds; `None` when the URL has none, and kopf then binds localhost.
    pub(crate) host: Option<String>,
    /// The port.
    pub(crate) port: u16,
    /// The path.
    pub(crate) path: String,
}

impl LivenessEndpoint {
    /// Reads a liveness URL (`http://0.0.0.0:8080/healthz`); `None` when unreadable.
    pub(crate) fn parse(url: &str) -> Option<LivenessEndpoint> {
        let rest = url.split_once("://").map_or(url, |(_, r)| r);
        let (host_port, path) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].to_string()),
            None => (rest, "/".to_string()),
        };
        let (host, port) = match host_port.rsplit_once(':') {
            Some((h, p)) => (h, p.parse().ok()?),
            None if url.starts_with("https") => (host_port, 443),
            None => (host_port, 80),
        };
        Some(LivenessEndpoint {
            host: (!host.is_empty()).then(|| host.to_string()),
            port,
            path,
        })
    }

    /// Whether the kubelet can reach it: kopf binds `localhost` when the URL has no host,
    /// and a loopback address is reachable only from inside the pod.
    pub(crate) fn reachable_by_kubelet(&self) -> bool {
        !matches!(
            self.host.as_deref(),
            None | Some("localhost" | "127.0.0.1" | "::1" | "[::1]")
        )
    }
}

#[cfg(test)]
mod tests;
