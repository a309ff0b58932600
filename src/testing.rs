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

/// The page a list request at `path` asks for, of a list of `len` items, as the API
/// server pages: the items' range (from `continue`, at most `limit`, 500 without one)
/// and the next page's `continue` token (empty at the end).
pub(crate) fn page_of(path: &str, len: usize) -> (std::ops::Range<usize>, String) {
    let param = |key: &str| {
        path.split(['?', '&'])
            .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
            .and_then(|v| v.parse::<usize>().ok())
    };
    let from = param("continue").unwrap_or(0).min(len);
    let to = (from + param("limit").unwrap_or(500)).min(len);
    let next = if to < len {
        to.to_string()
    } else {
        String::new()
    };
    (from..to, next)
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

/// The lib's tests allocate through [`Counting`], so that a test can measure the heap
/// a piece of code builds ([`heap_peak`]).
#[global_allocator]
static ALLOCATOR: Counting = Counting;

thread_local! {
    /// Bytes this thread holds from the allocator (frees of another thread's blocks
    /// make it lower; only differences are read).
    static HELD: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
    /// The most [`HELD`] reached since [`heap_peak`] reset it.
    static PEAK: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
}

/// The system allocator, counting per thread what each thread holds and its peak.
pub(crate) struct Counting;

impl Counting {
    fn add(bytes: usize) {
        let bytes = isize::try_from(bytes).unwrap_or(isize::MAX);
        // `try_with`: a thread being torn down has no counters left; it is not measured.
        let _ = HELD.try_with(|held| {
            let now = held.get().saturating_add(bytes);
            held.set(now);
            let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
        });
    }

    fn sub(bytes: usize) {
        let bytes = isize::try_from(bytes).unwrap_or(isize::MAX);
        let _ = HELD.try_with(|held| held.set(held.get().saturating_sub(bytes)));
    }
}

// SAFETY: every call is passed on to `System` unchanged; the counters only observe.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { std::alloc::System.alloc(layout) };
        if !p.is_null() {
            Counting::add(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { std::alloc::System.alloc_zeroed(layout) };
        if !p.is_null() {
            Counting::add(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { std::alloc::System.dealloc(ptr, layout) };
        Counting::sub(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { std::alloc::System.realloc(ptr, layout, new) };
        if !p.is_null() {
            Counting::sub(layout.size());
            Counting::add(new);
        }
        p
    }
}

/// Runs `f` and returns its result with the most heap bytes this thread held at once
/// while it ran, beyond what it held before.
pub(crate) fn heap_peak<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = HELD.with(std::cell::Cell::get);
    PEAK.with(|p| p.set(base));
    let out = f();
    let peak = PEAK.with(std::cell::Cell::get);
    (out, usize::try_from(peak - base).unwrap_or(0))
}

/// A KopfAudit `namespace/name` whose target is the Deployment `deployment`, with the
/// `uid` given (none otherwise): the one KopfAudit the unit tests build theirs from.
pub(crate) fn audit_of(
    namespace: &str,
    name: &str,
    deployment: &str,
    uid: Option<&str>,
) -> crate::api::KopfAudit {
    let mut value = serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"target": {"deployment": deployment}}
    });
    if let Some(uid) = uid {
        value["metadata"]["uid"] = serde_json::json!(uid);
    }
    serde_json::from_value(value).expect("a valid KopfAudit")
}
