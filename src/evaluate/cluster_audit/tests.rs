use super::*;
use crate::api::{ClusterKopfAuditSpec, DeploymentRef, KopfAuditStatus, Recognition, Summary};

/// The plan of an auditor started without `--allow-cross-namespace` (its default).
fn plan(cka: &ClusterKopfAudit, found: &Found, existing: &[KopfAudit]) -> Plan {
    super::plan(cka, found, existing, CrossNamespace::Refused)
}

fn cka(name: &str) -> ClusterKopfAudit {
    let mut spec = ClusterKopfAuditSpec::default();
    spec.defaults.interval = "30s".into();
    spec.exclusions.deployments = vec![DeploymentRef {
        namespace: "x".into(),
        name: "y".into(),
    }];
    let mut cka = ClusterKopfAudit::new(name, spec);
    cka.metadata.uid = Some("uid-1".into());
    cka.metadata.generation = Some(3);
    cka
}

fn operator(namespace: &str, deployment: &str) -> Discovered {
    Discovered {
        namespace: namespace.into(),
        deployment: deployment.into(),
        container: "operator".into(),
        recognised_by: Recognition::CommandLine,
        evidence: "`kopf run` on the command line".into(),
        kopf_version: None,
        scope: "cluster-wide".into(),
        namespaces: Vec::new(),
        labels: BTreeMap::from([("app".to_string(), deployment.to_string())]),
    }
}

/// A KopfAudit written by hand for `deployment`, re-audited as often as [`cka`]'s.
fn hand_written(namespace: &str, name: &str, deployment: &str) -> KopfAudit {
    let mut audit = KopfAudit::new(
        name,
        KopfAuditSpec {
            interval: "30s".into(),
            ..KopfAuditSpec::for_deployment(deployment)
        },
    );
    audit.metadata.namespace = Some(namespace.into());
    audit
}

fn with_compliance(mut audit: KopfAudit, compliant: &str, errors: u32, warnings: u32) -> KopfAudit {
    audit.status = Some(KopfAuditStatus {
        conditions: vec![Condition {
            type_: "Compliant".into(),
            status: compliant.into(),
            reason: "AreasNotCompliant".into(),
            message: String::new(),
            observed_generation: None,
            last_transition_time: Time(jiff::Timestamp::UNIX_EPOCH),
        }],
        summary: Some(Summary {
            errors,
            warnings,
            ..Summary::default()
        }),
        ..KopfAuditStatus::default()
    });
    audit
}

fn found(operators: Vec<Discovered>) -> Found {
    Found {
        operators,
        undetermined: BTreeSet::new(),
    }
}

#[test]
fn every_operator_gets_one_generated_audit_owned_labelled_and_with_the_defaults() {
    let cka = cka("platform");
    let plan = plan(
        &cka,
        &found(vec![operator("a", "op-a"), operator("b", "op-b")]),
        &[],
    );
    assert_eq!(plan.apply.len(), 2);
    assert!(plan.delete.is_empty());
    let audit = &plan.apply[0];
    assert_eq!(audit.namespace().as_deref(), Some("a"));
    assert_eq!(audit.name_any(), "op-a");
    assert_eq!(audit.spec.target.deployment.as_deref(), Some("op-a"));
    assert_eq!(audit.spec.target.container.as_deref(), Some("operator"));
    assert_eq!(audit.spec.interval, "30s");
    assert_eq!(
        audit.labels().get(CLUSTER_AUDIT_LABEL).map(String::as_str),
        Some("platform")
    );
    let owner = &audit.owner_references()[0];
    assert_eq!(owner.kind, "ClusterKopfAudit");
    assert_eq!(owner.api_version, "kopfaudit.dev/v1alpha1");
    assert_eq!(owner.uid, "uid-1");
    assert_eq!(owner.controller, Some(true));
    assert_eq!(plan.summary.discovered, 2);
    assert_eq!(plan.summary.generated, 2);
    assert_eq!(plan.summary.pending, 2);
}

#[test]
fn a_generated_audit_that_says_what_it_should_is_not_applied_again() {
    let cka = cka("platform");
    let first = plan(&cka, &found(vec![operator("a", "op-a")]), &[]).apply;
    let again = plan(&cka, &found(vec![operator("a", "op-a")]), &first);
    assert!(again.apply.is_empty());
    assert!(again.delete.is_empty());
    let mut changed = cka.clone();
    changed.spec.defaults.interval = "10m".into();
    let after_change = plan(&changed, &found(vec![operator("a", "op-a")]), &first);
    assert_eq!(after_change.apply.len(), 1);
    assert_eq!(after_change.apply[0].spec.interval, "10m");
}

#[test]
fn a_hand_written_audit_wins_and_the_generated_one_goes() {
    let cka = cka("platform");
    let ours = plan(&cka, &found(vec![operator("a", "op-a")]), &[]).apply;
    let mut existing = ours.clone();
    existing.push(with_compliance(
        hand_written("a", "mine", "op-a"),
        "True",
        0,
        0,
    ));
    let plan = plan(&cka, &found(vec![operator("a", "op-a")]), &existing);
    assert!(plan.apply.is_empty(), "{:?}", plan.apply);
    assert_eq!(plan.delete, vec![("a".to_string(), "op-a".to_string())]);
    assert_eq!(plan.summary.declared, 1);
    assert_eq!(plan.summary.compliant, 1);
    assert_eq!(plan.summary.generated, 0);
}

#[test]
fn a_hand_written_audit_whose_selector_matches_the_deployment_wins_too() {
    let cka = cka("platform");
    let mut spec = hand_written("a", "unused", "unused").spec;
    spec.target.deployment = None;
    spec.target.selector = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
            match_labels: Some(BTreeMap::from([("app".to_string(), "op-a".to_string())])),
            ..Default::default()
        },
    );
    let mut selecting = KopfAudit::new("by-label", spec);
    selecting.metadata.namespace = Some("a".into());
    let plan = plan(
        &cka,
        &found(vec![
            operator("a", "op-a"),
            operator("a", "op-b"),
            operator("b", "op-a"),
        ]),
        &[selecting],
    );
    let generated: Vec<(String, String)> = plan
        .apply
        .iter()
        .map(|a| (a.namespace().unwrap_or_default(), a.name_any()))
        .collect();
    assert_eq!(
        generated,
        [
            ("a".to_string(), "op-b".to_string()),
            ("b".to_string(), "op-a".to_string())
        ],
        "only a/op-a is covered by the selector"
    );
    assert_eq!(plan.summary.declared, 1);
}

#[test]
fn a_hand_written_audit_of_another_deployment_keeps_its_name_and_ours_takes_another() {
    let cka = cka("platform");
    let existing = vec![hand_written("a", "op-a", "something-else")];
    let plan = plan(&cka, &found(vec![operator("a", "op-a")]), &existing);
    assert_eq!(plan.apply.len(), 1);
    assert_eq!(plan.apply[0].name_any(), "op-a-kopf-audit");
}

#[test]
fn an_operator_gone_loses_its_generated_audit_but_an_undecided_one_keeps_it() {
    let cka = cka("platform");
    let existing = plan(
        &cka,
        &found(vec![operator("a", "gone"), operator("a", "hidden")]),
        &[],
    )
    .apply;
    let mut now = found(vec![]);
    now.undetermined
        .insert(("a".to_string(), "hidden".to_string()));
    let plan = plan(&cka, &now, &existing);
    assert_eq!(plan.delete, vec![("a".to_string(), "gone".to_string())]);
    assert_eq!(plan.summary.undetermined, 1);
}

#[test]
fn another_cluster_audits_generated_audit_is_not_duplicated_nor_deleted() {
    let other = cka("other");
    let theirs = plan(&other, &found(vec![operator("a", "op-a")]), &[]).apply;
    let plan = plan(
        &cka("platform"),
        &found(vec![operator("a", "op-a")]),
        &theirs,
    );
    assert!(plan.apply.is_empty());
    assert!(plan.delete.is_empty());
    assert_eq!(plan.summary.declared, 1);
}

#[test]
fn offenders_are_the_non_compliant_most_errors_first_and_bounded() {
    let cka = cka("platform");
    let operators: Vec<Discovered> = (0..15)
        .map(|i| operator("a", &format!("op-{i:02}")))
        .collect();
    let mut existing: Vec<KopfAudit> = (0..15)
        .map(|i| {
            let name = format!("op-{i:02}");
            with_compliance(hand_written("a", &name, &name), "False", i % 4, i)
        })
        .collect();
    existing[0] = with_compliance(hand_written("a", "op-00", "op-00"), "True", 0, 0);
    let plan = plan(&cka, &found(operators), &existing);
    assert_eq!(plan.summary.non_compliant, 14);
    assert_eq!(plan.summary.compliant, 1);
    assert_eq!(plan.offenders.len(), MAX_OFFENDERS);
    assert_eq!(plan.offenders[0].deployment, "op-11");
    assert_eq!(plan.offenders[0].errors, 3);
    assert!(plan.offenders.iter().all(|o| o.deployment != "op-00"));
}

#[test]
fn exclusions_name_namespaces_and_deployments() {
    let cka = cka("platform");
    assert!(cka.spec.exclusions.excludes("x", "y"));
    assert!(!cka.spec.exclusions.excludes("x", "z"));
}

#[test]
fn status_counts_on_success_and_keeps_them_on_failure() {
    let cka = cka("platform");
    let now = Time(jiff::Timestamp::UNIX_EPOCH);
    let planned = plan(&cka, &found(vec![operator("a", "op-a")]), &[]);
    let ok = next_status(None, &ClusterOutcome::Discovered(planned), Some(3), &now);
    assert_eq!(ok.observed_generation, Some(3));
    assert_eq!(ok.summary.as_ref().map(|s| s.discovered), Some(1));
    let ready = ok
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("True", "DiscoverySucceeded")
    );
    let failed = next_status(
        Some(&ok),
        &ClusterOutcome::Failed("listing Deployments: 503".into()),
        Some(3),
        &now,
    );
    assert_eq!(failed.summary, ok.summary);
    let reconciling = failed
        .conditions
        .iter()
        .find(|c| c.type_ == "Reconciling")
        .expect("Reconciling");
    assert_eq!(reconciling.status, "True");
    let stalled = next_status(
        Some(&ok),
        &ClusterOutcome::Stalled("bad".into()),
        Some(4),
        &now,
    );
    let stalled = stalled
        .conditions
        .iter()
        .find(|c| c.type_ == "Stalled")
        .expect("Stalled");
    assert_eq!(
        (stalled.status.as_str(), stalled.reason.as_str()),
        ("True", "InvalidSpec")
    );
}

/// A KopfAudit written in `namespace` whose target is `target_namespace/deployment`.
fn aimed_at(namespace: &str, name: &str, target_namespace: &str, deployment: &str) -> KopfAudit {
    let mut audit = hand_written(namespace, name, deployment);
    audit.spec.target.namespace = Some(target_namespace.into());
    audit
}

/// The KopfAudits a plan applies, by namespace and name.
fn applied(plan: &Plan) -> Vec<(String, String)> {
    plan.apply
        .iter()
        .map(|a| (a.namespace().unwrap_or_default(), a.name_any()))
        .collect()
}

#[test]
fn another_namespaces_kopf_audit_covers_nothing_the_auditor_refuses_to_run() {
    let cka = cka("platform");
    let operators = found(vec![operator("team-b", "x")]);
    let generated = plan(&cka, &operators, &[]).apply;
    let mut existing = generated.clone();
    existing.push(with_compliance(
        aimed_at("team-a", "hijack", "team-b", "x"),
        "True",
        0,
        0,
    ));
    let refused = super::plan(&cka, &operators, &existing, CrossNamespace::Refused);
    assert!(refused.delete.is_empty(), "{:?}", refused.delete);
    assert!(refused.apply.is_empty(), "the generated one is up to date");
    assert_eq!(refused.summary.generated, 1);
    assert_eq!(refused.summary.declared, 0);
    assert_eq!(
        refused.summary.compliant, 0,
        "the tenant's Compliant is not counted"
    );

    let allowed = super::plan(&cka, &operators, &existing, CrossNamespace::Allowed);
    assert_eq!(allowed.delete, [("team-b".to_string(), "x".to_string())]);
    assert_eq!(allowed.summary.declared, 1);
    assert_eq!(allowed.summary.compliant, 1);
}

#[test]
fn another_namespaces_selector_covers_only_when_cross_namespace_is_allowed() {
    let cka = cka("platform");
    let mut selecting = aimed_at("team-a", "by-label", "team-b", "unused");
    selecting.spec.target.deployment = None;
    selecting.spec.target.selector = Some(LabelSelector {
        match_labels: Some(BTreeMap::from([("app".to_string(), "x".to_string())])),
        ..Default::default()
    });
    let operators = found(vec![operator("team-b", "x")]);
    let existing = [selecting];
    let refused = super::plan(&cka, &operators, &existing, CrossNamespace::Refused);
    assert_eq!(applied(&refused), [("team-b".to_string(), "x".to_string())]);
    let allowed = super::plan(&cka, &operators, &existing, CrossNamespace::Allowed);
    assert!(allowed.apply.is_empty());
    assert_eq!(allowed.summary.declared, 1);
}

#[test]
fn a_suspended_or_other_container_kopf_audit_covers_nothing() {
    let cka = cka("platform");
    let mut suspended = hand_written("a", "paused", "op-a");
    suspended.spec.suspend = true;
    let mut sidecar = hand_written("a", "sidecar", "op-a");
    sidecar.spec.target.container = Some("sidecar".into());
    for audit in [suspended, sidecar] {
        let plan = plan(&cka, &found(vec![operator("a", "op-a")]), &[audit]);
        assert_eq!(applied(&plan), [("a".to_string(), "op-a".to_string())]);
    }
}

/// A hand-written KopfAudit of `a/op-a` disabling every check.
fn disabling_everything() -> KopfAudit {
    let mut audit = hand_written("a", "mine", "op-a");
    audit.spec.checks.disable = CheckId::ALL.to_vec();
    with_compliance(audit, "True", 0, 0)
}

#[test]
fn a_kopf_audit_that_disables_what_the_defaults_run_keeps_the_generated_one() {
    for mode in [DeclaredAudits::Replace, DeclaredAudits::Beside] {
        let mut cka = cka("platform");
        cka.spec.declared_audits = mode;
        let operators = found(vec![operator("a", "op-a")]);
        let mut existing = plan(&cka, &operators, &[]).apply;
        existing.push(disabling_everything());
        let plan = plan(&cka, &operators, &existing);
        assert!(plan.delete.is_empty(), "{mode:?}: {:?}", plan.delete);
        assert_eq!(plan.summary.generated, 1, "{mode:?}");
        assert_eq!(plan.summary.declared, 0, "{mode:?}");
        assert_eq!(
            plan.summary.compliant, 0,
            "{mode:?}: the tenant's view is not counted"
        );
    }
}

#[test]
fn a_kopf_audit_that_lowers_a_severity_keeps_the_generated_one() {
    let cka = cka("platform");
    let mut lowering = hand_written("a", "mine", "op-a");
    let check = CheckId::ALL
        .iter()
        .copied()
        .find(|c| c.default_severity() > Severity::Info)
        .expect("a check above info");
    lowering
        .spec
        .checks
        .severity
        .insert(check.as_str().to_string(), Severity::Info);
    assert_eq!(
        weakened(&cka.spec.defaults, &lowering.spec),
        [Weakening::Check(check)]
    );
    let plan = plan(&cka, &found(vec![operator("a", "op-a")]), &[lowering]);
    assert_eq!(applied(&plan), [("a".to_string(), "op-a".to_string())]);
}

#[test]
fn a_kopf_audit_disabling_only_what_the_defaults_disable_replaces_the_generated_one() {
    let mut cka = cka("platform");
    cka.spec.defaults.checks.disable = vec![CheckId::WorkloadLiveness];
    let operators = found(vec![operator("a", "op-a")]);
    let mut existing = plan(&cka, &operators, &[]).apply;
    let mut mine = hand_written("a", "mine", "op-a");
    mine.spec.checks.disable = vec![CheckId::WorkloadLiveness];
    existing.push(with_compliance(mine, "True", 0, 0));
    let replaced = plan(&cka, &operators, &existing);
    assert_eq!(replaced.delete, [("a".to_string(), "op-a".to_string())]);
    assert_eq!(replaced.summary.declared, 1);

    cka.spec.declared_audits = DeclaredAudits::Beside;
    let beside = plan(&cka, &operators, &existing);
    assert!(beside.delete.is_empty(), "{:?}", beside.delete);
    assert_eq!(beside.summary.generated, 1);
}

#[test]
fn an_undecided_deployments_generated_audit_is_kept_beside_a_weaker_one() {
    let cka = cka("platform");
    let existing = {
        let mut e = plan(&cka, &found(vec![operator("a", "op-a")]), &[]).apply;
        e.push(disabling_everything());
        e
    };
    let mut now = found(vec![]);
    now.undetermined
        .insert(("a".to_string(), "op-a".to_string()));
    let plan = plan(&cka, &now, &existing);
    assert!(plan.delete.is_empty(), "{:?}", plan.delete);
}

#[test]
fn a_deployment_named_like_a_derived_name_and_the_one_it_derives_from_get_two_names() {
    let cka = cka("platform");
    let operators = found(vec![operator("a", "x"), operator("a", "x-kopf-audit")]);
    let elsewhere = hand_written("a", "x", "something-else");
    let first = plan(&cka, &operators, std::slice::from_ref(&elsewhere));
    let names: BTreeSet<(String, String)> = applied(&first).into_iter().collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.contains(&("a".to_string(), "x-kopf-audit".to_string())));
    let for_x = first
        .apply
        .iter()
        .find(|a| a.spec.target.deployment.as_deref() == Some("x"))
        .expect("x's");
    assert!(
        for_x.name_any().starts_with("x-") && for_x.name_any().ends_with("-kopf-audit"),
        "{}",
        for_x.name_any()
    );
    assert_ne!(for_x.name_any(), "x-kopf-audit");

    let mut existing = first.apply.clone();
    existing.push(elsewhere);
    let again = plan(&cka, &operators, &existing);
    assert!(again.apply.is_empty(), "stable: {:?}", applied(&again));
    assert!(again.delete.is_empty(), "stable: {:?}", again.delete);
    let reversed = found(vec![operator("a", "x-kopf-audit"), operator("a", "x")]);
    let in_other_order = plan(&cka, &reversed, &existing);
    assert!(in_other_order.apply.is_empty() && in_other_order.delete.is_empty());
}

#[test]
fn a_derived_name_taken_by_a_kopf_audit_written_elsewhere_is_hashed() {
    let cka = cka("platform");
    let existing = [
        hand_written("a", "x", "other"),
        hand_written("a", "x-kopf-audit", "other"),
    ];
    let plan = plan(&cka, &found(vec![operator("a", "x")]), &existing);
    let name = plan.apply[0].name_any();
    assert!(!["x", "x-kopf-audit"].contains(&name.as_str()), "{name}");
    assert!(crate::model::names::is_dns_subdomain(&name), "{name}");
}

#[test]
fn an_undecided_deployments_name_is_not_given_to_another() {
    let cka = cka("platform");
    let mut now = found(vec![operator("a", "x")]);
    now.undetermined
        .insert(("a".to_string(), "x-kopf-audit".to_string()));
    let plan = plan(&cka, &now, &[hand_written("a", "x", "other")]);
    assert_ne!(plan.apply[0].name_any(), "x-kopf-audit");
}

/// A tenant's KopfAudit that runs every check but reads less (a longer interval, looser
/// thresholds, a shorter log window, a smaller log cap, its own handledResources) does
/// not replace the generated one; one at least as strict in each does.
#[test]
fn a_kopf_audit_with_looser_settings_keeps_the_generated_one() {
    let mut cka = cka("platform");
    cka.spec.defaults.thresholds.event_repeats = Some(5);
    cka.spec.defaults.logs.window = Some("30m".into());
    let operators = found(vec![operator("a", "op-a")]);
    type Loosen = fn(&mut KopfAuditSpec);
    let looser: [(&str, Loosen); 8] = [
        ("interval", |s| s.interval = "1h".into()),
        ("thresholds.memoryRequest", |s| {
            s.thresholds.memory_request = Some("1Mi".into())
        }),
        ("thresholds.memoryLimit", |s| {
            s.thresholds.memory_limit = Some("1Mi".into())
        }),
        ("thresholds.eventRepeats", |s| {
            s.thresholds.event_repeats = Some(1000)
        }),
        ("thresholds.unhandledAfter", |s| {
            s.thresholds.unhandled_after = Some("24h".into())
        }),
        ("logs.window", |s| s.logs.window = Some("1m".into())),
        ("logs.limitBytes", |s| {
            s.logs.limit_bytes = Some("1Ki".into())
        }),
        ("handledResources", |s| {
            s.handled_resources = vec![crate::api::HandledResourceSpec {
                group: "example.com".into(),
                plural: "made-up".into(),
                version: "v1".into(),
            }]
        }),
    ];
    for (field, loosen) in looser {
        let mut mine = hand_written("a", "mine", "op-a");
        mine.spec.thresholds.event_repeats = Some(5);
        mine.spec.logs.window = Some("30m".into());
        loosen(&mut mine.spec);
        assert_eq!(
            weakened(&cka.spec.defaults, &mine.spec),
            [Weakening::Setting(field)]
        );
        let plan = plan(&cka, &operators, &[mine]);
        assert_eq!(
            applied(&plan),
            [("a".to_string(), "op-a".to_string())],
            "{field}"
        );
    }
    let mut stricter = hand_written("a", "mine", "op-a");
    stricter.spec.interval = "30s".into();
    stricter.spec.thresholds.event_repeats = Some(3);
    stricter.spec.thresholds.memory_limit = Some("1Gi".into());
    stricter.spec.logs.window = Some("1h".into());
    assert_eq!(weakened(&cka.spec.defaults, &stricter.spec), []);
    assert!(plan(&cka, &operators, &[stricter]).apply.is_empty());
}
