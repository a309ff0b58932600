//! `kopf-audit discover`: every kopf operator among the Deployments in scope, as a
//! table, as JSON, or as KopfAudits to commit to a GitOps repository (one per operator,
//! in its namespace, targeting its Deployment and container). With `--like`, the scope
//! and the KopfAudits are a ClusterKopfAudit's: what its controller would generate,
//! less what marks them generated.

use crate::api::{AuditDefaults, ClusterKopfAudit, KopfAudit, Recognition};
use crate::evaluate::cluster_audit::{CrossNamespace, Found, generated_spec, to_commit};
use crate::gather::discover::{Discovery, Undetermined};
use crate::model::discovery::{Discovered, DiscoveryCost};
use kube::ResourceExt;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The word a table shows for how kopf was recognised.
fn recognised_word(by: Recognition) -> &'static str {
    match by {
        Recognition::CommandLine => "command-line",
        Recognition::Log => "log",
        Recognition::Files => "files",
        Recognition::Peering => "peering",
    }
}

/// The scope column: the mode, and the namespaces when known (or, with the scope
/// unknown, those its log names objects in: `unknown (≥ a, b)`).
fn scope_text(d: &Discovered) -> String {
    match (d.scope.as_str(), d.namespaces.is_empty()) {
        (_, true) => d.scope.clone(),
        ("unknown", false) => format!("unknown (at least {})", d.namespaces.join(",")),
        (mode, false) => format!("{mode} ({})", d.namespaces.join(",")),
    }
}

/// The table: one row per operator found, each cell on one line and inert (a
/// version or a namespace read from a log is anyone's text).
pub(crate) fn table(found: &[Discovered]) -> String {
    let header = ["NAMESPACE", "DEPLOYMENT", "RECOGNISED BY", "KOPF", "SCOPE"];
    let rows: Vec<[String; 5]> = found
        .iter()
        .map(|d| {
            [
                d.namespace.clone(),
                d.deployment.clone(),
                recognised_word(d.recognised_by).to_string(),
                d.kopf_version.clone().unwrap_or_else(|| "-".to_string()),
                scope_text(d),
            ]
            .map(|cell| one_line(&cell))
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[&str]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", padded.join("   ").trim_end());
    };
    line(&header);
    for row in &rows {
        line(&row.each_ref().map(String::as_str));
    }
    out
}

/// What the KopfAudits of `-o yaml` are like.
pub(crate) enum Template<'a> {
    /// Named after their Deployments, every default.
    Defaults,
    /// Those the ClusterKopfAudit `cka` would generate, given the KopfAudits that exist
    /// (`existing`, which may cover an operator already), as hand-written ones.
    Like {
        /// The ClusterKopfAudit.
        cka: &'a ClusterKopfAudit,
        /// The KopfAudits of the cluster.
        existing: &'a [KopfAudit],
        /// Whether the auditor runs KopfAudits against other namespaces.
        cross: CrossNamespace,
    },
}

/// One KopfAudit per operator found, in its namespace, each preceded by a comment
/// saying how kopf was recognised; with [`Template::Like`], only those the
/// ClusterKopfAudit would generate (a comment names the others).
pub(crate) fn kopf_audits_yaml(
    found: &[Discovered],
    template: &Template<'_>,
) -> Result<String, serde_yaml_ng::Error> {
    let audits: Vec<KopfAudit> = match template {
        Template::Defaults => found.iter().map(kopf_audit).collect(),
        Template::Like {
            cka,
            existing,
            cross,
        } => {
            let found = Found {
                operators: found.to_vec(),
                undetermined: BTreeSet::new(),
            };
            to_commit(cka, &found, existing, *cross)
        }
    };
    let mut out = String::new();
    if let Template::Like { cka, .. } = template {
        let _ = writeln!(
            out,
            "# The KopfAudits ClusterKopfAudit {name} generates, to commit in its place.\n# Delete it first and wait until `kubectl get kopfaudit -A -l {label}={name}`\n# lists none: applied over a generated KopfAudit of the same name, one would keep\n# its label and owner reference, and go with it.",
            name = cka.name_any(),
            label = crate::catalog::CLUSTER_AUDIT_LABEL,
        );
    }
    for d in found {
        let recognised = one_line(&format!(
            "{}/{}: kopf recognised by {} ({})",
            d.namespace,
            d.deployment,
            recognised_word(d.recognised_by),
            d.evidence
        ));
        match audits.iter().find(|a| audits_operator(a, d)) {
            Some(audit) => {
                let _ = writeln!(out, "---\n# {recognised}");
                out.push_str(&serde_yaml_ng::to_string(audit)?);
            }
            None => {
                let _ = writeln!(
                    out,
                    "# {recognised}; a KopfAudit written elsewhere audits it already, none generated"
                );
            }
        }
    }
    Ok(out)
}

/// Whether `audit` (one of those printed) is the KopfAudit of the operator `d`.
fn audits_operator(audit: &KopfAudit, d: &Discovered) -> bool {
    audit.metadata.namespace.as_deref() == Some(d.namespace.as_str())
        && audit.spec.target.deployment.as_deref() == Some(d.deployment.as_str())
}

/// A KopfAudit for an operator found: its Deployment and container, every default.
pub(crate) fn kopf_audit(d: &Discovered) -> KopfAudit {
    let mut audit = KopfAudit::new(&d.deployment, generated_spec(&AuditDefaults::default(), d));
    audit.metadata.namespace = Some(d.namespace.clone());
    audit
}

/// Text on one line and inert, for a table cell or a YAML comment: a line break in
/// a comment would end it and start YAML of its own.
fn one_line(text: &str) -> String {
    super::inert::one_line(text)
}

/// The JSON output: operators, the undetermined, and the cost.
pub(crate) fn json(discovery: &Discovery, requests: u64) -> serde_json::Value {
    serde_json::json!({
        "operators": discovery.found,
        "undetermined": discovery.undetermined,
        "cost": cost_json(&discovery.cost, requests),
    })
}

fn cost_json(cost: &DiscoveryCost, requests: u64) -> serde_json::Value {
    let mut value = serde_json::to_value(cost).unwrap_or_default();
    value["requests"] = requests.into();
    value
}

/// The summary written to stderr: what was decided how, and what it cost.
pub(crate) fn summary(discovery: &Discovery, requests: u64) -> String {
    let c = &discovery.cost;
    let mut out = format!(
        "kopf-audit discover: {} kopf operator(s) among {} Deployment(s); {} decided by their spec, {} by their pods' logs, {} by kopf's peering objects; {} request(s): {} list page(s) of Deployments ({} bytes), {} pod list(s), {} list(s) of peering objects, {} log read(s)\n",
        discovery.found.len(),
        c.deployments,
        c.decided_by_spec,
        c.decided_by_log,
        c.decided_by_peering,
        requests,
        c.pages,
        c.list_bytes,
        c.pod_lists,
        c.peering_lists,
        requests.saturating_sub(c.pages + c.pod_lists + c.peering_lists),
    );
    for Undetermined {
        namespace,
        deployment,
        reason,
    } in &discovery.undetermined
    {
        let _ = writeln!(
            out,
            "undetermined: {}",
            one_line(&format!("{namespace}/{deployment}: {reason}"))
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ClusterKopfAuditSpec;
    use crate::evaluate::cluster_audit::{ClusterScope, in_scope, scope_of};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

    fn row(deployment: &str, by: Recognition, version: Option<&str>) -> Discovered {
        Discovered {
            namespace: "team".into(),
            deployment: deployment.into(),
            container: "operator".into(),
            recognised_by: by,
            evidence: "log of pod op-0: \"Activity 'login_via_client' succeeded.\"".into(),
            kopf_version: version.map(str::to_string),
            scope: "unknown".into(),
            namespaces: vec!["team".into()],
            labels: Default::default(),
        }
    }

    #[test]
    fn the_table_has_a_row_per_operator_with_how_and_version() {
        let t = table(&[
            row("op", Recognition::Log, Some("1.44.0 or newer")),
            row("cmd", Recognition::CommandLine, None),
        ]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert!(lines[0].starts_with("NAMESPACE"), "{t}");
        assert!(
            lines[1].contains("log") && lines[1].contains("1.44.0 or newer"),
            "{t}"
        );
        assert!(lines[1].contains("unknown (at least team)"), "{t}");
        assert!(
            lines[2].contains("command-line") && lines[2].contains(" - "),
            "{t}"
        );
    }

    #[test]
    fn the_yaml_is_one_kopf_audit_per_operator_that_the_api_accepts() {
        let yaml = kopf_audits_yaml(
            &[
                row("op", Recognition::Log, None),
                row("cmd", Recognition::CommandLine, None),
            ],
            &Template::Defaults,
        )
        .expect("yaml");
        let docs: Vec<KopfAudit> = serde_yaml_ng::Deserializer::from_str(&yaml)
            .map(|d| serde::Deserialize::deserialize(d).expect("a KopfAudit"))
            .collect();
        assert_eq!(docs.len(), 2, "{yaml}");
        assert_eq!(docs[0].metadata.name.as_deref(), Some("op"));
        assert_eq!(docs[0].metadata.namespace.as_deref(), Some("team"));
        assert_eq!(docs[0].spec.target.deployment.as_deref(), Some("op"));
        assert_eq!(docs[0].spec.target.container.as_deref(), Some("operator"));
        assert!(docs[0].status.is_none());
        assert!(yaml.contains("# team/op: kopf recognised by log"), "{yaml}");
        assert!(!yaml.contains("status"), "{yaml}");
    }

    /// A ClusterKopfAudit whose defaults differ from every default in each field.
    fn platform() -> ClusterKopfAudit {
        let spec: ClusterKopfAuditSpec = serde_json::from_value(serde_json::json!({
            "namespaceSelector": {"matchLabels": {"team": "platform"}},
            "selector": {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["test"]}]},
            "exclusions": {"namespaces": ["legacy"], "deployments": [{"namespace": "team", "name": "old"}]},
            "defaults": {
                "interval": "30s",
                "checks": {"disable": ["rbac.events"], "severity": {"workload.liveness": "error"}},
                "thresholds": {"eventRepeats": 7},
                "logs": {"window": "5m"}
            }
        }))
        .expect("a ClusterKopfAudit spec");
        let mut cka = ClusterKopfAudit::new("platform", spec);
        cka.metadata.uid = Some("uid-platform".into());
        cka
    }

    fn parse(yaml: &str) -> Vec<KopfAudit> {
        serde_yaml_ng::Deserializer::from_str(yaml)
            .map(|d| serde::Deserialize::deserialize(d).expect("a KopfAudit"))
            .collect()
    }

    #[test]
    fn like_a_cluster_audit_the_yaml_is_what_it_generates_less_what_marks_it_generated() {
        let cka = platform();
        let found = [
            row("op", Recognition::Log, None),
            row("cmd", Recognition::CommandLine, None),
        ];
        let template = Template::Like {
            cka: &cka,
            existing: &[],
            cross: CrossNamespace::Refused,
        };
        let yaml = kopf_audits_yaml(&found, &template).expect("yaml");
        let docs = parse(&yaml);
        assert_eq!(docs.len(), 2, "{yaml}");
        for (doc, operator) in docs.iter().zip(&found) {
            let generated = crate::evaluate::cluster_audit::generated_audit(
                &cka,
                operator,
                &operator.deployment,
            );
            assert_eq!(doc.spec, generated.spec, "the generated spec: {yaml}");
            assert_eq!(doc.metadata.name, generated.metadata.name, "{yaml}");
            assert_eq!(doc.metadata.namespace, generated.metadata.namespace);
            assert!(
                generated
                    .labels()
                    .contains_key(crate::catalog::CLUSTER_AUDIT_LABEL)
            );
            assert!(
                doc.labels().is_empty(),
                "no label marks it generated: {yaml}"
            );
            assert!(doc.owner_references().is_empty(), "not owned: {yaml}");
        }
        assert_eq!(docs[0].spec.interval, "30s");
        assert_eq!(docs[0].spec.logs.window.as_deref(), Some("5m"));
        assert_eq!(
            docs[0].spec.checks.disable,
            vec![crate::catalog::CheckId::RbacEvents]
        );
        assert_eq!(
            docs[0].spec.checks.severity.get("workload.liveness"),
            Some(&crate::catalog::Severity::Error)
        );
        assert_eq!(docs[0].spec.thresholds, cka.spec.defaults.thresholds);
        assert_eq!(docs[0].spec.thresholds.event_repeats, Some(7));
        assert!(
            !yaml.contains("labels:") && !yaml.contains("ownerReferences"),
            "{yaml}"
        );
        assert!(
            yaml.starts_with("# The KopfAudits ClusterKopfAudit platform generates"),
            "{yaml}"
        );
    }

    #[test]
    fn like_a_cluster_audit_an_operator_audited_elsewhere_gets_none_and_names_agree() {
        let cka = platform();
        let found = [
            row("covered", Recognition::Log, None),
            row("named", Recognition::Log, None),
            row("ours", Recognition::Log, None),
        ];
        let written = |name: &str, deployment: &str, labels: &[(&str, &str)]| {
            let mut a = KopfAudit::new(name, crate::api::KopfAuditSpec::for_deployment(deployment));
            a.metadata.namespace = Some("team".into());
            a.metadata.labels = Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            );
            a
        };
        // Written by hand for `covered`, as strict as the defaults: it stands in,
        // nothing is generated.
        let mut covering = written("team-audit", "covered", &[]);
        covering.spec.checks = cka.spec.defaults.checks.clone();
        covering.spec.interval = cka.spec.defaults.interval.clone();
        covering.spec.thresholds = cka.spec.defaults.thresholds.clone();
        covering.spec.logs = cka.spec.defaults.logs.clone();
        let existing = [
            covering,
            // Written by hand for another Deployment, with `named`'s name.
            written("named", "elsewhere", &[]),
            // Generated by this ClusterKopfAudit: it is replaced, not respected.
            written(
                "ours",
                "ours",
                &[(crate::catalog::CLUSTER_AUDIT_LABEL, "platform")],
            ),
        ];
        let template = Template::Like {
            cka: &cka,
            existing: &existing,
            cross: CrossNamespace::Refused,
        };
        let yaml = kopf_audits_yaml(&found, &template).expect("yaml");
        let names: Vec<(String, Option<String>)> = parse(&yaml)
            .iter()
            .map(|a| (a.name_any(), a.spec.target.deployment.clone()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("named-kopf-audit".to_string(), Some("named".to_string())),
                ("ours".to_string(), Some("ours".to_string())),
            ],
            "{yaml}"
        );
        assert!(
            yaml.contains("# team/covered: kopf recognised by log")
                && yaml.contains("audits it already, none generated"),
            "{yaml}"
        );
    }

    #[test]
    fn every_default_without_like_is_the_shared_spec_with_no_defaults_changed() {
        let d = row("op", Recognition::Log, None);
        let audit = kopf_audit(&d);
        assert_eq!(audit.spec, generated_spec(&AuditDefaults::default(), &d));
        assert_eq!(audit.spec.interval, crate::api::DEFAULT_INTERVAL);
        assert!(audit.labels().is_empty());
    }

    #[test]
    fn like_scope_takes_the_cluster_audits_selectors_and_exclusions() {
        let cka = platform();
        let scope = scope_of(&cka.spec).expect("valid selectors");
        assert_eq!(
            scope,
            ClusterScope {
                namespace_selector: Some("team=platform".into()),
                deployment_selector: Some("tier notin (test)".into()),
            }
        );
        let selected: BTreeSet<String> = ["team".to_string(), "legacy".to_string()].into();
        let keeps = |ns: &str, name: &str| in_scope(&cka.spec, Some(&selected), ns, name);
        assert!(keeps("team", "op"));
        assert!(!keeps("team", "old"), "an excluded Deployment");
        assert!(!keeps("legacy", "op"), "an excluded namespace");
        assert!(
            !keeps("other", "op"),
            "a namespace its selector does not match"
        );
        assert!(
            in_scope(&cka.spec, None, "other", "op"),
            "no namespaceSelector: every namespace"
        );

        let mut everything = cka.spec.clone();
        everything.namespace_selector = Some(LabelSelector::default());
        everything.selector = None;
        assert_eq!(
            scope_of(&everything),
            Ok(ClusterScope {
                namespace_selector: None,
                deployment_selector: None
            })
        );
        let mut invalid = cka.spec;
        invalid.selector = Some(
            serde_json::from_value(
                serde_json::json!({"matchExpressions": [{"key": "tier", "operator": "Sometimes"}]}),
            )
            .expect("selector"),
        );
        let refused = scope_of(&invalid).expect_err("an invalid operator");
        assert!(refused.starts_with("spec.selector is invalid"), "{refused}");
    }

    /// Names as a compromised or fake API server could send them: discovery through the
    /// mocked API, then every output `discover` prints, made inert as it prints them.
    #[tokio::test]
    async fn names_from_the_api_cannot_write_to_the_terminal_or_the_ci_log() {
        use crate::gather::discover::{Scope, discover};
        use crate::gather::recognise::Verdicts;
        let hostile = "op\n::error::All checks passed\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{202e}\u{85}::x";
        let (client, _api) = crate::testing::FakeApi::start("team", move |_, path, _| {
            let items = if path.contains("/deployments") {
                serde_json::json!([{
                    "metadata": {"name": hostile, "namespace": hostile},
                    "spec": {
                        "selector": {"matchLabels": {"app": "op"}},
                        "template": {"metadata": {"labels": {"app": "op"}},
                            "spec": {"containers": [{"name": hostile, "image": "op",
                                "command": ["kopf", "run", "-n", hostile, "op.py"]}]}}
                    }
                }])
            } else {
                serde_json::json!([])
            };
            crate::testing::json(
                http::StatusCode::OK,
                serde_json::json!({"metadata": {}, "items": items}),
            )
        });
        let found = discover(&client, &Verdicts::default(), Scope::default())
            .await
            .expect("discovered");
        assert_eq!(found.found.len(), 1, "the operator is found");
        let outputs = [
            crate::cli::inert::inert(&table(&found.found)),
            crate::cli::inert::inert(
                &kopf_audits_yaml(&found.found, &Template::Defaults).expect("yaml"),
            ),
            crate::cli::inert::inert(
                &serde_json::to_string_pretty(&json(&found, 1)).expect("json"),
            ),
            crate::cli::inert::inert(&summary(&found, 1)),
        ];
        for text in &outputs {
            assert!(
                !text.lines().any(|l| l.trim_start().starts_with("::")),
                "{text}"
            );
            assert!(!text.chars().any(crate::cli::inert::acts), "{text:?}");
        }
        serde_json::from_str::<serde_json::Value>(&outputs[2]).expect("still JSON");
    }

    #[test]
    fn hostile_evidence_and_versions_stay_on_their_line_in_every_output() {
        let mut d = row(
            "op",
            Recognition::Log,
            Some("1.0\n::error::x\u{1b}]0;T\u{7}"),
        );
        d.evidence = "log: \"a\n---\nkind: Secret\n::warning::y\u{202E}\"".into();
        let found = [d];
        let table = crate::cli::inert::inert(&table(&found));
        assert_eq!(table.lines().count(), 2, "{table}");
        let yaml =
            crate::cli::inert::inert(&kopf_audits_yaml(&found, &Template::Defaults).expect("yaml"));
        assert_eq!(
            parse(&yaml).len(),
            1,
            "the evidence starts no document: {yaml}"
        );
        for text in [&table, &yaml] {
            assert!(
                !text.lines().any(|l| l.trim_start().starts_with("::")),
                "{text}"
            );
            assert!(
                !text.chars().any(|c| c == '\x1b' || c == '\u{202E}'),
                "{text:?}"
            );
        }
    }
}
