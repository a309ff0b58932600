//! The top layer: the command line of the `kopf-audit` binary. `run` (the operator),
//! `check` (one audit, for CI), `report` (the stored results), `crd` and `reference`
//! (generated files).

mod check;
mod ci;
mod discover;
mod html;
mod inert;
mod kubectl_args;
mod log_filter;
mod output;
mod results;
mod table;

use crate::api::KopfAudit;
use crate::evaluate::Policy;
use crate::publish::metrics::Metrics;
use crate::publish::reports::ReportOutput;
use crate::reconcile::leader::{Leadership, Mandate};
use crate::reconcile::metrics_auth::MetricsAuth;
use crate::reconcile::readiness::Readiness;
use crate::reconcile::{self, Settings, http};
use check::CheckTarget;
use clap::{Parser, Subcommand, ValueEnum};
use kube::CustomResourceExt;
use output::OutputArgs;
use results::{Results, Source, Subject};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Parser)]
#[command(
    name = "kopf-audit",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("KOPF_AUDIT_REVISION"), ")"),
    about = "Audits Python operators written with kopf"
)]
struct Cli {
    #[command(flatten)]
    connection: Connection,
    #[command(subcommand)]
    command: Command,
}

/// Which cluster the commands talk to, as kubectl's global flags say it.
#[derive(clap::Args, Clone, Debug, Default)]
struct Connection {
    /// The kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else the in-cluster
    /// ServiceAccount).
    #[arg(long, global = true, value_name = "FILE")]
    kubeconfig: Option<std::path::PathBuf>,
    /// The kubeconfig context to use (default: the file's current context).
    #[arg(long, global = true, value_name = "NAME")]
    context: Option<String>,
}

/// The connection the command line asked for, set once by [`main`] before any command
/// runs: every command builds its client through [`cluster_config`].
static CONNECTION: std::sync::OnceLock<Connection> = std::sync::OnceLock::new();

/// The client configuration for [`CONNECTION`]: the named kubeconfig and context, or
/// kube's inference (KUBECONFIG, ~/.kube/config, in-cluster) when neither is given.
async fn cluster_config() -> Result<kube::Config, String> {
    let connection = CONNECTION.get().cloned().unwrap_or_default();
    let options = kube::config::KubeConfigOptions {
        context: connection.context.clone(),
        ..Default::default()
    };
    match &connection.kubeconfig {
        Some(path) => {
            let file = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| format!("cannot read kubeconfig {}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|e| format!("no usable kubeconfig in {}: {e}", path.display()))
        }
        None if connection.context.is_some() => kube::Config::from_kubeconfig(&options)
            .await
            .map_err(|e| format!("no usable kubeconfig context: {e}")),
        None => kube::Config::infer()
            .await
            .map_err(|e| format!("no usable kubeconfig: {e}")),
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run the operator: watch KopfAudits and keep their status current.
    Run(RunArgs),
    /// Audit once against the current kubeconfig and print the findings.
    #[command(after_help = CHECK_EXAMPLES)]
    Check(CheckArgs),
    /// Print the stored results of existing KopfAudits, as a person would read them.
    #[command(after_help = REPORT_EXAMPLES)]
    Report(ReportArgs),
    /// Lint an operator's repository, chart or rendered manifests before deploy: the
    /// same checks, with the same IDs, plus those only the source shows.
    #[command(after_help = LINT_EXAMPLES)]
    Lint(LintArgs),
    /// Find every kopf operator among the Deployments and print them as a table, JSON,
    /// or KopfAudits to commit (`-o yaml`); `--like` a ClusterKopfAudit, its scope and
    /// the KopfAudits it generates.
    #[command(after_help = DISCOVER_EXAMPLES)]
    Discover(DiscoverArgs),
    /// Ask for one audit of a KopfAudit now: sets its `kopfaudit.dev/requested-at`
    /// annotation to the current time, and waits until the status echoes it.
    ///
    /// Example: `kubectl kopf-audit audit-now my-operator -n team-a`
    AuditNow(AuditNowArgs),
    /// Print a shell completion script.
    ///
    /// Example: `source <(kopf-audit completion bash)`
    Completion {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print a CustomResourceDefinition as YAML: KopfAudit's by default.
    ///
    /// Example: `kopf-audit crd --kind all | kubectl apply -f -`
    Crd {
        /// Which CRD: kopf-audit, cluster-kopf-audit, or all (both, as two YAML
        /// documents).
        #[arg(long, value_enum, default_value = "kopf-audit")]
        kind: CrdKind,
    },
    /// Print the reference of checks, conditions and reasons as Markdown.
    Reference,
}

/// `kopf-audit check --help`'s examples.
const CHECK_EXAMPLES: &str = "\
Examples:
  # Audit a Deployment with default settings; exit 1 on an error finding
  kopf-audit check -n team-a --deployment my-operator

  # Audit with an existing KopfAudit's spec, fail on warnings too
  kopf-audit check -n team-a --audit my-operator --fail-on warning

  # SARIF for code scanning, JUnit for the CI's test view, a page for people
  kopf-audit check -n team-a --deployment my-operator -o sarif > kopf-audit.sarif
  kopf-audit check -n team-a --deployment my-operator -o junit > kopf-audit.xml
  kopf-audit check -n team-a --deployment my-operator -o html > kopf-audit.html

Exit status: 0 no finding at --fail-on, 1 a finding at --fail-on or above, 2 the audit could not run.";

/// `kopf-audit report --help`'s examples.
const REPORT_EXAMPLES: &str = "\
Examples:
  # The KopfAudits of the kubeconfig's namespace, as a table
  kopf-audit report

  # Every namespace, as one HTML page
  kopf-audit report -A -o html > kopf-audit.html

  # In CI or a cron job: exit 1 when any stored audit has an error finding
  kopf-audit report -A --fail-on error

Exit status: 0 (or, with --fail-on, no finding at it), 1 a finding at --fail-on or above, 2 the KopfAudits could not be read.";

/// `kopf-audit lint --help`'s examples.
const LINT_EXAMPLES: &str = "\
Examples:
  # A repository: Python, Dockerfile, manifests, charts
  kopf-audit lint .

  # Rendered manifests on stdin
  helm template op ./chart | kopf-audit lint -f -

  # For GitHub code scanning or GitLab Code Quality, without failing the job
  kopf-audit lint . -o sarif --fail-on none > kopf-audit.sarif
  kopf-audit lint . -o codeclimate > gl-code-quality-report.json

  # A page to read or attach to a review
  kopf-audit lint . -o html > kopf-audit.html

Exit status: 0 no finding at --fail-on, 1 a finding at --fail-on or above, 2 the input could not be read.";

#[derive(clap::Args)]
struct ReportArgs {
    /// Namespace of the KopfAudits (default: the kubeconfig's).
    #[arg(short, long, conflicts_with = "all_namespaces")]
    namespace: Option<String>,
    /// Report the KopfAudits of every namespace.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    #[command(flatten)]
    output: OutputArgs,
}

#[derive(clap::Args, Debug)]
struct AuditNowArgs {
    /// The KopfAudit's name (or, with -l or -A, none: every KopfAudit they select).
    #[arg(required_unless_present_any = ["selector", "all_namespaces"])]
    name: Option<String>,
    /// Its namespace (default: the kubeconfig's).
    #[arg(short, long, conflicts_with = "all_namespaces")]
    namespace: Option<String>,
    /// Every KopfAudit of every namespace (with -l: those matching in any namespace).
    #[arg(short = 'A', long, conflicts_with = "name")]
    all_namespaces: bool,
    /// The KopfAudits matching this label selector (`kubectl -l` syntax: `a=b`,
    /// `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`).
    #[arg(short = 'l', long, conflicts_with = "name", value_parser = kubectl_args::selector)]
    selector: Option<kube::core::Selector>,
    /// How long to wait for the audit to run, as kubectl's `--timeout` reads it (`30s`,
    /// `2m`, `1m30s`; `0`: do not wait).
    #[arg(long, value_parser = kubectl_args::duration, conflicts_with = "wait_seconds")]
    timeout: Option<std::time::Duration>,
    /// Deprecated: `--timeout` in seconds.
    #[arg(long, hide = true)]
    wait_seconds: Option<u64>,
}

impl AuditNowArgs {
    /// How long to wait: `--timeout`, else the deprecated `--wait-seconds`, else 2 min.
    fn wait(&self) -> std::time::Duration {
        self.timeout
            .or(self.wait_seconds.map(std::time::Duration::from_secs))
            .unwrap_or(std::time::Duration::from_secs(120))
    }
}

#[derive(clap::Args)]
struct DiscoverArgs {
    /// Look in this namespace (default: the kubeconfig's).
    #[arg(short, long, conflicts_with = "all_namespaces")]
    namespace: Option<String>,
    /// Look in every namespace.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// Only Deployments matching this label selector (`kubectl -l` syntax: `a=b`,
    /// `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`), read as `audit-now -l` reads it.
    #[arg(short = 'l', long, value_parser = kubectl_args::selector)]
    selector: Option<kube::core::Selector>,
    /// Discover as the ClusterKopfAudit of this name does: its namespaceSelector,
    /// selector and exclusions are the scope, and `-o yaml` prints the KopfAudits it
    /// generates (its names, its spec.defaults) without the label and owner reference
    /// that mark them generated, to commit in its place.
    #[arg(
        long,
        value_name = "CLUSTER_KOPF_AUDIT",
        conflicts_with_all = ["namespace", "all_namespaces", "selector"]
    )]
    like: Option<String>,
    /// With --like: take the auditor as started with --allow-cross-namespace, so that a
    /// KopfAudit targeting another namespace's Deployment covers it. Without it such a
    /// KopfAudit covers nothing, as the auditor refuses to run it by default.
    #[arg(long, requires = "like")]
    allow_cross_namespace: bool,
    /// Output format: a table, JSON (with what discovery cost), or KopfAudit YAML. The
    /// finding formats of `check`, `report` and `lint` (sarif, junit, codeclimate, html)
    /// do not apply: discover finds operators, not findings.
    #[arg(short, long, value_enum, default_value = "table")]
    output: DiscoverOutput,
}

/// `kopf-audit discover --help`'s examples.
const DISCOVER_EXAMPLES: &str = "\
Examples:
  # The kopf operators of every namespace, and how each was recognised
  kopf-audit discover -A

  # A KopfAudit for each, every default, to commit to a GitOps repository
  kopf-audit discover -A -o yaml > kopf-audits.yaml

  # The KopfAudits the ClusterKopfAudit `platform` generates (its scope, its defaults),
  # as hand-written ones to commit in its place
  kopf-audit discover --like platform -o yaml > kopf-audits.yaml

Exit status: 0 discovery ran (whatever it found), 2 it could not.";

#[derive(Clone, Copy, ValueEnum)]
enum DiscoverOutput {
    Table,
    Json,
    /// One KopfAudit per operator, ready to commit to a GitOps repository.
    Yaml,
}

#[derive(clap::Args)]
struct RunArgs {
    /// Log format.
    #[arg(
        long,
        value_enum,
        default_value = "json",
        env = "KOPF_AUDIT_LOG_FORMAT"
    )]
    log_format: LogFormat,
    /// Log level: error, warn (or warning), info, debug, trace or off, optionally with
    /// comma-separated `target=level` directives, e.g. `info,kopf_audit=debug`. Anything
    /// else is refused (tracing would read an unknown word as a target and log nothing).
    #[arg(long, default_value = "info", env = "KOPF_AUDIT_LOG_LEVEL", value_parser = log_filter::parse)]
    log_level: log_filter::LogFilter,
    /// Allow KopfAudits to target Deployments in other namespaces.
    #[arg(long, env = "KOPF_AUDIT_ALLOW_CROSS_NAMESPACE")]
    allow_cross_namespace: bool,
    /// Ignore `skip.kopfaudit.dev/<check>` exemption annotations and KopfAudits'
    /// `spec.checks.disable` (the checks run; both are reported as refused).
    #[arg(long, env = "KOPF_AUDIT_REFUSE_EXEMPTIONS")]
    refuse_exemptions: bool,
    /// Honour only exemptions with an end date (`until YYYY-MM-DD: reason` in the
    /// annotation, `spec.checks.disabledUntil`); the others are reported as refused.
    #[arg(long, env = "KOPF_AUDIT_REQUIRE_EXEMPTION_EXPIRY")]
    require_exemption_expiry: bool,
    /// Watch only this namespace (a namespaced install).
    #[arg(long, env = "KOPF_AUDIT_WATCH_NAMESPACE")]
    watch_namespace: Option<String>,
    /// Address of /metrics, /healthz and /readyz.
    #[arg(long, default_value = "0.0.0.0:8080", env = "KOPF_AUDIT_HTTP_ADDR")]
    http_addr: SocketAddr,
    /// Serve /metrics only to callers whose bearer token the API server authenticates
    /// (TokenReview) and who may get the non-resource URL /metrics (SubjectAccessReview);
    /// /healthz and /readyz stay open.
    #[arg(long, env = "KOPF_AUDIT_METRICS_AUTH")]
    metrics_auth: bool,
    /// This instance's name in Events and the Lease (set it to the pod name).
    #[arg(long, env = "POD_NAME", default_value = "kopf-audit")]
    instance: String,
    /// Compete for a Lease and audit only while holding it (for replicas > 1).
    #[arg(long, env = "KOPF_AUDIT_LEADER_ELECTION")]
    leader_election: bool,
    /// The Lease's name.
    #[arg(long, default_value = "kopf-audit", env = "KOPF_AUDIT_LEASE_NAME")]
    lease_name: String,
    /// The Lease's namespace (the pod's own).
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    lease_namespace: String,
    /// At most this many audits run at once; each has at most 4 requests in flight, so
    /// the auditor never has more than 4 x this many (watches aside).
    #[arg(long, env = "KOPF_AUDIT_MAX_CONCURRENT_AUDITS", default_value_t = reconcile::DEFAULT_MAX_CONCURRENT_AUDITS, value_parser = clap::value_parser!(u16).range(1..=256))]
    max_concurrent_audits: u16,
    /// Seconds at least between two audits of one KopfAudit that `audit-now` requests
    /// can ask for; a request sooner waits for the rest (echoed in
    /// `status.requestDeferredUntil`) and the requests before then share that audit.
    #[arg(long, env = "KOPF_AUDIT_AUDIT_NOW_MIN_INTERVAL", default_value_t = reconcile::DEFAULT_AUDIT_NOW_MIN_GAP.as_secs(), value_parser = clap::value_parser!(u64).range(0..=3600), value_name = "SECONDS")]
    audit_now_min_interval: u64,
    /// MiB of log records all KopfAudits together keep between audits (each keeps at
    /// most 0.5 MiB); past it the least recently seen are forgotten, and the logs areas
    /// that lost some say they saw part of the window.
    #[arg(long, env = "KOPF_AUDIT_LOG_MEMORY_MIB", default_value_t = DEFAULT_LOG_MEMORY_MIB, value_parser = clap::value_parser!(u16).range(1..=4096))]
    log_memory_mib: u16,
    /// The report objects written beside each KopfAudit's status, in its namespace, where
    /// their CRD is installed: `wgpolicyk8s.io` PolicyReports, `openreports.io` Reports,
    /// both or none.
    #[arg(long, env = "KOPF_AUDIT_REPORTS", value_enum, default_value_t = ReportOutput::PolicyReport)]
    reports: ReportOutput,
    /// Also run the ClusterKopfAudit controller: discover the kopf operators of the
    /// namespaces each ClusterKopfAudit selects and keep one KopfAudit per operator. It
    /// reads across namespaces whatever --allow-cross-namespace says (only a cluster
    /// admin can create a ClusterKopfAudit); ignored with --watch-namespace.
    #[arg(long, env = "KOPF_AUDIT_CLUSTER_AUDITS")]
    cluster_audits: bool,
}

/// A `--set` value as helm takes it: `KEY=VALUE` with a key, on one line.
fn helm_set_value(value: &str) -> Result<String, String> {
    match value.split_once('=') {
        Some((key, _)) if !key.trim().is_empty() && !value.contains(['\n', '\r', '\0']) => {
            Ok(value.to_string())
        }
        _ => Err("expected KEY=VALUE (as `helm template --set` takes it)".into()),
    }
}

/// `--log-memory-mib`'s default: the process's log budget in MiB (64).
const DEFAULT_LOG_MEMORY_MIB: u16 =
    (crate::gather::logs::DEFAULT_PROCESS_BUDGET_BYTES >> 20) as u16;

#[derive(clap::Args)]
struct LintArgs {
    /// A repository, a chart directory, or a file (default: the current directory).
    path: Option<std::path::PathBuf>,
    /// Also read rendered YAML from this file (`-` for stdin).
    #[arg(short = 'f', long = "filename")]
    filename: Option<String>,
    /// Values files passed to `helm template` for charts.
    #[arg(long)]
    values: Vec<std::path::PathBuf>,
    /// A value passed to `helm template` for charts, as `helm --set` takes it (repeat
    /// for more; applied after `--values`).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = helm_set_value)]
    set: Vec<String>,
    /// The namespace of objects that name none (as `helm install -n`).
    #[arg(short, long, default_value = "default")]
    namespace: String,
    #[command(flatten)]
    output: OutputArgs,
    /// Ignore `skip.kopfaudit.dev/<check>` annotations and `# kopf-audit: ignore[...]` comments.
    #[arg(long)]
    refuse_exemptions: bool,
    /// Honour only exemptions with an end date (`until YYYY-MM-DD: reason`).
    #[arg(long)]
    require_exemption_expiry: bool,
    /// Never run `helm template`: charts are left unread (lint their rendered output
    /// with `-f -` instead). lint runs no other program.
    #[arg(long)]
    no_render: bool,
    /// Exit 0 or 1 by the findings even when an input could not be read (a chart that
    /// did not render, a file over a bound); by default such a run exits 2.
    #[arg(long)]
    allow_unrendered: bool,
}

#[derive(clap::Args)]
struct CheckArgs {
    /// Namespace of the Deployment or KopfAudit (default: the kubeconfig's).
    #[arg(short, long)]
    namespace: Option<String>,
    /// Audit this Deployment with default settings.
    #[arg(long, conflicts_with = "audit", required_unless_present = "audit")]
    deployment: Option<String>,
    /// Audit with the spec of this existing KopfAudit.
    #[arg(long)]
    audit: Option<String>,
    #[command(flatten)]
    output: OutputArgs,
    /// Ignore exemption annotations and, with --audit, its `spec.checks.disable`.
    #[arg(long)]
    refuse_exemptions: bool,
    /// Honour only exemptions with an end date (`until YYYY-MM-DD: reason`,
    /// `spec.checks.disabledUntil`).
    #[arg(long)]
    require_exemption_expiry: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Json,
    Text,
}

/// Parses the command line and runs the command; the binary's `main`.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let _ = CONNECTION.set(cli.connection.clone());
    match cli.command {
        Command::Completion { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "kopf-audit",
                &mut std::io::stdout(),
            );
            ExitCode::SUCCESS
        }
        Command::Reference => {
            out(crate::catalog::reference::markdown());
            ExitCode::SUCCESS
        }
        Command::Crd { kind } => match crd_yaml(kind) {
            Ok(yaml) => {
                out(yaml);
                ExitCode::SUCCESS
            }
            Err(e) => {
                error(format_args!("cannot render the CRD: {e}"));
                ExitCode::from(2)
            }
        },
        Command::Run(args) => runtime().map_or(ExitCode::from(2), |rt| rt.block_on(run(args))),
        Command::Lint(args) => lint_command(args),
        Command::Check(args) => runtime().map_or(ExitCode::from(2), |rt| rt.block_on(check(args))),
        Command::Report(args) => {
            runtime().map_or(ExitCode::from(2), |rt| rt.block_on(report(args)))
        }
        Command::AuditNow(args) => {
            runtime().map_or(ExitCode::from(2), |rt| rt.block_on(audit_now(args)))
        }
        Command::Discover(args) => {
            runtime().map_or(ExitCode::from(2), |rt| rt.block_on(discover_command(args)))
        }
    }
}

/// Which CRD `kopf-audit crd` prints.
#[derive(Clone, Copy, ValueEnum)]
enum CrdKind {
    /// The namespaced KopfAudit.
    KopfAudit,
    /// The cluster-scoped ClusterKopfAudit.
    ClusterKopfAudit,
    /// Both, KopfAudit first, as two YAML documents.
    All,
}

/// The CRD(s) of `kind` as YAML.
fn crd_yaml(kind: CrdKind) -> Result<String, serde_yaml_ng::Error> {
    use crate::api::ClusterKopfAudit;
    match kind {
        CrdKind::KopfAudit => serde_yaml_ng::to_string(&KopfAudit::crd()),
        CrdKind::ClusterKopfAudit => serde_yaml_ng::to_string(&ClusterKopfAudit::crd()),
        CrdKind::All => Ok(format!(
            "{}---\n{}",
            serde_yaml_ng::to_string(&KopfAudit::crd())?,
            serde_yaml_ng::to_string(&ClusterKopfAudit::crd())?
        )),
    }
}

/// Writes `text` to stdout, [`inert`](inert::inert_styled) (the table's colours
/// kept): whatever a command prints, no control character and no CI command from a
/// linted file or the cluster reaches the terminal or the CI log. A reader that went
/// away (`| head`) is not an error of ours: the rest is dropped instead of panicking
/// as `print!` would.
fn out(text: impl std::fmt::Display) {
    use std::io::Write;
    let text = inert::inert_styled(&text.to_string());
    let _ = write!(std::io::stdout().lock(), "{text}");
}

/// Writes `kopf-audit: {text}` to stderr, [`inert`](inert::inert): an error names
/// files, charts and objects a stranger may have named, and CI logs show stderr too.
fn error(text: impl std::fmt::Display) {
    use std::io::Write;
    let text = inert::inert(&format!("kopf-audit: {text}\n"));
    let _ = write!(std::io::stderr().lock(), "{text}");
}

/// Writes `text` to stderr as it is, but [`inert`](inert::inert): a summary that names
/// what it found.
fn err_out(text: &str) {
    use std::io::Write;
    let _ = write!(std::io::stderr().lock(), "{}", inert::inert(text));
}

fn runtime() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| error(format_args!("cannot start the runtime: {e}")))
        .ok()
}

fn init_tracing(format: LogFormat, filter: &log_filter::LogFilter) {
    // Validated by `log_filter::parse`: every directive names a level tracing reads.
    let filter = tracing_subscriber::EnvFilter::new(filter.directives());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .init(),
        LogFormat::Text => builder.init(),
    }
}

async fn run(args: RunArgs) -> ExitCode {
    init_tracing(args.log_format, &args.log_level);
    let metrics = Arc::new(Metrics::new());
    let client = match counted_client(&metrics).await {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cannot build a Kubernetes client");
            return ExitCode::from(2);
        }
    };
    let readiness = Readiness::default();
    let metrics_auth = args
        .metrics_auth
        .then(|| Arc::new(MetricsAuth::new(client.clone())));
    let server = tokio::spawn(http::serve(
        args.http_addr,
        metrics.clone(),
        readiness.clone(),
        metrics_auth,
    ));
    let settings = Settings {
        allow_cross_namespace: args.allow_cross_namespace,
        policy: Policy {
            refuse_exemptions: args.refuse_exemptions,
            require_exemption_expiry: args.require_exemption_expiry,
        },
        watch_namespace: args.watch_namespace,
        instance: args.instance,
        max_concurrent_audits: args.max_concurrent_audits,
        log_memory_bytes: usize::from(args.log_memory_mib) << 20,
        reports: args.reports,
        cluster_audits: args.cluster_audits,
        audit_now_min_gap: std::time::Duration::from_secs(args.audit_now_min_interval),
    };
    tracing::info!(version = env!("CARGO_PKG_VERSION"), "kopf-audit starting");
    let code = if args.leader_election {
        run_as_leader(
            client,
            settings,
            metrics,
            readiness,
            &args.lease_namespace,
            &args.lease_name,
        )
        .await
    } else {
        metrics.set_leader(true);
        reconcile::run(
            client,
            settings,
            Mandate::default(),
            metrics,
            readiness,
            shutdown_signal(),
        )
        .await;
        ExitCode::SUCCESS
    };
    server.abort();
    tracing::info!("kopf-audit stopped");
    code
}

/// A client from the kubeconfig or the in-cluster config, counting its requests.
async fn counted_client(metrics: &Arc<Metrics>) -> Result<kube::Client, String> {
    let config = cluster_config().await?;
    Ok(with_bounded_retries(config)
        .map_err(|e| format!("cannot build a client: {e}"))?
        .with_layer(&metrics.request_counter())
        .with_layer(&metrics.in_flight_tracker())
        .build())
}

/// Waits for the Lease, runs the controller while holding it, and exits when it is lost
/// (exit code 1, so that the pod restarts as a standby) or on SIGTERM.
async fn run_as_leader(
    client: kube::Client,
    settings: Settings,
    metrics: Arc<Metrics>,
    readiness: Readiness,
    namespace: &str,
    name: &str,
) -> ExitCode {
    let identity = settings.instance.clone();
    let mut leadership = match Leadership::start(client.clone(), namespace, name, &identity).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "cannot start leader election");
            return ExitCode::from(2);
        }
    };
    tracing::info!(lease = %format!("{namespace}/{name}"), %identity, "waiting for leadership");
    readiness.standby();
    let mut shutdown = Box::pin(shutdown_signal());
    tokio::select! {
        acquired = leadership.acquired() => if !acquired {
            tracing::error!("leader election ended");
            return ExitCode::from(1);
        },
        _ = &mut shutdown => return ExitCode::SUCCESS,
    }
    tracing::info!(%identity, "leading: auditing");
    readiness.leading();
    metrics.set_leader(true);
    let lost = Arc::new(AtomicBool::new(false));
    let lost_flag = lost.clone();
    let lost_future = leadership.lost();
    let lost_metrics = metrics.clone();
    let stop = async move {
        tokio::select! {
            _ = lost_future => {
                lost_flag.store(true, Ordering::SeqCst);
                lost_metrics.set_leader(false);
                tracing::warn!("leadership lost: stopping");
            }
            _ = shutdown => {}
        }
    };
    let mandate = leadership.mandate();
    reconcile::run(client, settings, mandate, metrics, readiness, stop).await;
    drop(leadership);
    if lost.load(Ordering::SeqCst) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Resolves on SIGTERM or Ctrl-C, whichever comes first.
async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
    tracing::info!("shutdown requested");
}

/// A client from the current kubeconfig and its default namespace, or a message; its
/// requests are counted in `requests` when given (`discover` reports what it cost).
async fn client_and_namespace(
    requests: Option<Arc<std::sync::atomic::AtomicU64>>,
) -> Result<(kube::Client, String), String> {
    let config = cluster_config().await?;
    let namespace = config.default_namespace.clone();
    let counter =
        tower::util::MapRequestLayer::new(move |request: ::http::Request<kube::client::Body>| {
            if let Some(requests) = &requests {
                requests.fetch_add(1, Ordering::Relaxed);
            }
            request
        });
    let client = with_bounded_retries(config)
        .map_err(|e| format!("cannot build a client: {e}"))?
        .with_layer(&counter)
        .build();
    Ok((client, namespace))
}

/// kube's client service (its `GenericService`), made cloneable for the retry layer,
/// as kube's own `Client` does (`Buffer`).
type RetryingService = tower::retry::Retry<
    kube::client::retry::RetryPolicy,
    tower::buffer::Buffer<
        ::http::Request<kube::client::Body>,
        <tower::util::BoxService<
            ::http::Request<kube::client::Body>,
            ::http::Response<Box<kube::client::DynBody>>,
            tower::BoxError,
        > as tower::Service<::http::Request<kube::client::Body>>>::Future,
    >,
>;

/// Requests the buffer in front of the retry layer holds (kube's `Client` uses as many).
const BUFFERED_REQUESTS: usize = 1024;

/// The client for `config`, retrying a 429, 503 or 504 at most 3 times within about
/// 3.5 s (kube's `RetryPolicy::default`, which ignores `Retry-After`). kube's own
/// default retries one up to 15 times, the delay doubling up to 1000 s and following
/// any `Retry-After`: one request to an aggregated API whose server is down (a group a
/// KopfAudit names in `spec.handledResources`) then held its audit, and a slot of
/// `--max-concurrent-audits`, for about 5 minutes before its area could say so.
fn with_bounded_retries(
    mut config: kube::Config,
) -> Result<kube::client::ClientBuilder<RetryingService>, kube::Error> {
    config.default_retry = false;
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&tower::buffer::BufferLayer::new(BUFFERED_REQUESTS))
        .with_layer(&tower::retry::RetryLayer::new(
            kube::client::retry::RetryPolicy::default(),
        )))
}

/// `audit-now`: annotates the KopfAudits, then waits for each status to echo the value.
async fn audit_now(args: AuditNowArgs) -> ExitCode {
    let (client, default_ns) = match client_and_namespace(None).await {
        Ok(c) => c,
        Err(e) => {
            error(e);
            return ExitCode::from(2);
        }
    };
    let targets = match audit_now_targets(&client, &args, default_ns).await {
        Ok(t) if t.is_empty() => {
            error("no KopfAudit matches");
            return ExitCode::from(1);
        }
        Ok(t) => t,
        Err(e) => {
            error(e);
            return ExitCode::from(2);
        }
    };
    let requested = jiff::Timestamp::now().to_string();
    for (namespace, name) in &targets {
        if let Err(e) = request_audit(&client, namespace, name, &requested).await {
            error(e);
            return ExitCode::from(2);
        }
        out(format_args!(
            "kopfaudit {namespace}/{name} audit requested at {requested}\n"
        ));
    }
    wait_for_audits(&client, targets, &requested, args.wait()).await
}

/// The (namespace, name) of each KopfAudit `audit-now` asks to audit: the one named,
/// or those `-l` and `-A` select.
async fn audit_now_targets(
    client: &kube::Client,
    args: &AuditNowArgs,
    default_ns: String,
) -> Result<Vec<(String, String)>, String> {
    use kube::ResourceExt as _;
    use kube::api::{Api, ListParams};
    let namespace = args.namespace.clone().unwrap_or(default_ns);
    if let Some(name) = &args.name {
        return Ok(vec![(namespace, name.clone())]);
    }
    let api: Api<KopfAudit> = if args.all_namespaces {
        Api::all(client.clone())
    } else {
        Api::namespaced(client.clone(), &namespace)
    };
    let params = match &args.selector {
        Some(selector) => ListParams::default().labels_from(selector),
        None => ListParams::default(),
    };
    let list = api
        .list(&params)
        .await
        .map_err(|e| format!("cannot list KopfAudits: {e}"))?;
    Ok(list
        .items
        .iter()
        .map(|a| {
            (
                a.namespace().unwrap_or_else(|| namespace.clone()),
                a.name_any(),
            )
        })
        .collect())
}

/// Writes `requested` to the KopfAudit's `kopfaudit.dev/requested-at` annotation.
async fn request_audit(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    requested: &str,
) -> Result<(), String> {
    use crate::catalog::REQUESTED_AT_ANNOTATION;
    use kube::api::{Api, Patch, PatchParams};
    let api: Api<KopfAudit> = Api::namespaced(client.clone(), namespace);
    let patch =
        serde_json::json!({"metadata": {"annotations": {REQUESTED_AT_ANNOTATION: requested}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(drop)
        .map_err(|e| format!("cannot annotate KopfAudit {namespace}/{name}: {e}"))
}

/// Waits up to `timeout` for every target's status to echo `requested`: 0 when all
/// did (or `timeout` is zero), 1 when one did not.
async fn wait_for_audits(
    client: &kube::Client,
    mut pending: Vec<(String, String)>,
    requested: &str,
    timeout: std::time::Duration,
) -> ExitCode {
    use kube::api::Api;
    let deadline = std::time::Instant::now() + timeout;
    while !pending.is_empty() && std::time::Instant::now() < deadline {
        let mut still = Vec::new();
        for (namespace, name) in pending {
            let api: Api<KopfAudit> = Api::namespaced(client.clone(), &namespace);
            let handled = api.get(&name).await.ok().and_then(|a| {
                a.status
                    .and_then(|s| s.last_handled_requested_at)
                    .filter(|v| v == requested)
            });
            if handled.is_some() {
                out(format_args!(
                    "audited: see `kubectl get kopfaudit -n {namespace} {name}`\n"
                ));
            } else {
                still.push((namespace, name));
            }
        }
        pending = still;
        if !pending.is_empty() {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        }
    }
    if timeout.is_zero() || pending.is_empty() {
        return ExitCode::SUCCESS;
    }
    for (namespace, name) in &pending {
        error(format_args!(
            "the audit of {namespace}/{name} has not run after {}s: is kopf-audit running, and does it watch namespace {namespace}?",
            timeout.as_secs()
        ));
    }
    ExitCode::from(1)
}

/// `kopf-audit discover`: 0 when discovery ran (whatever it found), 2 when the
/// Deployments (or, with `--like`, the ClusterKopfAudit, the namespaces or the
/// KopfAudits) could not be read.
async fn discover_command(args: DiscoverArgs) -> ExitCode {
    match discover_and_print(args).await {
        // Discover prints no colour: no ESC at all survives.
        Ok(text) => {
            out(inert::inert(&text));
            ExitCode::SUCCESS
        }
        Err(e) => {
            error(e);
            ExitCode::from(2)
        }
    }
}

/// Discovers as `args` ask, writes the summary to stderr, and returns what to print.
async fn discover_and_print(args: DiscoverArgs) -> Result<String, String> {
    use crate::gather::discover::{Fingerprints, Scope, discover_in};
    let requests = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (client, default_ns) = client_and_namespace(Some(requests.clone())).await?;
    let like = match &args.like {
        Some(name) => Some(like_of(&client, name).await?),
        None => None,
    };
    let namespace = (!args.all_namespaces && like.is_none())
        .then(|| args.namespace.clone().unwrap_or(default_ns));
    let selector = args.selector.as_ref().map(ToString::to_string);
    let scope = Scope {
        namespace: namespace.as_deref(),
        selector: match &like {
            Some(l) => l.scope.deployment_selector.as_deref(),
            None => selector.as_deref(),
        },
    };
    let keep = |ns: &str, name: &str| {
        like.as_ref().is_none_or(|l| {
            crate::evaluate::cluster_audit::in_scope(&l.cka.spec, l.namespaces.as_ref(), ns, name)
        })
    };
    let verdicts = crate::gather::recognise::Verdicts::default();
    let found = discover_in(&client, &verdicts, &Fingerprints::default(), scope, &keep)
        .await
        .map_err(|e| e.to_string())?;
    let existing = match (&like, args.output) {
        (Some(_), DiscoverOutput::Yaml) => every_kopf_audit(&client).await?,
        _ => Vec::new(),
    };
    let requests = requests.load(Ordering::Relaxed);
    err_out(&discover::summary(&found, requests));
    match args.output {
        DiscoverOutput::Table => Ok(discover::table(&found.found)),
        DiscoverOutput::Json => serde_json::to_string_pretty(&discover::json(&found, requests))
            .map(|s| s + "\n")
            .map_err(|e| e.to_string()),
        DiscoverOutput::Yaml => {
            let template = match &like {
                Some(l) => discover::Template::Like {
                    cka: &l.cka,
                    existing: &existing,
                    cross: crate::evaluate::cluster_audit::CrossNamespace::from_flag(
                        args.allow_cross_namespace,
                    ),
                },
                None => discover::Template::Defaults,
            };
            discover::kopf_audits_yaml(&found.found, &template).map_err(|e| e.to_string())
        }
    }
}

/// The ClusterKopfAudit `discover --like` names, its scope, and the namespaces its
/// namespaceSelector matches (`None`: every one).
struct Like {
    cka: crate::api::ClusterKopfAudit,
    scope: crate::evaluate::cluster_audit::ClusterScope,
    namespaces: Option<std::collections::BTreeSet<String>>,
}

/// Reads the ClusterKopfAudit `name` and lists the namespaces it selects.
async fn like_of(client: &kube::Client, name: &str) -> Result<Like, String> {
    use kube::api::Api;
    let cka = Api::<crate::api::ClusterKopfAudit>::all(client.clone())
        .get(name)
        .await
        .map_err(|e| match e {
            kube::Error::Api(s) if s.code == 404 => format!(
                "there is no ClusterKopfAudit {name} (`kubectl get clusterkopfaudits` lists them)"
            ),
            e => format!("cannot read ClusterKopfAudit {name}: {e}"),
        })?;
    let scope = crate::evaluate::cluster_audit::scope_of(&cka.spec)
        .map_err(|e| format!("ClusterKopfAudit {name}: {e}"))?;
    let namespaces = match &scope.namespace_selector {
        Some(selector) => Some(
            crate::gather::discover::namespaces_matching(client, selector)
                .await
                .map_err(|e| format!("listing the namespaces {name} selects: {e}"))?,
        ),
        None => None,
    };
    Ok(Like {
        cka,
        scope,
        namespaces,
    })
}

/// Every KopfAudit of the cluster: one may already audit an operator found.
async fn every_kopf_audit(client: &kube::Client) -> Result<Vec<KopfAudit>, String> {
    kube::api::Api::<KopfAudit>::all(client.clone())
        .list(&kube::api::ListParams::default())
        .await
        .map(|list| list.items)
        .map_err(|e| format!("listing the KopfAudits that may audit an operator already: {e}"))
}

/// Prints a command's results as its output flags ask and returns its exit code: 0
/// clean, 1 a finding at `--fail-on` or above, 2 (with the reason on stderr) when the
/// command could not produce results.
fn print_results(results: Result<Results, String>, args: &OutputArgs) -> ExitCode {
    match results {
        Ok(results) => output::finish(&results, args),
        Err(e) => {
            error(e);
            ExitCode::from(2)
        }
    }
}

/// `kopf-audit report`: 2 when the KopfAudits cannot be listed; `--fail-on` defaults to
/// `none`.
async fn report(args: ReportArgs) -> ExitCode {
    print_results(report_audits(&args).await, &args.output)
}

/// The KopfAudits of one namespace or all, as results.
async fn report_audits(args: &ReportArgs) -> Result<Results, String> {
    let (client, default_ns) = client_and_namespace(None).await?;
    let api: kube::Api<KopfAudit> = if args.all_namespaces {
        kube::Api::all(client)
    } else {
        let namespace = args.namespace.clone().unwrap_or(default_ns);
        kube::Api::namespaced(client, &namespace)
    };
    let audits = api
        .list(&Default::default())
        .await
        .map_err(|e| format!("listing KopfAudits: {e}"))?;
    Ok(report_results(audits.items))
}

/// The stored KopfAudits as results: one subject each, and for `-o json`/`yaml` a
/// list of their namespace, name and status.
fn report_results(audits: Vec<KopfAudit>) -> Results {
    let mut subjects = Vec::with_capacity(audits.len());
    let mut items = Vec::with_capacity(audits.len());
    for audit in audits {
        let namespace = audit.metadata.namespace.unwrap_or_default();
        let name = audit.metadata.name.unwrap_or_default();
        let title = format!("{namespace}/{name}");
        subjects.push(match &audit.status {
            Some(status) => Subject::from_status(title, status),
            None => Subject {
                name: title,
                ..Subject::default()
            },
        });
        items.push(serde_json::json!({
            "namespace": namespace, "name": name, "status": audit.status,
        }));
    }
    Results {
        source: Source::Report,
        subjects,
        data: serde_json::json!({ "items": items }),
    }
}

/// `kopf-audit check`: 2 when the audit cannot run.
async fn check(args: CheckArgs) -> ExitCode {
    print_results(check_audit(&args).await, &args.output)
}

/// One audit, as results.
async fn check_audit(args: &CheckArgs) -> Result<Results, String> {
    let (client, default_ns) = client_and_namespace(None).await?;
    let namespace = args.namespace.clone().unwrap_or(default_ns);
    let (target, name) = match (&args.deployment, &args.audit) {
        (_, Some(a)) => (CheckTarget::Audit(a.clone()), a),
        (Some(d), None) => (CheckTarget::Deployment(d.clone()), d),
        (None, None) => return Err("--deployment or --audit is required".into()),
    };
    let policy = Policy {
        refuse_exemptions: args.refuse_exemptions,
        require_exemption_expiry: args.require_exemption_expiry,
    };
    let status = check::check(&client, &namespace, &target, &policy)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Results {
        source: Source::Check,
        subjects: vec![Subject::from_status(format!("{namespace}/{name}"), &status)],
        data: serde_json::to_value(&status).map_err(|e| e.to_string())?,
    })
}

/// `kopf-audit lint`: 2 when the input cannot be read, or when part of it could not be
/// read (unless `--allow-unrendered`): nothing read is nothing passed.
fn lint_command(args: LintArgs) -> ExitCode {
    let results = lint_files(&args);
    let unread = results
        .as_ref()
        .is_ok_and(|r| r.subjects.iter().any(|s| !s.report.unread.is_empty()));
    let code = print_results(results, &args.output);
    if unread && !args.allow_unrendered {
        return ExitCode::from(2);
    }
    code
}

/// What `--filename` names: stdin (`-`) or a file, read whole up to the bound of a
/// YAML file (a larger input is refused: exit 2).
fn read_filename(filename: Option<&str>) -> Result<Option<String>, String> {
    let (reader, shown): (Box<dyn std::io::Read>, String) = match filename {
        None => return Ok(None),
        Some("-") => (Box::new(std::io::stdin()), "stdin".to_string()),
        Some(file) => (
            Box::new(std::fs::File::open(file).map_err(|e| format!("reading {file}: {e}"))?),
            file.to_string(),
        ),
    };
    use crate::gather::files::bounds::{MAX_YAML_BYTES, read_at_most};
    let bytes = read_at_most(reader, MAX_YAML_BYTES)
        .map_err(|e| format!("reading {shown}: {e}"))?
        .ok_or_else(|| {
            format!(
                "{shown} is over lint's bound of {} MiB for YAML input: lint a smaller input",
                MAX_YAML_BYTES >> 20
            )
        })?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| format!("{shown} is not UTF-8 text"))
}

/// The files linted, as results.
fn lint_files(args: &LintArgs) -> Result<Results, String> {
    use crate::gather::files::{self, FilesInput};
    let stdin = read_filename(args.filename.as_deref())?;
    let path = match (&args.path, &stdin) {
        (Some(p), _) => Some(p.clone()),
        (None, None) => Some(std::path::PathBuf::from(".")),
        (None, Some(_)) => None,
    };
    let name = match (&path, args.filename.as_deref()) {
        (Some(p), _) => p.display().to_string(),
        (None, Some("-")) => "(stdin)".to_string(),
        (None, f) => f.unwrap_or_default().to_string(),
    };
    let input = FilesInput {
        path,
        stdin,
        values: args.values.clone(),
        set: args.set.clone(),
        namespace: args.namespace.clone(),
        render: !args.no_render,
    };
    let linted = files::read(&input).map_err(|e| e.to_string())?;
    let policy = Policy {
        refuse_exemptions: args.refuse_exemptions,
        require_exemption_expiry: args.require_exemption_expiry,
    };
    let report = crate::evaluate::lint::lint(&linted, &policy);
    Ok(Results {
        source: Source::Lint,
        data: ci::json(&report),
        subjects: vec![Subject {
            name,
            audited: true,
            report,
            ..Subject::default()
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lint_takes_set_values_as_helm_does() {
        use clap::Parser;
        let ok = Cli::try_parse_from([
            "kopf-audit",
            "lint",
            ".",
            "--set",
            "image.tag=1.2",
            "--set",
            "a.b=",
        ]);
        assert!(ok.is_ok(), "{:?}", ok.err());
        for bad in ["image.tag", "=1", "a=b\nc=d"] {
            let refused = Cli::try_parse_from(["kopf-audit", "lint", ".", "--set", bad]);
            assert!(refused.is_err(), "{bad}");
        }
    }

    #[test]
    fn kubeconfig_and_context_are_global_like_kubectl_s() {
        for argv in [
            [
                "kopf-audit",
                "report",
                "--kubeconfig",
                "/k",
                "--context",
                "c",
            ],
            [
                "kopf-audit",
                "--kubeconfig",
                "/k",
                "--context",
                "c",
                "report",
            ],
        ] {
            let cli = Cli::try_parse_from(argv).expect("parses");
            assert_eq!(
                cli.connection.kubeconfig.as_deref(),
                Some(std::path::Path::new("/k"))
            );
            assert_eq!(cli.connection.context.as_deref(), Some("c"));
        }
    }

    #[test]
    fn completion_scripts_name_every_command() {
        use clap::CommandFactory;
        for shell in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
        ] {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "kopf-audit", &mut out);
            let script = String::from_utf8(out).expect("UTF-8");
            for command in [
                "check",
                "lint",
                "report",
                "discover",
                "audit-now",
                "completion",
            ] {
                assert!(script.contains(command), "{shell}: {command} missing");
            }
        }
    }

    /// The output flags of `command`'s parsed arguments.
    fn output_args(argv: &[&str]) -> OutputArgs {
        match Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{argv:?}: {e}")) {
            Cli {
                command: Command::Check(a),
                ..
            } => a.output,
            Cli {
                command: Command::Report(a),
                ..
            } => a.output,
            Cli {
                command: Command::Lint(a),
                ..
            } => a.output,
            _ => panic!("{argv:?}: not check, report or lint"),
        }
    }

    #[test]
    fn check_report_and_lint_share_formats_fail_on_and_color_and_show_examples() {
        use clap::CommandFactory;
        let commands: [&[&str]; 3] = [
            &["kopf-audit", "check", "--deployment", "op"],
            &["kopf-audit", "report", "-A"],
            &["kopf-audit", "lint", "."],
        ];
        for command in commands {
            for (word, format) in [
                ("table", output::Format::Table),
                ("text", output::Format::Table),
                ("json", output::Format::Json),
                ("yaml", output::Format::Yaml),
                ("sarif", output::Format::Sarif),
                ("junit", output::Format::Junit),
                ("codeclimate", output::Format::Codeclimate),
                ("html", output::Format::Html),
            ] {
                let argv: Vec<&str> = command
                    .iter()
                    .copied()
                    .chain(["-o", word, "--fail-on", "warning", "--color", "never"])
                    .collect();
                let args = output_args(&argv);
                assert_eq!(args.output, format, "{argv:?}");
                assert_eq!(args.fail_on, Some(output::FailOn::Warning));
                assert_eq!(args.color, output::ColorChoice::Never);
            }
            let never: Vec<&str> = command
                .iter()
                .copied()
                .chain(["--fail-on", "never"])
                .collect();
            assert_eq!(output_args(&never).fail_on, Some(output::FailOn::None));
            assert_eq!(output_args(command).fail_on, None, "each command's default");
            let mut cli = Cli::command();
            let help = cli
                .find_subcommand_mut(command[1])
                .expect("subcommand")
                .render_long_help()
                .to_string();
            assert!(
                help.contains("Examples:")
                    && help.contains("-o html")
                    && help.contains("--fail-on"),
                "{help}"
            );
        }
    }

    #[test]
    fn discover_like_takes_a_cluster_audits_scope_instead_of_its_own() {
        use clap::CommandFactory;
        match Cli::try_parse_from(["kopf-audit", "discover", "--like", "platform", "-o", "yaml"]) {
            Ok(Cli {
                command: Command::Discover(args),
                ..
            }) => {
                assert_eq!(args.like.as_deref(), Some("platform"));
                assert!(matches!(args.output, DiscoverOutput::Yaml));
            }
            _ => panic!("discover --like platform -o yaml"),
        }
        for scope in [&["-A"][..], &["-n", "team"], &["-l", "app=op"]] {
            let argv: Vec<&str> = ["kopf-audit", "discover", "--like", "platform"]
                .into_iter()
                .chain(scope.iter().copied())
                .collect();
            assert!(Cli::try_parse_from(&argv).is_err(), "{argv:?} refused");
        }
        let help = Cli::command()
            .find_subcommand_mut("discover")
            .expect("discover")
            .render_long_help()
            .to_string();
        assert!(
            help.contains("--like <CLUSTER_KOPF_AUDIT>")
                && help.contains("kopf-audit discover --like platform -o yaml"),
            "{help}"
        );
    }

    fn run_log_level(args: &[&str]) -> Result<String, String> {
        let argv = ["kopf-audit", "run"].iter().chain(args);
        match Cli::try_parse_from(argv) {
            Ok(Cli {
                command: Command::Run(run),
                ..
            }) => Ok(run.log_level.to_string()),
            Ok(_) => Err("not `run`".into()),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn run_reads_warning_as_warn_and_refuses_an_unknown_level() {
        assert_eq!(run_log_level(&[]), Ok("info".into()));
        assert_eq!(
            run_log_level(&["--log-level", "warning"]),
            Ok("warn".into())
        );
        assert_eq!(
            run_log_level(&["--log-level=info,kopf_audit=debug"]),
            Ok("info,kopf_audit=debug".into())
        );
        let refused = run_log_level(&["--log-level", "verbose"]).expect_err("verbose");
        assert!(
            refused.contains("invalid value 'verbose' for '--log-level <LOG_LEVEL>'")
                && refused.contains("`verbose` is no level; a level is one of error, warn"),
            "{refused}"
        );
    }

    /// `audit-now`'s flags as parsed, or the error clap gives.
    fn audit_now_args(argv: &[&str]) -> Result<AuditNowArgs, String> {
        let argv: Vec<&str> = ["kopf-audit", "audit-now"]
            .into_iter()
            .chain(argv.iter().copied())
            .collect();
        match Cli::try_parse_from(argv) {
            Ok(Cli {
                command: Command::AuditNow(args),
                ..
            }) => Ok(args),
            Ok(_) => Err("another command".to_string()),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn audit_now_takes_a_kubectl_timeout_and_the_old_wait_seconds() {
        let wait = |argv: &[&str]| audit_now_args(argv).map(|a| a.wait());
        let secs = std::time::Duration::from_secs;
        assert_eq!(wait(&["op"]), Ok(secs(120)));
        assert_eq!(wait(&["op", "--timeout", "30s"]), Ok(secs(30)));
        assert_eq!(wait(&["op", "--timeout=2m"]), Ok(secs(120)));
        assert_eq!(wait(&["op", "--timeout", "0"]), Ok(secs(0)));
        assert_eq!(wait(&["op", "--wait-seconds", "45"]), Ok(secs(45)));
        let refused = wait(&["op", "--timeout", "soon"]).expect_err("soon");
        assert!(refused.contains("malformed duration"), "{refused}");
        assert!(wait(&["op", "--timeout", "1s", "--wait-seconds", "1"]).is_err());
        let help = <Cli as clap::CommandFactory>::command()
            .find_subcommand_mut("audit-now")
            .expect("audit-now")
            .render_long_help()
            .to_string();
        assert!(
            help.contains("--timeout") && !help.contains("--wait-seconds"),
            "{help}"
        );
    }

    fn discover_args(argv: &[&str]) -> Result<DiscoverArgs, String> {
        let argv: Vec<&str> = ["kopf-audit", "discover"]
            .into_iter()
            .chain(argv.iter().copied())
            .collect();
        match Cli::try_parse_from(argv) {
            Ok(Cli {
                command: Command::Discover(args),
                ..
            }) => Ok(args),
            Ok(_) => Err("another command".to_string()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// The error clap prints for `-l TEXT`, from its first line (clap names the command
    /// in the usage lines that follow).
    fn selector_error(e: &str) -> &str {
        e.lines().next().unwrap_or_default()
    }

    #[test]
    fn discover_and_audit_now_read_selectors_alike() {
        for text in [
            "app=op",
            "app==op,tier!=test",
            "team in (a,b),env notin (dev)",
            "kopf,!legacy",
            "app.kubernetes.io/name=widget-operator",
        ] {
            let discover = discover_args(&["-l", text]).expect(text).selector;
            let audit_now = audit_now_args(&["-l", text]).expect(text).selector;
            assert!(discover.is_some(), "{text}");
            assert_eq!(
                discover.map(|s| s.to_string()),
                audit_now.map(|s| s.to_string()),
                "{text}"
            );
        }
        assert_eq!(
            discover_args(&["-l", "team in (a,b)"])
                .expect("a set")
                .selector
                .map(|s| s.to_string())
                .as_deref(),
            Some("team in (a,b)")
        );
        for bad in ["app=o p", "app in (a", "", "=x", "a in (x),)", "app=op,,"] {
            let discover = discover_args(&["-l", bad]).err();
            let audit_now = audit_now_args(&["-l", bad]).err();
            let (Some(discover), Some(audit_now)) = (discover, audit_now) else {
                panic!("{bad:?} is refused by both");
            };
            assert!(
                selector_error(&discover).contains("selector"),
                "{bad:?}: {discover}"
            );
            assert_eq!(
                selector_error(&discover),
                selector_error(&audit_now),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn audit_now_selects_by_name_or_by_selector_and_namespace_scope() {
        let args = audit_now_args(&["-A", "-l", "team in (a,b)"]).expect("-A -l");
        assert!(args.all_namespaces && args.name.is_none());
        assert_eq!(
            args.selector.map(|s| s.to_string()).as_deref(),
            Some("team in (a,b)")
        );
        assert!(audit_now_args(&["-l", "app=op", "-n", "team"]).is_ok());
        for refused in [
            &[][..],
            &["op", "-l", "app=op"],
            &["op", "-A"],
            &["-A", "-n", "team"],
        ] {
            assert!(audit_now_args(refused).is_err(), "{refused:?} refused");
        }
        let malformed = audit_now_args(&["-l", "app=o p"]).expect_err("malformed");
        assert!(
            malformed.contains("malformed label selector"),
            "{malformed}"
        );
    }

    #[tokio::test]
    async fn audit_now_lists_what_a_selector_picks_in_every_namespace() {
        use crate::testing::{FakeApi, json};
        let (client, api) = FakeApi::start("default", |_, path, _| {
            let item = |ns: &str, name: &str| {
                serde_json::json!({
                    "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
                    "metadata": {"namespace": ns, "name": name},
                    "spec": {"target": {"name": name}},
                })
            };
            let items = if path.starts_with("/apis/kopfaudit.dev/v1alpha1/kopfaudits") {
                vec![item("a", "one"), item("b", "two")]
            } else {
                vec![item("default", "three")]
            };
            json(
                ::http::StatusCode::OK,
                serde_json::json!({"apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAuditList", "metadata": {}, "items": items}),
            )
        });
        let all = audit_now_args(&["-A", "-l", "team=x"]).expect("args");
        let targets = audit_now_targets(&client, &all, "default".into())
            .await
            .expect("listed");
        assert_eq!(
            targets,
            [
                ("a".to_string(), "one".to_string()),
                ("b".into(), "two".into())
            ]
        );
        let seen = api.take();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert!(
            seen[0].is(
                &::http::Method::GET,
                "/apis/kopfaudit.dev/v1alpha1/kopfaudits?"
            ) && seen[0].path.contains("labelSelector=team%3Dx"),
            "{seen:?}"
        );
        let here = audit_now_args(&["-l", "team=x"]).expect("args");
        let targets = audit_now_targets(&client, &here, "default".into())
            .await
            .expect("listed");
        assert_eq!(targets, [("default".to_string(), "three".to_string())]);
        assert!(
            api.take()[0]
                .path
                .starts_with("/apis/kopfaudit.dev/v1alpha1/namespaces/default/kopfaudits?")
        );
        let named = audit_now_args(&["op", "-n", "team"]).expect("args");
        let targets = audit_now_targets(&client, &named, "default".into())
            .await
            .expect("named");
        assert_eq!(targets, [("team".to_string(), "op".to_string())]);
        assert!(api.take().is_empty(), "a named KopfAudit is not listed");
    }
}
