//! The operator's own HTTP endpoints: `/metrics` (Prometheus text), `/healthz` (the
//! process serves) and `/readyz` (the watch caches have synced). With `--metrics-auth`
//! `/metrics` answers only callers the API server authorizes ([`MetricsAuth`]); the
//! probes' endpoints stay open to the kubelet.

use super::metrics_auth::{AuthError, MetricsAuth, Verdict};
use super::readiness::Readiness;
use crate::publish::metrics::Metrics;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Serves the endpoints until the task is dropped; `/metrics` behind `auth` when given.
pub(crate) async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    ready: Readiness,
    auth: Option<Arc<MetricsAuth>>,
) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    let guarded = if auth.is_some() {
        "authenticated and authorized by the API server"
    } else {
        "open"
    };
    tracing::info!(%addr, metrics = guarded, "serving /metrics, /healthz, /readyz");
    loop {
        let (stream, _) = listener.accept().await?;
        let (metrics, ready, auth) = (metrics.clone(), ready.clone(), auth.clone());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let (metrics, ready, auth) = (metrics.clone(), ready.clone(), auth.clone());
                async move {
                    let response = handle(&req, &metrics, &ready, auth.as_deref()).await;
                    Ok::<_, std::convert::Infallible>(response)
                }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "http connection ended");
            }
        });
    }
}

/// One request: refused when `/metrics` is guarded and the caller may not read it,
/// else answered by path.
async fn handle<B>(
    req: &Request<B>,
    metrics: &Metrics,
    ready: &Readiness,
    auth: Option<&MetricsAuth>,
) -> Response<Full<Bytes>> {
    if req.uri().path() == "/metrics"
        && let Some(auth) = auth
        && let Some(refusal) = refusal(auth, req).await
    {
        return refusal;
    }
    respond(req.uri().path(), metrics, ready)
}

/// The answer to a `/metrics` request the caller may not have, as controller-runtime
/// gives it: 401 unauthenticated (or the TokenReview failed), 403 not allowed, 500 the
/// SubjectAccessReview failed; `None` when allowed.
async fn refusal<B>(auth: &MetricsAuth, req: &Request<B>) -> Option<Response<Full<Bytes>>> {
    let verb = req.method().as_str().to_ascii_lowercase();
    let header = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    let (status, body) = match auth.check(header, &verb).await {
        Ok(Verdict::Allowed) => return None,
        Ok(Verdict::Unauthenticated) => (StatusCode::UNAUTHORIZED, "Unauthorized\n".to_string()),
        Ok(Verdict::Forbidden { user }) => {
            tracing::debug!(%user, %verb, "/metrics refused: not authorized");
            (
                StatusCode::FORBIDDEN,
                format!("Authorization denied for user {user}\n"),
            )
        }
        Err(error @ AuthError::TokenReview(_)) => {
            tracing::warn!(%error, "/metrics refused: cannot authenticate");
            (
                StatusCode::UNAUTHORIZED,
                "Authentication failed\n".to_string(),
            )
        }
        Err(error @ AuthError::AccessReview { .. }) => {
            tracing::warn!(%error, "/metrics refused: cannot authorize");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "Authorization failed\n".to_string(),
            )
        }
    };
    Some(text(status, "text/plain", body))
}

/// The answer to a request by path.
fn respond(path: &str, metrics: &Metrics, ready: &Readiness) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match path {
        "/metrics" => (
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics.encode(),
        ),
        "/healthz" => (StatusCode::OK, "text/plain", "ok\n".to_string()),
        "/readyz" if ready.is_ready() => (StatusCode::OK, "text/plain", "ready\n".to_string()),
        "/readyz" => (
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            format!("caches not synced: {}\n", ready.waiting_for().join(", ")),
        ),
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found\n".to_string(),
        ),
    };
    text(status, content_type, body)
}

/// A response with a status, a content type and a body.
fn text(status: StatusCode, content_type: &str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(value) = hyper::header::HeaderValue::from_str(content_type) {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_follows_the_flag() {
        let m = Metrics::new();
        let ready = Readiness::default();
        assert_eq!(
            respond("/readyz", &m, &ready).status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        ready.standby();
        assert_eq!(respond("/readyz", &m, &ready).status(), StatusCode::OK);
        assert_eq!(respond("/healthz", &m, &ready).status(), StatusCode::OK);
        assert_eq!(respond("/metrics", &m, &ready).status(), StatusCode::OK);
        assert_eq!(respond("/nope", &m, &ready).status(), StatusCode::NOT_FOUND);
    }

    /// An API server that knows two tokens: `reader` may get /metrics, `tenant` may not.
    fn api(
        method: &http::Method,
        path: &str,
        body: &serde_json::Value,
    ) -> http::Response<kube::client::Body> {
        let mut review = body.clone();
        review["status"] = if path.contains("/tokenreviews") {
            match body["spec"]["token"].as_str() {
                Some(token @ ("reader" | "tenant")) => serde_json::json!({
                    "authenticated": true,
                    "user": {"username": format!("system:serviceaccount:ns:{token}")}
                }),
                _ => serde_json::json!({"authenticated": false}),
            }
        } else {
            serde_json::json!({
                "allowed": body["spec"]["user"] == "system:serviceaccount:ns:reader"
            })
        };
        assert_eq!(method, http::Method::POST);
        crate::testing::json(StatusCode::CREATED, review)
    }

    fn get(path: &str, token: Option<&str>) -> Request<()> {
        let mut request = Request::builder().uri(path);
        if let Some(token) = token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        request.body(()).unwrap_or_default()
    }

    #[tokio::test]
    async fn guarded_metrics_answer_401_403_or_200_and_the_probes_stay_open() {
        let (client, fake) = crate::testing::FakeApi::start("default", api);
        let auth = MetricsAuth::new(client);
        let (m, ready) = (Metrics::new(), Readiness::default());
        ready.standby();
        let status = |path: &'static str, token: Option<&'static str>| {
            let (m, ready, auth) = (&m, &ready, &auth);
            async move {
                handle(&get(path, token), m, ready, Some(auth))
                    .await
                    .status()
            }
        };
        assert_eq!(status("/metrics", None).await, StatusCode::UNAUTHORIZED);
        assert_eq!(
            status("/metrics", Some("made-up")).await,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            status("/metrics", Some("tenant")).await,
            StatusCode::FORBIDDEN
        );
        assert_eq!(status("/metrics", Some("reader")).await, StatusCode::OK);
        let asked = fake.take().len();
        assert_eq!(asked, 5, "1 + 2 + 2 reviews");
        assert_eq!(status("/healthz", None).await, StatusCode::OK);
        assert_eq!(status("/readyz", None).await, StatusCode::OK);
        assert_eq!(status("/nope", None).await, StatusCode::NOT_FOUND);
        assert_eq!(status("/metrics", Some("reader")).await, StatusCode::OK);
        assert!(
            fake.take().is_empty(),
            "probes ask nothing; the reader is remembered"
        );
        let body = handle(&get("/metrics", Some("tenant")), &m, &ready, Some(&auth)).await;
        let bytes = http_body_util::BodyExt::collect(body.into_body())
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        assert_eq!(
            &bytes[..],
            b"Authorization denied for user system:serviceaccount:ns:tenant\n"
        );
    }

    #[tokio::test]
    async fn unguarded_metrics_are_open() {
        let (m, ready) = (Metrics::new(), Readiness::default());
        let response = handle(&get("/metrics", None), &m, &ready, None).await;
        assert_eq!(response.status(), StatusCode::OK);
    }
}
