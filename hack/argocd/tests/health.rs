//! The decisions of `health.lua` (Argo CD's custom health check for KopfAudit) on sample
//! objects shaped like the operator's status (docs/reference.md), run under Lua 5.1 as in
//! Argo CD's gopher-lua, with `obj` set the way Argo CD sets it.

use mlua::serde::SerializeOptions;
use mlua::{Lua, LuaSerdeExt, Table};
use serde_json::{Value, json};

const SCRIPT: &str = include_str!("../health.lua");

/// Runs the health check on `object`: (status, message).
fn health(object: &Value) -> (String, String) {
    let lua = Lua::new();
    let options = SerializeOptions::new()
        .serialize_none_to_null(false)
        .serialize_unit_to_null(false);
    let obj = lua.to_value_with(object, options).expect("object to Lua");
    lua.globals().set("obj", obj).expect("set obj");
    let hs: Table = lua
        .load(SCRIPT)
        .set_name("health.lua")
        .eval()
        .expect("health.lua runs");
    (
        hs.get::<String>("status").expect("hs.status"),
        hs.get::<String>("message").expect("hs.message"),
    )
}

fn cond(type_: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({
        "type": type_, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 2
    })
}

fn audit(generation: i64, status: Option<Value>) -> Value {
    let mut object = json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
        "metadata": {"name": "tenant-operator", "namespace": "platform", "generation": generation},
        "spec": {"target": {"deployment": "tenant-operator"}, "interval": "5m"}
    });
    if let Some(s) = status {
        object["status"] = s;
    }
    object
}

/// A status after an audit of generation 2 (kstatus conditions plus the roll-up).
fn audited(compliant: (&str, &str, &str), errors: u32, warnings: u32) -> Value {
    json!({
        "observedGeneration": 2,
        "lastAuditTime": "2026-01-01T00:00:00Z",
        "conditions": [
            cond("Ready", "True", "AuditSucceeded", "The audit ran for generation 2."),
            cond("Reconciling", "False", "AuditSucceeded", "The audit is up to date."),
            cond("Stalled", "False", "AuditSucceeded", "The audit can run."),
            cond("Compliant", compliant.0, compliant.1, compliant.2),
            cond("WorkloadCompliant", "True", "NoFindings", "No workload finding."),
        ],
        "summary": {"errors": errors, "warnings": warnings, "infos": 0}
    })
}

#[test]
fn compliant_is_healthy() {
    let object = audit(
        2,
        Some(audited(
            ("True", "AllAreasCompliant", "All five areas are compliant."),
            0,
            0,
        )),
    );
    assert_eq!(
        health(&object),
        ("Healthy".into(), "All five areas are compliant.".into())
    );
}

#[test]
fn non_compliant_is_degraded_with_the_message_and_counts() {
    let object = audit(
        2,
        Some(audited(
            ("False", "AreasNotCompliant", "WorkloadCompliant is False."),
            2,
            4,
        )),
    );
    let (status, message) = health(&object);
    assert_eq!(status, "Degraded");
    assert_eq!(
        message,
        "WorkloadCompliant is False. (2 errors, 4 warnings)"
    );
}

#[test]
fn stalled_is_degraded_with_the_stall_message() {
    let object = audit(
        2,
        Some(json!({
            "observedGeneration": 2,
            "conditions": [
                cond("Ready", "False", "TargetNotFound", "Deployment tenant-operator not found in platform: create it, or fix spec.target."),
                cond("Reconciling", "False", "TargetNotFound", "The audit cannot run."),
                cond("Stalled", "True", "TargetNotFound", "Deployment tenant-operator not found in platform: create it, or fix spec.target."),
                cond("Compliant", "True", "AllAreasCompliant", "kept from the last audit"),
            ]
        })),
    );
    let (status, message) = health(&object);
    assert_eq!(status, "Degraded");
    assert!(
        message.starts_with("Deployment tenant-operator not found"),
        "{message}"
    );
}

#[test]
fn a_failing_audit_is_degraded() {
    let object = audit(
        2,
        Some(json!({
            "observedGeneration": 2,
            "conditions": [
                cond("Ready", "False", "AuditFailed", "The audit failed and is retried with back-off: timeout"),
                cond("Stalled", "True", "AuditFailed", "The audit failed and is retried with back-off: timeout"),
            ]
        })),
    );
    assert_eq!(health(&object).0, "Degraded");
}

#[test]
fn suspended_wins_over_kept_results() {
    let msg = "spec.suspend is true: no audits run; the last results are kept.";
    let object = audit(
        3,
        Some(json!({
            "observedGeneration": 3,
            "conditions": [
                cond("Ready", "False", "Suspended", msg),
                cond("Reconciling", "False", "Suspended", msg),
                cond("Stalled", "False", "Suspended", msg),
                cond("Compliant", "False", "AreasNotCompliant", "kept from the last audit"),
            ]
        })),
    );
    assert_eq!(health(&object), ("Suspended".into(), msg.into()));
}

#[test]
fn no_status_yet_is_progressing() {
    assert_eq!(health(&audit(1, None)).0, "Progressing");
    assert_eq!(health(&audit(1, Some(json!({})))).0, "Progressing");
    assert_eq!(
        health(&audit(1, Some(json!({"conditions": []})))).0,
        "Progressing"
    );
}

#[test]
fn the_first_audit_running_is_progressing() {
    let object = audit(
        2,
        Some(json!({
            "observedGeneration": 2,
            "conditions": [
                cond("Ready", "Unknown", "AuditPending", "The KopfAudit was just seen; its first audit is running."),
                cond("Reconciling", "True", "AuditPending", "The KopfAudit was just seen; its first audit is running."),
                cond("Stalled", "False", "AuditPending", "The audit can run."),
            ]
        })),
    );
    assert_eq!(
        health(&object),
        (
            "Progressing".into(),
            "The KopfAudit was just seen; its first audit is running.".into()
        )
    );
}

#[test]
fn an_observed_generation_behind_is_progressing_even_when_compliant_or_stalled() {
    let mut stale = audited(
        ("True", "AllAreasCompliant", "All five areas are compliant."),
        0,
        0,
    );
    let object = audit(3, Some(stale.clone()));
    assert_eq!(
        health(&object),
        (
            "Progressing".into(),
            "Waiting for the audit of generation 3".into()
        )
    );
    stale["conditions"][2] = cond("Stalled", "True", "TargetNotFound", "gone");
    assert_eq!(health(&audit(3, Some(stale))).0, "Progressing");
    let no_observed = json!({"conditions": [cond("Ready", "True", "AuditSucceeded", "ok")]});
    assert_eq!(health(&audit(1, Some(no_observed))).0, "Progressing");
}

#[test]
fn compliance_unknown_after_an_audit_is_healthy_with_the_reason() {
    let object = audit(
        2,
        Some(audited(
            (
                "Unknown",
                "AreasUnknown",
                "RBACCompliant is Unknown: the auditor may not create subjectaccessreviews.",
            ),
            0,
            0,
        )),
    );
    let (status, message) = health(&object);
    assert_eq!(status, "Healthy");
    assert_eq!(
        message,
        "Audited; compliance unknown: RBACCompliant is Unknown: the auditor may not create subjectaccessreviews."
    );
}

#[test]
fn missing_messages_fall_back_to_defaults() {
    let object = audit(
        2,
        Some(json!({
            "observedGeneration": 2,
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "AuditSucceeded"},
                {"type": "Compliant", "status": "False", "reason": "AreasNotCompliant"},
            ]
        })),
    );
    assert_eq!(health(&object), ("Degraded".into(), "Not compliant".into()));
}
