//! The faults of kopf's own runtime, each on a real kopf 1.45 process with a compliant
//! twin: a login handler that caches a token the API server then revokes
//! (`runtime.credentials-lost`), a login handler with another cluster's CA
//! (`runtime.api-tls-failure`), and sync daemons in a process that can start no thread
//! (`runtime.thread-exhaustion`).

use crate::operator::{audit_running_fixture, ensure_crd, found_checks};
use crate::support::{self, Fixture, TestNamespace, expectations, say, wait_for};
use kopf_audit::api::{Finding, KopfAuditStatus};
use kopf_audit::catalog::Severity;
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, ResourceExt};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[tokio::test]
async fn a_login_handler_that_caches_a_revoked_token_runs_out_of_credentials() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "credentials-lost").await;
    let kopf = Fixture::start("credentials-lost", &ns.name, None);
    wait_log(&kopf, "Timer 'balance' succeeded.", 1).await;
    revoke_token(&client, &ns.name, "credentials-lost-operator").await;
    let status = audit_as_expected(&client, &ns.name, "credentials-lost").await;
    let lost = finding(&status, "runtime.credentials-lost");
    assert_eq!(lost.severity, Severity::Error, "{lost:?}");
    assert!(
        lost.target.contains("credentials-lost-operator"),
        "{lost:?}"
    );
    assert!(
        lost.message
            .contains("login handler 'login' (@kopf.on.login)"),
        "the login handler is named: {}",
        lost.message
    );
    assert!(
        lost.message
            .contains("the API server refused them (401 Unauthorized)")
            && lost.message.contains("Ran out of valid credentials")
            && lost.message.contains("not a token cached at startup"),
        "the cause and the fix are named: {}",
        lost.message
    );
    assert!(
        lost.evidence
            .as_deref()
            .is_some_and(|e| e.contains("Ran out of valid credentials")),
        "{lost:?}"
    );
}

#[tokio::test]
async fn a_login_handler_that_reads_the_kubeconfig_again_survives_the_revocation() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "credentials-lost-twin").await;
    let kopf = Fixture::start("credentials-lost-twin", &ns.name, None);
    wait_log(&kopf, "Timer 'balance' succeeded.", 1).await;
    revoke_token(&client, &ns.name, "credentials-lost-twin-operator").await;
    // Re-authenticated with the new token, and a request made with it since.
    let log = wait_for(
        "the twin's re-authentication",
        Duration::from_secs(60),
        || async {
            let log = std::fs::read_to_string(&kopf.log).ok()?;
            let (_, after) = log.split_once("Re-authentication has finished.")?;
            after.contains("Timer 'balance' succeeded.").then_some(log)
        },
    )
    .await;
    assert!(!log.contains("Ran out of valid credentials"), "{log}");
    let status = audit_as_expected(&client, &ns.name, "credentials-lost-twin").await;
    assert!(
        !found_checks(&status).contains("runtime.credentials-lost"),
        "{:#?}",
        status.findings
    );
}

#[tokio::test]
async fn a_login_handler_with_another_clusters_ca_fails_tls_verification() {
    let status = audit_after_log("api-tls-failure", "CERTIFICATE_VERIFY_FAILED", 1).await;
    let tls = finding(&status, "runtime.api-tls-failure");
    assert_eq!(tls.severity, Severity::Error, "{tls:?}");
    assert!(tls.target.contains("api-tls-failure-operator"), "{tls:?}");
    let (server, _) = support::api_server();
    let host = server.trim_start_matches("https://").trim_end_matches('/');
    assert!(
        tls.message.contains(&format!("API server at {host}"))
            && tls
                .message
                .contains("unable to get local issuer certificate"),
        "the host and OpenSSL's reason are named: {}",
        tls.message
    );
    assert!(
        tls.message.contains("ca_path or ca_data"),
        "the fix is named: {}",
        tls.message
    );
    assert!(
        tls.evidence
            .as_deref()
            .is_some_and(|e| e.contains("CERTIFICATE_VERIFY_FAILED")),
        "{tls:?}"
    );
}

#[tokio::test]
async fn a_login_handler_with_the_clusters_own_ca_is_trusted() {
    let status = audit_after_log("api-tls-failure-twin", "Handler 'light' succeeded.", 1).await;
    assert!(
        !found_checks(&status).contains("runtime.api-tls-failure"),
        "{:#?}",
        status.findings
    );
}

#[tokio::test]
async fn sync_daemons_that_cannot_start_a_thread_are_thread_exhaustion() {
    // All three daemons failed once.
    let status = audit_after_log("thread-exhaustion", "can't start new thread", 3).await;
    let threads = finding(&status, "runtime.thread-exhaustion");
    assert_eq!(threads.severity, Severity::Error, "{threads:?}");
    assert!(
        threads.target.contains("thread-exhaustion-operator"),
        "{threads:?}"
    );
    assert!(
        threads.message.contains("Daemon 'pump'")
            && threads.message.contains("Make long-running daemons async"),
        "the daemon and the fix are named: {}",
        threads.message
    );
    assert!(
        threads
            .evidence
            .as_deref()
            .is_some_and(|e| e.contains("can't start new thread")),
        "{threads:?}"
    );
}

#[tokio::test]
async fn async_daemons_under_the_same_limit_need_no_thread() {
    // All three daemons running: each logs once when it starts.
    let status = audit_after_log("thread-exhaustion-twin", "pumping", 3).await;
    assert!(
        !found_checks(&status).contains("runtime.thread-exhaustion"),
        "{:#?}",
        status.findings
    );
}

/// Waits until the fixture's first run logged `text` `times` times.
async fn wait_log(kopf: &Fixture, text: &str, times: usize) -> String {
    wait_for(
        &format!("{times}x `{text}` in {}", kopf.name),
        Duration::from_secs(90),
        || async {
            let log = std::fs::read_to_string(&kopf.log).ok()?;
            (log.matches(text).count() >= times).then_some(log)
        },
    )
    .await
}

/// Starts `fixture`, waits until its log shows `text` `times` times, then audits it as
/// its expect.yaml says.
async fn audit_after_log(fixture: &str, text: &str, times: usize) -> KopfAuditStatus {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, fixture).await;
    let kopf = Fixture::start(fixture, &ns.name, None);
    wait_log(&kopf, text, times).await;
    audit_as_expected(&client, &ns.name, fixture).await
}

/// The kubeconfig hack/fixture.py wrote for the fixture's ServiceAccount, which its
/// kopf reads (KUBECONFIG).
fn token_kubeconfig(namespace: &str, account: &str) -> PathBuf {
    support::workdir()
        .join("pod-logs")
        .join(namespace)
        .join(format!("kubeconfig-{account}"))
}

/// Revokes the token kopf runs with, as an expired projected token is: the
/// ServiceAccount is deleted (its tokens die with its UID) and made again, and the
/// kubeconfig kopf reads gets a token of the new one, as the kubelet rotates the file.
async fn revoke_token(client: &Client, namespace: &str, account: &str) {
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), namespace);
    let old = accounts.get(account).await.expect("the ServiceAccount");
    let old_uid = old.uid();
    accounts
        .delete(account, &DeleteParams::default())
        .await
        .expect("deleting the ServiceAccount");
    let mut fresh = old.clone();
    fresh.metadata = kube::core::ObjectMeta {
        name: Some(account.to_string()),
        namespace: Some(namespace.to_string()),
        labels: old.metadata.labels.clone(),
        ..Default::default()
    };
    wait_for(
        "the ServiceAccount made again",
        Duration::from_secs(30),
        || async { accounts.create(&PostParams::default(), &fresh).await.ok() },
    )
    .await;
    let token = support::service_account_token(client, namespace, account).await;
    rewrite_token(&token_kubeconfig(namespace, account), &token);
    let new_uid = accounts
        .get(account)
        .await
        .expect("the new ServiceAccount")
        .uid();
    assert_ne!(
        old_uid, new_uid,
        "a new ServiceAccount, whose tokens differ"
    );
    say(format!("{namespace}/{account}: token revoked and rotated"));
}

/// Replaces the token of the kubeconfig at `path` (one user), atomically.
fn rewrite_token(path: &Path, token: &str) {
    let text = std::fs::read_to_string(path).expect("the token kubeconfig");
    let mut config: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).expect("YAML");
    config["users"][0]["user"]["token"] = serde_yaml_ng::Value::String(token.to_string());
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, serde_yaml_ng::to_string(&config).expect("YAML")).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}

/// Audits the namespace's fixture Deployment (an auditor and a KopfAudit started now)
/// until an audit finds every check the fixture's expect.yaml lists under `must`, and
/// asserts that it finds none of those under `must_not`.
async fn audit_as_expected(client: &Client, namespace: &str, fixture: &str) -> KopfAuditStatus {
    let expect = expectations(fixture);
    let must: BTreeSet<String> = expect.must.iter().cloned().collect();
    let status = audit_running_fixture(
        client,
        namespace,
        &format!("an audit of {fixture} finding {must:?}"),
        Duration::from_secs(180),
        |s| must.is_subset(&found_checks(s)),
    )
    .await;
    let found = found_checks(&status);
    say(format!("{fixture}: {found:?}"));
    assert!(
        !expect.must_not.is_empty(),
        "{fixture}: expect.yaml lists must_not"
    );
    for id in &expect.must_not {
        assert!(
            !found.contains(id),
            "{fixture}: {id} must not be reported; findings: {:#?}",
            status.findings
        );
    }
    for f in &status.findings {
        say(format!(
            "{fixture}: {} {}: {} [{:?}]",
            f.check.as_str(),
            f.target,
            f.message,
            f.evidence
        ));
    }
    status
}

fn finding<'a>(status: &'a KopfAuditStatus, id: &str) -> &'a Finding {
    status
        .findings
        .iter()
        .find(|f| f.check.as_str() == id)
        .unwrap_or_else(|| panic!("no {id} in {:#?}", status.findings))
}
