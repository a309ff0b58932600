//! `/metrics` for authorized readers only (`--metrics-auth`), as controller-runtime's
//! `filters.WithAuthenticationAndAuthorization` serves it: the caller's bearer token is
//! authenticated with a TokenReview, and the user it names (with its groups, uid and
//! extra) is authorized with a SubjectAccessReview for the request's verb on the
//! non-resource URL `/metrics`. The metrics name every KopfAudit of the cluster, so
//! without this any pod that reaches the port reads them all.
//!
//! Answers are remembered for [`ANSWER_TTL`], keyed by a SHA-256 of verb and token (no
//! token is kept), in a map of at most [`REMEMBERED`] entries: a Prometheus scraping
//! every 15 s costs two API requests a minute. Failed reviews are not remembered. At
//! most [`CONCURRENT_REVIEWS`] reviews are in flight at once.

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, PostParams};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// How long an answer, allowed or not, is reused: a revoked binding or token stops
/// working within it (controller-runtime caches authentication for as long).
pub(crate) const ANSWER_TTL: Duration = Duration::from_secs(60);

/// At most this many answers are remembered: each distinct token a caller sends adds
/// one, so the map must not grow with what callers make up.
pub(crate) const REMEMBERED: usize = 1024;

/// At most this many reviews are asked at once. Every new token a caller makes up costs
/// a TokenReview, so a flood of them must not become a flood on the API server;
/// remembered answers (a scraper's) never wait for this.
pub(crate) const CONCURRENT_REVIEWS: usize = 4;

/// The path the SubjectAccessReview asks about (the one `metrics-reader` ClusterRoles
/// grant as a `nonResourceURL`).
const METRICS_PATH: &str = "/metrics";

/// What a request for `/metrics` gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Authenticated and authorized: served.
    Allowed,
    /// No bearer token, or one the API server does not authenticate: 401.
    Unauthenticated,
    /// Authenticated as `user`, who may not read `/metrics`: 403.
    Forbidden {
        /// The authenticated user's name.
        user: String,
    },
}

/// Why a review could not be asked; never remembered, so the next request asks again.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AuthError {
    /// The TokenReview failed (controller-runtime answers 401).
    #[error("TokenReview failed: {0}")]
    TokenReview(#[source] kube::Error),
    /// The SubjectAccessReview failed (controller-runtime answers 500).
    #[error("SubjectAccessReview for user {user} failed: {source}")]
    AccessReview {
        /// The authenticated user.
        user: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// One remembered answer and when it was asked.
struct Remembered {
    verdict: Verdict,
    asked: Instant,
}

/// A SHA-256 of verb and token: what the answers are keyed by.
type AnswerKey = [u8; 32];

/// The reviewer of `/metrics` requests: the client it asks with and its answers.
pub(crate) struct MetricsAuth {
    client: Client,
    answers: Mutex<HashMap<AnswerKey, Remembered>>,
    reviews: tokio::sync::Semaphore,
}

impl MetricsAuth {
    /// A reviewer asking through `client` (the auditor's own: it needs `create` on
    /// `tokenreviews` and `subjectaccessreviews`).
    pub(crate) fn new(client: Client) -> Self {
        MetricsAuth {
            client,
            answers: Mutex::new(HashMap::new()),
            reviews: tokio::sync::Semaphore::new(CONCURRENT_REVIEWS),
        }
    }

    /// The verdict on a request with this `Authorization` header value and `verb`
    /// (the HTTP method in lower case, as controller-runtime asks it).
    pub(crate) async fn check(
        &self,
        authorization: Option<&[u8]>,
        verb: &str,
    ) -> Result<Verdict, AuthError> {
        let Some(token) = authorization.and_then(bearer_token) else {
            return Ok(Verdict::Unauthenticated);
        };
        let key = answer_key(verb, token);
        if let Some(verdict) = self.remembered(&key) {
            return Ok(verdict);
        }
        // Never closed: the semaphore lives as long as `self`.
        let _turn = self.reviews.acquire().await.ok();
        if let Some(verdict) = self.remembered(&key) {
            return Ok(verdict);
        }
        let verdict = self.ask(token, verb).await?;
        self.remember(key, verdict.clone());
        Ok(verdict)
    }

    /// Asks the API server who the token is and whether that user may `verb` /metrics.
    async fn ask(&self, token: &str, verb: &str) -> Result<Verdict, AuthError> {
        let Some(user) = self.authenticate(token).await? else {
            return Ok(Verdict::Unauthenticated);
        };
        let name = user.username.clone().unwrap_or_default();
        if self.authorize(user, verb).await? {
            Ok(Verdict::Allowed)
        } else {
            Ok(Verdict::Forbidden { user: name })
        }
    }

    /// The user the token belongs to, or `None` when the API server does not
    /// authenticate it.
    async fn authenticate(&self, token: &str) -> Result<Option<UserInfo>, AuthError> {
        let review = TokenReview {
            metadata: Default::default(),
            spec: TokenReviewSpec {
                token: token.to_string(),
                audiences: None,
            },
            status: None,
        };
        let answer = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(AuthError::TokenReview)?;
        Ok(answer
            .status
            .filter(|s| s.authenticated == Some(true))
            .and_then(|s| s.user)
            .filter(|u| u.username.as_deref().is_some_and(|n| !n.is_empty())))
    }

    /// Whether `user` may `verb` the non-resource URL /metrics.
    async fn authorize(&self, user: UserInfo, verb: &str) -> Result<bool, AuthError> {
        let name = user.username.clone().unwrap_or_default();
        let review = access_review(user, verb);
        let answer = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|source| AuthError::AccessReview { user: name, source })?;
        Ok(answer
            .status
            .is_some_and(|s| s.allowed && s.denied != Some(true)))
    }

    /// A remembered answer younger than [`ANSWER_TTL`].
    fn remembered(&self, key: &AnswerKey) -> Option<Verdict> {
        let answers = self.answers.lock().unwrap_or_else(|p| p.into_inner());
        answers
            .get(key)
            .filter(|r| r.asked.elapsed() < ANSWER_TTL)
            .map(|r| r.verdict.clone())
    }

    /// Remembers an answer; when the map is full, expired answers go first, and all of
    /// them if none has expired (the next requests ask again).
    fn remember(&self, key: AnswerKey, verdict: Verdict) {
        let mut answers = self.answers.lock().unwrap_or_else(|p| p.into_inner());
        if answers.len() >= REMEMBERED {
            answers.retain(|_, r| r.asked.elapsed() < ANSWER_TTL);
            if answers.len() >= REMEMBERED {
                answers.clear();
            }
        }
        answers.insert(
            key,
            Remembered {
                verdict,
                asked: Instant::now(),
            },
        );
    }
}

/// The token of an `Authorization: Bearer <token>` header, as the API server's own
/// bearer-token authenticator reads it (the scheme in any case, one token).
fn bearer_token(header: &[u8]) -> Option<&str> {
    let value = std::str::from_utf8(header).ok()?;
    let mut parts = value.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && parts.next().is_none())
        .then_some(token)
}

/// The key of an answer: SHA-256 over verb and token, so that the map holds no token.
fn answer_key(verb: &str, token: &str) -> AnswerKey {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    context.update(verb.as_bytes());
    context.update(b"\0");
    context.update(token.as_bytes());
    let mut key = [0u8; 32];
    key.copy_from_slice(context.finish().as_ref());
    key
}

/// The SubjectAccessReview asking whether `user` may `verb` /metrics: everything the
/// TokenReview said of the user, as the API server's delegated authorizer asks it.
fn access_review(user: UserInfo, verb: &str) -> SubjectAccessReview {
    SubjectAccessReview {
        metadata: Default::default(),
        spec: SubjectAccessReviewSpec {
            user: user.username,
            groups: user.groups,
            uid: user.uid,
            extra: user.extra,
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some(METRICS_PATH.to_string()),
                verb: Some(verb.to_string()),
            }),
            resource_attributes: None,
        },
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{FakeApi, json};
    use http::{Method, Response, StatusCode};
    use kube::client::Body;

    /// Prometheus's ServiceAccount, bound to the metrics-reader ClusterRole.
    const READER: &str = "system:serviceaccount:monitoring:prometheus";
    /// A tenant's ServiceAccount: authenticated, not bound.
    const TENANT: &str = "system:serviceaccount:tenant:app";

    /// The API server's answers: tokens `reader`, `tenant`, `reader-sar-fails`
    /// authenticate; `down` makes the TokenReview fail; any other is unknown. Only
    /// the reader may get /metrics.
    fn answer(method: &Method, path: &str, body: &serde_json::Value) -> Response<Body> {
        let created = |mut review: serde_json::Value, status: serde_json::Value| {
            review["status"] = status;
            json(StatusCode::CREATED, review)
        };
        let failure = || {
            json(
                StatusCode::INTERNAL_SERVER_ERROR,
                serde_json::json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": 500, "message": "etcd is down"}),
            )
        };
        if method == Method::POST && path.starts_with("/apis/authentication.k8s.io/v1/tokenreviews")
        {
            let user = match body["spec"]["token"].as_str() {
                Some("reader") => READER,
                Some("tenant") => TENANT,
                Some("reader-sar-fails") => "system:serviceaccount:monitoring:sar-fails",
                Some("down") => return failure(),
                _ => return created(body.clone(), serde_json::json!({"authenticated": false})),
            };
            return created(
                body.clone(),
                serde_json::json!({"authenticated": true, "user": {
                    "username": user, "uid": "u-1",
                    "groups": ["system:serviceaccounts", "system:authenticated"],
                    "extra": {"authentication.kubernetes.io/pod-name": ["p"]}
                }}),
            );
        }
        if method == Method::POST
            && path.starts_with("/apis/authorization.k8s.io/v1/subjectaccessreviews")
        {
            let spec = &body["spec"];
            if spec["user"].as_str() == Some("system:serviceaccount:monitoring:sar-fails") {
                return failure();
            }
            let allowed = spec["user"].as_str() == Some(READER)
                && spec["nonResourceAttributes"]["path"].as_str() == Some("/metrics")
                && spec["nonResourceAttributes"]["verb"].as_str() == Some("get");
            return created(body.clone(), serde_json::json!({"allowed": allowed}));
        }
        json(StatusCode::NOT_FOUND, serde_json::json!({}))
    }

    fn reviewer() -> (MetricsAuth, FakeApi) {
        let (client, fake) = FakeApi::start("default", answer);
        (MetricsAuth::new(client), fake)
    }

    #[tokio::test]
    async fn no_bearer_token_is_unauthenticated_without_asking() {
        let (auth, fake) = reviewer();
        let headers: [Option<&[u8]>; 4] = [
            None,
            Some(b"Basic dXNlcjpwdw=="),
            Some(b"Bearer "),
            Some(b"reader"),
        ];
        for header in headers {
            assert_eq!(
                auth.check(header, "get").await.ok(),
                Some(Verdict::Unauthenticated),
                "{header:?}"
            );
        }
        assert!(fake.take().is_empty(), "no API request");
    }

    #[tokio::test]
    async fn a_token_the_api_server_does_not_know_is_unauthenticated() {
        let (auth, fake) = reviewer();
        let verdict = auth.check(Some(b"Bearer made-up"), "get").await.ok();
        assert_eq!(verdict, Some(Verdict::Unauthenticated));
        let seen = fake.take();
        assert_eq!(
            seen.len(),
            1,
            "one TokenReview, no SubjectAccessReview: {seen:?}"
        );
        assert!(seen[0].is(&Method::POST, "/tokenreviews"));
        assert_eq!(seen[0].body["spec"]["token"], "made-up");
    }

    #[tokio::test]
    async fn an_authenticated_user_without_the_grant_is_forbidden() {
        let (auth, fake) = reviewer();
        let verdict = auth.check(Some(b"Bearer tenant"), "get").await.ok();
        assert_eq!(
            verdict,
            Some(Verdict::Forbidden {
                user: TENANT.into()
            })
        );
        let seen = fake.take();
        assert_eq!(seen.len(), 2, "{seen:?}");
        let sar = &seen[1];
        assert!(sar.is(&Method::POST, "/subjectaccessreviews"));
        let spec = &sar.body["spec"];
        assert_eq!(spec["user"], TENANT);
        assert_eq!(spec["uid"], "u-1");
        assert_eq!(
            spec["groups"],
            serde_json::json!(["system:serviceaccounts", "system:authenticated"])
        );
        assert_eq!(
            spec["extra"]["authentication.kubernetes.io/pod-name"],
            serde_json::json!(["p"])
        );
        assert_eq!(
            spec["nonResourceAttributes"],
            serde_json::json!({"path": "/metrics", "verb": "get"})
        );
        assert!(spec["resourceAttributes"].is_null());
    }

    #[tokio::test]
    async fn a_reader_is_allowed_and_the_verb_is_asked() {
        let (auth, fake) = reviewer();
        let token = Some(&b"bearer reader"[..]);
        assert_eq!(auth.check(token, "get").await.ok(), Some(Verdict::Allowed));
        assert_eq!(
            auth.check(token, "post").await.ok(),
            Some(Verdict::Forbidden {
                user: READER.into()
            }),
            "a remembered get says nothing of post"
        );
        assert_eq!(fake.take().len(), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn answers_are_remembered_for_a_minute_then_asked_again() {
        let (auth, fake) = reviewer();
        for token in ["reader", "tenant", "unknown"] {
            let header = format!("Bearer {token}");
            let first = auth.check(Some(header.as_bytes()), "get").await.ok();
            assert!(!fake.take().is_empty());
            tokio::time::advance(ANSWER_TTL - Duration::from_secs(1)).await;
            let again = auth.check(Some(header.as_bytes()), "get").await.ok();
            assert_eq!(again, first, "{token}");
            assert!(
                fake.take().is_empty(),
                "{token}: remembered, no API request"
            );
            tokio::time::advance(Duration::from_secs(2)).await;
            let later = auth.check(Some(header.as_bytes()), "get").await.ok();
            assert_eq!(later, first, "{token}");
            assert!(
                !fake.take().is_empty(),
                "{token}: asked again after the TTL"
            );
        }
    }

    #[tokio::test]
    async fn failed_reviews_are_errors_and_not_remembered() {
        let (auth, fake) = reviewer();
        for _ in 0..2 {
            assert!(matches!(
                auth.check(Some(b"Bearer down"), "get").await,
                Err(AuthError::TokenReview(_))
            ));
            assert!(matches!(
                auth.check(Some(b"Bearer reader-sar-fails"), "get").await,
                Err(AuthError::AccessReview { .. })
            ));
        }
        assert_eq!(fake.take().len(), 6, "asked every time");
    }

    #[tokio::test]
    async fn the_map_stays_bounded() {
        let (auth, _fake) = reviewer();
        for i in 0..REMEMBERED + 10 {
            let header = format!("Bearer made-up-{i}");
            let _ = auth.check(Some(header.as_bytes()), "get").await;
        }
        let held = auth.answers.lock().map(|a| a.len()).unwrap_or(usize::MAX);
        assert!(held <= REMEMBERED, "{held}");
    }

    #[test]
    fn the_key_holds_no_token_and_tells_verbs_apart() {
        let key = answer_key("get", "secret-token");
        assert_ne!(key, answer_key("post", "secret-token"));
        assert_ne!(key, answer_key("get", "secret-tokeN"));
        assert!(!key.windows(6).any(|w| w == b"secret"));
    }
}
