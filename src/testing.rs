//! Test support shared by the layers' tests: a fake API server (tower-test's mock
//! service) that answers every request by a route function and records it, in the
//! style of controller-rs's `ApiServerVerifier`, so tests assert the exact requests.

use http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use std::sync::{Arc, Mutex};

/// One request the reconcile made.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    pub(crate) method: Method,
    pub(crate) path: String,
    pub(crate) body: serde_json::Value,
}

impl Seen {
    /// Whether it is `method` on a path containing `path_part`.
    pub(crate) fn is(&self, method: &Method, path_part: &str) -> bool {
        self.method == method && self.path.contains(path_part)
    }
}

/// A fake API server: answers by route, records every request.
pub(crate) struct FakeApi {
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl FakeApi {
    /// A client (default namespace `namespace`) whose every request `answer` answers
    /// (a function, or a closure with state of its own: a route that fails, then
    /// succeeds).
    pub(crate) fn start(
        namespace: &str,
        answer: impl Fn(&Method, &str, &serde_json::Value) -> Response<Body> + Send + 'static,
    ) -> (Client, FakeApi) {
        let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        tokio::spawn(async move {
            while let Some((request, send)) = handle.next_request().await {
                let (parts, body) = request.into_parts();
                let bytes = http_body_util::BodyExt::collect(body)
                    .await
                    .map(|c| c.to_bytes())
                    .unwrap_or_default();
                let body: serde_json::Value =
                    serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
                let path = parts
                    .uri
                    .path_and_query()
                    .map(|p| p.to_string())
                    .unwrap_or_default();
                let response = answer(&parts.method, &path, &body);
                if let Ok(mut s) = record.lock() {
                    s.push(Seen {
                        method: parts.method.clone(),
                        path,
                        body,
                    });
                }
                send.send_response(response);
            }
        });
        (Client::new(service, namespace), FakeApi { seen })
    }

    /// The requests seen since the last call.
    pub(crate) fn take(&self) -> Vec<Seen> {
        self.seen
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default()
    }
}

/// A JSON response.
pub(crate) fn json(status: StatusCode, value: serde_json::Value) -> Response<Body> {
    let bytes = serde_json::to_vec(&value).unwrap_or_default();
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(bytes))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// A store filled with `objects` and marked synced, as a watcher would.
pub(crate) fn synced_store<K>(objects: Vec<K>) -> kube::runtime::reflector::Store<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + Send + Sync + 'static,
{
    let (store, mut writer) = kube::runtime::reflector::store();
    writer.apply_watcher_event(&kube::runtime::watcher::Event::Init);
    for o in objects {
        writer.apply_watcher_event(&kube::runtime::watcher::Event::InitApply(o));
    }
    writer.apply_watcher_event(&kube::runtime::watcher::Event::InitDone);
    store
}
