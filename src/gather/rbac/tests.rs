//! Tests of gathering RBAC evidence.

use super::*;
use crate::model::evidence::Obstacle;
use crate::model::kopf_run::Scope;
use crate::model::rbac::Verb;
use crate::model::testing::run;

#[test]
fn a_review_asks_as_the_service_account_with_its_groups() {
    let sa = ServiceAccountRef {
        namespace: "ns".into(),
        name: "op".into(),
    };
    let mut p = Permission::new(Verb::Patch, "g", "widgets", Some("ns"));
    p.subresource = "status".into();
    let r = review_for(&sa, &p);
    assert_eq!(r.spec.user.as_deref(), Some("system:serviceaccount:ns:op"));
    assert_eq!(
        r.spec.groups,
        Some(vec![
            "system:serviceaccounts".into(),
            "system:serviceaccounts:ns".into(),
            "system:authenticated".into()
        ])
    );
    let attrs = r.spec.resource_attributes.expect("attributes");
    assert_eq!(attrs.subresource.as_deref(), Some("status"));
    assert_eq!(attrs.namespace.as_deref(), Some("ns"));
    let cluster = review_for(&sa, &Permission::new(Verb::List, "", "namespaces", None));
    let attrs = cluster.spec.resource_attributes.expect("attributes");
    assert_eq!(attrs.namespace, None);
    assert_eq!(attrs.subresource, None);
    assert_eq!(attrs.group.as_deref(), Some(""));
}

#[test]
fn forbidden_names_what_the_auditor_lacks() {
    let denied = kube::Error::Api(
        kube::core::Status::failure("forbidden", "Forbidden")
            .with_code(403)
            .boxed(),
    );
    let u = unavailable(
        &denied,
        "create subjectaccessreviews.authorization.k8s.io",
        SAR_GRANT,
    );
    assert_eq!(u.why, Obstacle::Forbidden);
    assert!(u.message.contains("create on subjectaccessreviews"));
}

#[test]
fn role_bindings_are_read_in_the_own_and_exact_namespaces() {
    let run = run(
        Scope::Namespaced(vec!["a".into(), "team-*".into()]),
        Peering::Auto,
    );
    let platform = Reach {
        own: "own".into(),
        cross_namespace: true,
        reader: "own/platform".into(),
    };
    assert_eq!(
        binding_namespaces(&run, "own", &platform),
        (
            BTreeSet::from(["a".to_string(), "own".to_string()]),
            BTreeSet::new()
        )
    );
    let tenant = Reach {
        own: "own".into(),
        cross_namespace: false,
        reader: "own/tenant".into(),
    };
    assert_eq!(
        binding_namespaces(&run, "own", &tenant),
        (
            BTreeSet::from(["own".to_string()]),
            BTreeSet::from(["a".to_string()])
        )
    );
}

#[test]
fn answers_of_a_wave_expire_spread_over_half_the_ttl() {
    let ttls: Vec<Duration> = (0..1000)
        .map(|i| {
            answer_ttl(&ServiceAccountRef {
                namespace: format!("ns-{i}"),
                name: "op".into(),
            })
        })
        .collect();
    assert!(
        ttls.iter()
            .all(|t| *t >= ANSWER_TTL * 3 / 4 && *t <= ANSWER_TTL * 5 / 4)
    );
    // In ten slots of the half-TTL span, none holds a fifth of the wave.
    let mut slots = [0u32; 10];
    for t in &ttls {
        let offset = (*t - ANSWER_TTL * 3 / 4).as_secs_f64() / (ANSWER_TTL / 2).as_secs_f64();
        slots[((offset * 10.0) as usize).min(9)] += 1;
    }
    assert!(slots.iter().all(|&n| n < 200), "{slots:?}");
}

/// A store's first list wakes the waiter even when something else looked at the store
/// meanwhile (an audit's `is_synced`, a second waiter): kube-runtime's own
/// `wait_until_ready` keeps one waker, the last poller's, and would hang here.
#[tokio::test(start_paused = true)]
async fn until_synced_resolves_though_others_looked_at_the_store() {
    let (store, mut writer) = kube::runtime::reflector::store::<Role>();
    let first = tokio::spawn({
        let store = store.clone();
        async move { until_synced(&store).await }
    });
    let second = tokio::spawn({
        let store = store.clone();
        async move { until_synced(&store).await }
    });
    tokio::task::yield_now().await;
    assert!(!is_synced(&store), "nothing listed yet");
    writer.apply_watcher_event(&kube::runtime::watcher::Event::Init);
    writer.apply_watcher_event(&kube::runtime::watcher::Event::InitDone);
    let both = tokio::time::timeout(Duration::from_secs(5), async {
        (first.await, second.await)
    })
    .await;
    assert!(
        matches!(both, Ok((Ok(true), Ok(true)))),
        "both waiters saw the sync: {both:?}"
    );
    assert!(is_synced(&store));
}

#[tokio::test(start_paused = true)]
async fn until_synced_is_false_when_the_writer_is_gone_unsynced() {
    let (store, writer) = kube::runtime::reflector::store::<Role>();
    drop(writer);
    assert!(!until_synced(&store).await);
}

/// A fake API whose SubjectAccessReviews deny `list` with an evaluationError of the
/// authorizer's own, and allow the rest.
fn undecided_lists(
    method: &http::Method,
    path: &str,
    body: &serde_json::Value,
) -> http::Response<kube::client::Body> {
    assert_eq!(
        (method, path),
        (
            &http::Method::POST,
            "/apis/authorization.k8s.io/v1/subjectaccessreviews?"
        )
    );
    let mut review = body.clone();
    let verb = body["spec"]["resourceAttributes"]["verb"]
        .as_str()
        .unwrap_or("");
    review["status"] = match verb {
        "list" => {
            serde_json::json!({"allowed": false, "evaluationError": "webhook authorizer: connection refused"})
        }
        "watch" => {
            serde_json::json!({"allowed": false, "evaluationError": "[clusterrole.rbac.authorization.k8s.io \"gone\" not found]"})
        }
        _ => serde_json::json!({"allowed": true}),
    };
    crate::testing::json(http::StatusCode::CREATED, review)
}

#[tokio::test]
async fn an_undecided_review_is_neither_a_denial_nor_remembered() {
    let (client, api) = crate::testing::FakeApi::start("ns", undecided_lists);
    let reader = RbacReader::default();
    let sa = ServiceAccountRef {
        namespace: "ns".into(),
        name: "op".into(),
    };
    let get = Permission::new(Verb::Get, "", "configmaps", Some("ns"));
    let watch = Permission::new(Verb::Watch, "", "configmaps", Some("ns"));
    let list = Permission::new(Verb::List, "", "configmaps", Some("ns"));
    let decided: BTreeSet<Permission> = [get.clone(), watch.clone()].into();
    let answers = reader
        .review(&client, &sa, &decided)
        .await
        .expect("decided");
    assert_eq!(answers.get(&get), Some(&true));
    assert_eq!(
        answers.get(&watch),
        Some(&false),
        "a role that does not exist grants nothing: the denial stands"
    );
    let wanted: BTreeSet<Permission> = [get, list].into();
    api.take();
    for _ in 0..2 {
        let u = reader
            .review(&client, &sa, &wanted)
            .await
            .expect_err("undecided");
        assert_eq!(u.why, Obstacle::Undecided);
        assert!(u.message.contains("connection refused"), "{}", u.message);
        assert_eq!(
            api.take().len(),
            1,
            "only the undecided permission is asked again, every time"
        );
    }
}

#[test]
fn a_role_binding_change_forgets_only_the_answers_about_its_namespace() {
    let reader = RbacReader::default();
    let sa = ServiceAccountRef {
        namespace: "b".into(),
        name: "op".into(),
    };
    let in_a = Permission::new(Verb::Create, "", "events", Some("a"));
    let in_b = Permission::new(Verb::Create, "", "events", Some("b"));
    let cluster = Permission::new(Verb::List, "", "namespaces", None);
    lock(&reader.answers).insert(
        sa.clone(),
        Answers {
            asked: Instant::now(),
            allowed: BTreeMap::from([(in_a, true), (in_b.clone(), true), (cluster.clone(), true)]),
        },
    );
    let known = |reader: &RbacReader| -> BTreeSet<Permission> {
        lock(&reader.answers)
            .get(&sa)
            .map(|a| a.allowed.keys().cloned().collect())
            .unwrap_or_default()
    };
    reader.forget(&sa, &BindingKind::RoleBinding("a".into()));
    assert_eq!(
        known(&reader),
        BTreeSet::from([in_b, cluster]),
        "only those about a"
    );
    reader.forget(&sa, &BindingKind::ClusterRoleBinding);
    assert!(
        known(&reader).is_empty(),
        "a ClusterRoleBinding can grant any"
    );
}

/// The digest of a one-version CRD with this `openAPIV3Schema` and status subresource.
fn digest(schema: serde_json::Value, status: bool) -> CrdVersion {
    let mut version = serde_json::json!({"name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": schema}});
    if status {
        version["subresources"] = serde_json::json!({"status": {}});
    }
    let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"}, "versions": [version]}
    }))
    .expect("crd");
    CrdDigest::of(&crd).versions.remove(0)
}

#[test]
fn a_schema_keeps_kopf_s_status_whichever_way_it_says_so() {
    let keeps = |schema: serde_json::Value| digest(schema, false).status_preserves_unknown_fields;
    let preserve =
        serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let declared =
        serde_json::json!({"type": "object", "properties": {"phase": {"type": "string"}}});
    // Status preserving unknown fields, with or without a status subresource.
    let status = serde_json::json!({"type": "object", "properties": {"status": preserve.clone()}});
    assert!(keeps(status.clone()));
    assert!(digest(status, true).status_preserves_unknown_fields);
    // The whole object.
    assert!(keeps(preserve.clone()));
    // Declared fields plus kopf's own status.kopf keeping what kopf stores.
    assert!(keeps(
        serde_json::json!({"type": "object", "properties": {"status": {
        "type": "object", "properties": {"phase": {"type": "string"}, "kopf": preserve.clone()}}}})
    ));
    // Any key: additionalProperties.
    assert!(keeps(
        serde_json::json!({"type": "object", "properties": {"status": {
        "type": "object", "additionalProperties": preserve.clone()}}})
    ));
    // Pruned: declared fields only, no status at all, a status.kopf that prunes.
    assert!(!keeps(
        serde_json::json!({"type": "object", "properties": {"status": declared.clone()}})
    ));
    assert!(!keeps(
        serde_json::json!({"type": "object", "properties": {"spec": preserve}})
    ));
    assert!(!keeps(
        serde_json::json!({"type": "object", "properties": {"status": {
        "type": "object", "properties": {"kopf": declared}}}})
    ));
}
