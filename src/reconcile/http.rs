//! The operator's own HTTP endpoints: `/metrics` (Prometheus text), `/healthz` (the
//! process serves) and `/readyz` (the watch caches have synced).

use super::readiness::Readiness;
use crate::publish::metrics::Metrics;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Serves the endpoints until the task is dropped.
pub(crate) async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    ready: Readiness,
) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    tracing::info!(%addr, "serving /metrics, /healthz, /readyz");
    loop {
        let (stream, _) = listener.accept().await?;
        let (metrics, ready) = (metrics.clone(), ready.clone());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let response = respond(req.uri().path(), &metrics, &ready);
                async move { Ok::<_, std::convert::Infallible>(response) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "http connection ended");
            }
        });
    }
}

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
}
