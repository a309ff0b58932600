//! Reads how a container runs kopf from its command, args and environment: kopf states
//! neither its namespaces nor its peering mode in its logs at INFO, so the pod spec is
//! the only place to learn them (kopf-facts.md, "Peering, flags").

use k8s_openapi::api::core::v1::Container;

/// Which namespaces the operator serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// `-n`/`--namespace` (or `KOPF_RUN_NAMESPACE(S)`): these names or glob patterns.
    Namespaced(Vec<String>),
    /// `-A`/`--all-namespaces` (or `KOPF_RUN_CLUSTERWIDE`).
    ClusterWide,
    /// Neither flag: kopf warns and falls back to cluster-wide.
    Implicit,
}

impl Scope {
    /// Whether kopf serves every namespace.
    pub fn is_cluster_wide(&self) -> bool {
        !matches!(self, Scope::Namespaced(_))
    }

    /// Whether any `-n` value is a glob pattern (kopf must list namespaces to resolve it).
    pub fn has_patterns(&self) -> bool {
        match self {
            Scope::Namespaced(ns) => ns.iter().any(|n| n.contains(['*', '?', '[', '!', ','])),
            _ => false,
        }
    }

    /// The word shown in status.
    pub fn mode_name(&self) -> &'static str {
        if self.is_cluster_wide() {
            "cluster-wide"
        } else {
            "namespaced"
        }
    }
}

/// Whether kopf peers with other instances.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Peering {
    /// `--standalone`: no peering; one replica only.
    Standalone,
    /// `--peering NAME`: peering is mandatory.
    Named(String),
    /// Neither: peering is used if kopf's peering CRD exists.
    Auto,
}

impl Peering {
    /// The word shown in status.
    pub fn display(&self) -> String {
        match self {
            Peering::Standalone => "standalone".into(),
            Peering::Named(name) => name.clone(),
            Peering::Auto => "auto".into(),
        }
    }
}

/// kopf's `--log-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// The default: timestamp, logger, level, message.
    Full,
    /// The message only.
    Plain,
    /// One JSON object per line.
    Json,
}

impl LogFormat {
    /// The flag value.
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Full => "full",
            LogFormat::Plain => "plain",
            LogFormat::Json => "json",
        }
    }
}

/// Everything the auditor learns about a kopf container from its spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KopfRun {
    /// The container's name.
    pub container: String,
    /// Namespaces served.
    pub scope: Scope,
    /// Peering mode.
    pub peering: Peering,
    /// Log format.
    pub log_format: LogFormat,
    /// The `--liveness` URL, if any.
    pub liveness: Option<String>,
}

/// Finds the container that runs kopf: the named one if given, else the first that does.
/// `namespace` is the pod's, for `$(VAR)` references to `metadata.namespace`.
pub fn find_kopf<'a>(
    containers: &'a [Container],
    wanted: Option<&str>,
    namespace: Option<&str>,
) -> Option<(&'a Container, KopfRun)> {
    containers
        .iter()
        .filter(|c| wanted.is_none_or(|w| c.name == w))
        .find_map(|c| parse_in_namespace(c, namespace).map(|run| (c, run)))
}

/// Parses one container; `None` when it does not run kopf.
pub fn parse_container(container: &Container) -> Option<KopfRun> {
    parse_in_namespace(container, None)
}

/// Parses one container of a pod in `namespace`, expanding `$(VAR)` references as the
/// kubelet does.
pub fn parse_in_namespace(container: &Container, namespace: Option<&str>) -> Option<KopfRun> {
    let words: Vec<String> = command_words(container)
        .iter()
        .map(|w| expand_vars(w, container, namespace))
        .collect();
    let run_at = kopf_run_position(&words)?;
    let mut run = KopfRun {
        container: container.name.clone(),
        scope: Scope::Implicit,
        peering: Peering::Auto,
        log_format: LogFormat::Full,
        liveness: None,
    };
    apply_env(&mut run, container);
    apply_flags(&mut run, &words[run_at..]);
    Some(run)
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

fn apply_env(run: &mut KopfRun, container: &Container) {
    for var in container.env.iter().flatten() {
        let Some(value) = var.value.as_deref() else {
            continue;
        };
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
            "KOPF_RUN_LOG_FORMAT" => {
                if let Some(f) = parse_log_format(value) {
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

fn parse_log_format(value: &str) -> Option<LogFormat> {
    match value.to_ascii_lowercase().as_str() {
        "full" => Some(LogFormat::Full),
        "plain" => Some(LogFormat::Plain),
        "json" => Some(LogFormat::Json),
        _ => None,
    }
}

/// Splits `--flag=value` and yields (flag, inline value).
fn split_flag(word: &str) -> (&str, Option<&str>) {
    match word.split_once('=') {
        Some((f, v)) if f.starts_with("--") => (f, Some(v)),
        _ => (word, None),
    }
}

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
            ("-L" | "--liveness", Some(v)) => run.liveness = Some(v.to_string()),
            ("--log-format", Some(v)) => {
                if let Some(f) = parse_log_format(v) {
                    run.log_format = f;
                }
            }
            _ => {}
        }
        i += 1;
    }
    if !namespaces.is_empty() {
        run.scope = Scope::Namespaced(namespaces);
    }
}

/// Port and path of a liveness URL (`http://0.0.0.0:8080/healthz`).
pub fn url_port_and_path(url: &str) -> Option<(u16, String)> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let (host_port, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    let port = match host_port.rsplit_once(':') {
        Some((_, p)) => p.parse().ok()?,
        None if url.starts_with("https") => 443,
        None => 80,
    };
    Some((port, path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::EnvVar;

    fn container(command: &[&str], args: &[&str]) -> Container {
        Container {
            name: "operator".into(),
            command: Some(command.iter().map(|s| s.to_string()).collect()),
            args: Some(args.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        }
    }

    #[test]
    fn reads_a_namespaced_standalone_operator() {
        let c = container(
            &["kopf", "run"],
            &[
                "--standalone",
                "-n",
                "team-a",
                "--namespace=team-b",
                "--liveness=http://0.0.0.0:8080/healthz",
                "/app/op.py",
            ],
        );
        let run = parse_container(&c).expect("kopf");
        assert_eq!(
            run.scope,
            Scope::Namespaced(vec!["team-a".into(), "team-b".into()])
        );
        assert_eq!(run.peering, Peering::Standalone);
        assert_eq!(run.liveness.as_deref(), Some("http://0.0.0.0:8080/healthz"));
        assert!(!run.scope.has_patterns());
    }

    #[test]
    fn reads_python_dash_m_and_patterns() {
        let c = container(
            &["python", "-m", "kopf", "run", "-n", "team-*", "-P", "ring"],
            &[],
        );
        let run = parse_container(&c).expect("kopf");
        assert!(run.scope.has_patterns());
        assert_eq!(run.peering, Peering::Named("ring".into()));
        assert_eq!(run.log_format, LogFormat::Full);
    }

    #[test]
    fn reads_sh_c_scripts_and_cluster_wide() {
        let c = container(
            &["/bin/sh", "-c"],
            &["exec kopf run -A --log-format=json /app/op.py"],
        );
        let run = parse_container(&c).expect("kopf");
        assert_eq!(run.scope, Scope::ClusterWide);
        assert_eq!(run.log_format, LogFormat::Json);
        assert_eq!(run.peering, Peering::Auto);
    }

    #[test]
    fn env_sets_the_scope_and_flags_win() {
        let mut c = container(&["kopf", "run", "/app/op.py"], &[]);
        c.env = Some(vec![
            EnvVar {
                name: "KOPF_RUN_NAMESPACES".into(),
                value: Some("a b".into()),
                ..Default::default()
            },
            EnvVar {
                name: "KOPF_RUN_LOG_FORMAT".into(),
                value: Some("plain".into()),
                ..Default::default()
            },
        ]);
        let run = parse_container(&c).expect("kopf");
        assert_eq!(run.scope, Scope::Namespaced(vec!["a".into(), "b".into()]));
        assert_eq!(run.log_format, LogFormat::Plain);
    }

    #[test]
    fn implicit_scope_without_flags() {
        let run = parse_container(&container(&["kopf"], &["run", "op.py"])).expect("kopf");
        assert_eq!(run.scope, Scope::Implicit);
        assert!(run.scope.is_cluster_wide());
    }

    #[test]
    fn not_kopf() {
        assert!(parse_container(&container(&["nginx"], &["-g", "daemon off;"])).is_none());
        assert!(parse_container(&container(&["python", "app.py", "kopf"], &[])).is_none());
        assert!(parse_container(&Container::default()).is_none());
    }

    #[test]
    fn picks_the_named_or_first_kopf_container() {
        let mut sidecar = container(&["envoy"], &[]);
        sidecar.name = "proxy".into();
        let op = container(&["kopf", "run", "-A"], &[]);
        let list = [sidecar, op];
        assert_eq!(
            find_kopf(&list, None, None).expect("found").0.name,
            "operator"
        );
        assert!(find_kopf(&list, Some("proxy"), None).is_none());
    }

    #[test]
    fn expands_namespace_references() {
        use k8s_openapi::api::core::v1::{EnvVarSource, ObjectFieldSelector};
        let mut c = container(
            &["kopf", "run", "--namespace=$(POD_NAMESPACE)", "$(UNSET)"],
            &[],
        );
        c.env = Some(vec![EnvVar {
            name: "POD_NAMESPACE".into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: "metadata.namespace".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }]);
        let run = parse_in_namespace(&c, Some("team-a")).expect("kopf");
        assert_eq!(run.scope, Scope::Namespaced(vec!["team-a".into()]));
    }

    #[test]
    fn liveness_urls() {
        assert_eq!(
            url_port_and_path("http://0.0.0.0:8080/healthz"),
            Some((8080, "/healthz".into()))
        );
        assert_eq!(url_port_and_path("http://:9000"), Some((9000, "/".into())));
        assert_eq!(url_port_and_path("http://x:bad/"), None);
    }
}
