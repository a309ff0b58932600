//! `kopf-audit discover`: every kopf operator among the Deployments in scope, as a
//! table, as JSON, or as KopfAudits to commit to a GitOps repository (one per operator,
//! in its namespace, targeting its Deployment and container).

use crate::api::{KopfAudit, KopfAuditSpec, Recognition};
use crate::gather::discover::{Discovery, Undetermined};
use crate::model::discovery::{Discovered, DiscoveryCost};
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

/// The table: one row per operator found.
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

/// One KopfAudit per operator found: named after its Deployment, in its namespace,
/// with every default, each preceded by a comment saying how kopf was recognised.
pub(crate) fn kopf_audits_yaml(found: &[Discovered]) -> Result<String, serde_yaml::Error> {
    let mut out = String::new();
    for d in found {
        let audit = kopf_audit(d);
        let _ = writeln!(
            out,
            "---\n# {}/{}: kopf recognised by {} ({})",
            d.namespace,
            d.deployment,
            recognised_word(d.recognised_by),
            one_line(&d.evidence)
        );
        out.push_str(&serde_yaml::to_string(&audit)?);
    }
    Ok(out)
}

/// A KopfAudit for an operator found: its Deployment and container, every default.
pub(crate) fn kopf_audit(d: &Discovered) -> KopfAudit {
    let mut spec = KopfAuditSpec::for_deployment(&d.deployment);
    spec.target.container = Some(d.container.clone());
    let mut audit = KopfAudit::new(&d.deployment, spec);
    audit.metadata.namespace = Some(d.namespace.clone());
    audit
}

/// Text on one line, for a YAML comment.
fn one_line(text: &str) -> String {
    text.split(['\n', '\r']).collect::<Vec<_>>().join(" ")
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
        let _ = writeln!(out, "undetermined: {namespace}/{deployment}: {reason}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let yaml = kopf_audits_yaml(&[
            row("op", Recognition::Log, None),
            row("cmd", Recognition::CommandLine, None),
        ])
        .expect("yaml");
        let docs: Vec<KopfAudit> = serde_yaml::Deserializer::from_str(&yaml)
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
}
