use super::*;

/// A log kopf itself wrote, captured from a real kopf run (see crates/kopf-log/tests).
fn captured(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/crates/kopf-log/tests/data/captured/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn kopf_is_recognised_in_each_of_its_formats_and_versions() {
    let cases = [
        ("kopf-1.45.2-handlers.full.log", KopfLogFormat::Full),
        ("kopf-1.45.2-handlers.json.log", KopfLogFormat::Json),
        ("kopf-1.45.2-peering.plain.log", KopfLogFormat::Plain),
        ("kopf-1.43.0-handlers.full.log", KopfLogFormat::Full),
        ("kopf-1.38.0-handlers.json.log", KopfLogFormat::Json),
        ("kopf-1.38.0-peering.plain.log", KopfLogFormat::Plain),
    ];
    for (name, format) in cases {
        let (seen, found) = shows_kopf("op-0", &captured(name))
            .unwrap_or_else(|| panic!("{name}: kopf not recognised"));
        assert_eq!(found, format, "{name}");
        assert_eq!(seen.pod, "op-0");
        assert!(seen.kopf_lines >= 1, "{name}");
        assert!(!seen.example.is_empty(), "{name}");
    }
}

#[test]
fn only_the_first_64_kib_are_enough() {
    let log = captured("kopf-1.45.2-handlers.full.log");
    let head = &log[..log.len().min(HEAD_BYTES as usize)];
    assert!(shows_kopf("op-0", head).is_some());
}

#[test]
fn other_programs_logs_are_not_kopf() {
    let logs: [&[u8]; 5] = [
        b"INFO:root:starting the web server\nWARNING:root:slow request\n",
        b"{\"message\": \"Started server\", \"timestamp\": \"2026-11-30T04:10:12+00:00\", \"severity\": \"info\"}\n{\"message\": \"GET /healthz 200\", \"severity\": \"info\"}\n",
        b"{\"level\":\"info\",\"ts\":1733000000.1,\"msg\":\"Starting workers\",\"worker count\":1}\n",
        b"10.0.0.1 - - [02/Dec/2026:11:00:00 +0000] \"GET / HTTP/1.1\" 200 612\n",
        b"[main] listening on :8080\n[2026-12-02 11:00:00,123] myapp [INFO    ] ready\n",
    ];
    for log in logs {
        assert!(
            shows_kopf("app-0", log).is_none(),
            "{}",
            String::from_utf8_lossy(log)
        );
    }
}

#[test]
fn kopf_logging_through_pythons_basic_config_is_kopf() {
    let log = b"INFO:kopf.activities.startup:Activity 'configure' succeeded.\nERROR:kopf.objects:Handler 'provision' failed permanently: no\n";
    let (seen, format) = shows_kopf("op-0", log).expect("kopf's loggers by name");
    assert_eq!(format, KopfLogFormat::Basic);
    assert_eq!(seen.kopf_lines, 2, "both are kopf's records");
    assert!(
        seen.example.contains("Activity 'configure' succeeded."),
        "{}",
        seen.example
    );
    assert!(shows_kopf("app-0", b"INFO:myapp.server:listening\n").is_none());
    // A custom `basicConfig(format=...)`, as operators started with kopf.run() set.
    let custom =
        b"2026-12-01 10:00:00,000 INFO [kopf.activities.startup] Activity 'configure' succeeded.\n";
    let (seen, format) = shows_kopf("op-0", custom).expect("kopf's logger next to a level");
    assert_eq!(format, KopfLogFormat::Basic);
    assert_eq!(seen.example, "Activity 'configure' succeeded.");
}

#[test]
fn an_import_error_inside_kopfs_loader_is_kopf() {
    let log = b"Traceback (most recent call last):\n  File \"/usr/local/bin/kopf\", line 8, in <module>\n    sys.exit(main())\n  File \"/usr/local/lib/python3.11/site-packages/kopf/_core/reactor/loading.py\", line 29, in preload\n    importlib.import_module(name)\nModuleNotFoundError: No module named 'kubernetes'\n";
    let (seen, _) = shows_kopf("op-0", log).expect("kopf's loader is in the traceback");
    assert!(seen.example.contains("kopf"), "{}", seen.example);
}

#[test]
fn kopfs_scope_warning_says_that_no_scope_was_given() {
    let mut log = captured("kopf-1.45.2-handlers.full.log");
    log.extend_from_slice(b"/usr/local/lib/python3.11/site-packages/kopf/_core/reactor/running.py:179: FutureWarning: Absence of either namespaces or cluster-wide flag will become an error soon. For now, switching to the cluster-wide mode for backward compatibility.\n");
    let (seen, _) = shows_kopf("op-0", &log).expect("kopf");
    assert!(seen.implicit_scope);
    let (plain, _) = shows_kopf("op-0", &captured("kopf-1.45.2-handlers.full.log")).expect("kopf");
    assert!(!plain.implicit_scope);
}

#[test]
fn verdicts_are_remembered_and_forgotten() {
    let verdicts = Verdicts::default();
    let instance = Instance {
        uid: "u".into(),
        container: "c".into(),
        restarts: 0,
    };
    let now = Timestamp::now();
    verdicts.put(instance.clone(), Verdict::NotKopf, now);
    assert!(matches!(
        verdicts.get(&instance, now),
        Some(Verdict::NotKopf)
    ));
    verdicts.forget_unused(now + jiff::SignedDuration::from_secs(2 * 3600));
    assert!(verdicts.get(&instance, now).is_none());
}

#[test]
fn the_namespaces_of_kopfs_objects_and_its_peering_lines_are_learned() {
    let log = b"[2026-12-01 10:00:00,000] kopf.objects         [INFO    ] [team-a/w1] Handler 'reconcile' succeeded.\n[2026-12-01 10:00:01,000] kopf.objects         [INFO    ] [team-b/w2] Handler 'reconcile' succeeded.\n[2026-12-01 10:00:02,000] kopf.objects         [INFO    ] [cluster-thing] Handler 'reconcile' succeeded.\n[2026-12-01 10:00:03,000] kopf.objects         [INFO    ] [Not_A_Namespace/w3] Handler 'reconcile' succeeded.\n";
    let (seen, _) = shows_kopf("op-0", log).expect("kopf");
    assert_eq!(
        seen.namespaces,
        ["team-a".to_string(), "team-b".to_string()].into(),
        "valid names of namespaced objects only"
    );
    assert!(!seen.peering);
    let paused = b"[2026-12-01 10:00:00,000] kopf._core.engines.peering [INFO    ] Pausing operations in favour of [Peer(id='laptop', priority=666)].\n";
    let (seen, _) = shows_kopf("op-0", paused).expect("kopf");
    assert!(seen.peering);
    assert!(seen.namespaces.is_empty());
}

/// A target whose Deployment hides kopf, with one running pod `op-0`.
fn hidden_target() -> TargetEvidence {
    let deployment: k8s_openapi::api::apps::v1::Deployment =
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "op", "namespace": "ns"},
            "spec": {"selector": {}, "template": {"spec": {"containers": [
                {"name": "operator", "image": "example.com/op:1"}
            ]}}}
        }))
        .expect("deployment");
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "op-0", "namespace": "ns", "uid": "u-0"},
        "status": {"containerStatuses": [{
            "name": "operator", "ready": true, "restartCount": 0, "image": "i", "imageID": "",
            "state": {"running": {}}
        }]}
    }))
    .expect("pod");
    TargetEvidence::new(deployment, vec![pod], None)
}

#[tokio::test]
async fn a_kopf_verdict_is_read_again_until_its_head_is_full() {
    use crate::testing::FakeApi;
    let line = "[2026-12-01 10:00:00,000] kopf.objects         [INFO    ] [ns/w1] Handler 'reconcile' succeeded.\n";
    for (lines, reads) in [(3, 2), (HEAD_BYTES as usize / line.len() + 1, 1)] {
        let log = line.repeat(lines);
        let (client, api) = FakeApi::start("ns", move |_, _, _| {
            http::Response::new(kube::client::Body::from(log.clone().into_bytes()))
        });
        let verdicts = Verdicts::default();
        let target = hidden_target();
        for _ in 0..2 {
            let Recognised::Kopf(run) = recognise(&client, &verdicts, &target, None).await else {
                panic!("kopf");
            };
            assert_eq!(run.served_names(), vec!["ns"]);
        }
        let seen = api.take();
        assert_eq!(seen.len(), reads, "{lines} lines: {seen:?}");
        assert!(seen.iter().all(|s| s.path.contains("/pods/op-0/log")));
    }
}

#[test]
fn the_kinds_of_the_objects_kopfs_json_records_name_are_learned() {
    let log = br#"{"message": "Handler 'sync' succeeded.", "timestamp": "2026-11-30T02:41:55.039412+00:00", "object": {"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "u", "namespace": "team-a"}, "severity": "info"}
"#;
    let (seen, format) = shows_kopf("op-0", log).expect("kopf");
    assert_eq!(format, KopfLogFormat::Json);
    assert_eq!(
        seen.kinds,
        [("v1".to_string(), "Secret".to_string())].into()
    );
    assert_eq!(seen.namespaces, ["team-a".to_string()].into());
}
