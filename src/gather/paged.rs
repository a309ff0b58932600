//! Lists of objects tenants write, read page by page with a bound on the bytes of each
//! page: a page over the bound is read again with fewer items (an eighth each time),
//! and a single object over it is named, never held. Discovery's Deployment list and
//! an audit's target Deployments and pods are read this way, so that what the auditor
//! holds at once is bounded by [`PAGE_BYTES`], not by what a tenant writes (an object
//! may be up to the API server's 1.5 MiB, and a namespace may hold thousands).
//!
//! Lists of small objects the auditor reads whole (Events, bindings, peering objects)
//! follow their `continue` tokens through [`each_page`], the one loop for them.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kube::Client;
use kube::api::{Api, ListParams};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use std::ops::ControlFlow;

/// Most bytes of one page read and held at once.
pub(crate) const PAGE_BYTES: usize = 8 << 20;

/// How much of a page over the bound is kept: enough for the list's `continue` token
/// and its first object's name.
const PREFIX_BYTES: usize = 64 << 10;

/// How a list read by [`each_page`] went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Listed {
    /// The pages read (requests that answered).
    pub(crate) pages: u64,
    /// Whether the list was read to its end (no page was left when it stopped).
    pub(crate) complete: bool,
}

/// Lists `api` with `params` page by page, each page asked with the `continue` token of
/// the one before, handing each page's objects to `take` until it breaks or the list
/// ends: the one continue-token loop of the lists read whole.
pub(crate) async fn each_page<K>(
    api: &Api<K>,
    mut params: ListParams,
    mut take: impl FnMut(Vec<K>) -> ControlFlow<()>,
) -> Result<Listed, kube::Error>
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut pages = 0;
    loop {
        let page = api.list(&params).await?;
        pages += 1;
        let next = page.metadata.continue_.filter(|t| !t.is_empty());
        let stopped = take(page.items).is_break();
        match next {
            Some(token) if !stopped => params.continue_token = Some(token),
            next => {
                return Ok(Listed {
                    pages,
                    complete: next.is_none(),
                });
            }
        }
    }
}

/// Why a paged list stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PageError {
    /// The request could not be made (an invalid selector).
    #[error("cannot list with these parameters: {0}")]
    Request(#[source] kube::core::request::Error),
    /// The API server refused or failed the list, or the body could not be read.
    #[error("{0}")]
    List(#[source] kube::Error),
    /// A page could not be parsed.
    #[error("reading a page of the list: {0}")]
    Decode(#[source] serde_json::Error),
}

impl PageError {
    /// The error as the client would have given it for a list read whole.
    pub(crate) fn into_kube(self) -> kube::Error {
        match self {
            PageError::Request(e) => kube::Error::BuildRequest(e),
            PageError::List(e) => e,
            PageError::Decode(e) => kube::Error::SerdeError(e),
        }
    }
}

/// One page of a list as the API server writes it.
#[derive(Debug, Deserialize)]
#[serde(bound = "T: DeserializeOwned")]
struct Page<T> {
    /// Its `continue` token.
    #[serde(default)]
    metadata: ListMeta,
    /// Its objects.
    #[serde(default = "Vec::new")]
    items: Vec<T>,
}

/// What one step of a paged list gives.
#[derive(Debug)]
pub(crate) enum Paged<T> {
    /// The objects of a page within the bound.
    Items(Vec<T>),
    /// One object over [`PAGE_BYTES`], by namespace and name (`?` where its first bytes
    /// do not show them); it was not read.
    Over {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
}

/// A list read one bounded page at a time ([`Pager::next`]).
pub(crate) struct Pager<'a> {
    client: &'a Client,
    path: String,
    params: ListParams,
    /// Items asked per page now.
    limit: u32,
    /// Items asked per page at most.
    page_size: u32,
    continue_token: Option<String>,
    done: bool,
    /// Pages read (requests made).
    pub(crate) pages: u64,
    /// Bytes of the pages read whole.
    pub(crate) bytes: u64,
}

impl<'a> Pager<'a> {
    /// The list at `path` (a collection's URL path, its segments already escaped) with
    /// `params` (selectors), `page_size` items a page at most.
    pub(crate) fn new(
        client: &'a Client,
        path: String,
        params: ListParams,
        page_size: u32,
    ) -> Self {
        let page_size = page_size.max(1);
        Pager {
            client,
            path,
            params,
            limit: page_size,
            page_size,
            continue_token: None,
            done: false,
            pages: 0,
            bytes: 0,
        }
    }

    /// The next page's objects, or the next object over the bound; `None` at the end.
    pub(crate) async fn next<T: DeserializeOwned>(
        &mut self,
    ) -> Result<Option<Paged<T>>, PageError> {
        while !self.done {
            let read = self.read_page::<T>().await?;
            self.pages += 1;
            match read {
                PageRead::Page(page, bytes) => {
                    self.bytes += bytes;
                    // Small pages again: the next one may take more items.
                    if bytes < (PAGE_BYTES / 4) as u64 {
                        self.limit = self.limit.saturating_mul(2).min(self.page_size);
                    }
                    self.advance(page.metadata.continue_);
                    return Ok(Some(Paged::Items(page.items)));
                }
                PageRead::TooBig(_) if self.limit > 1 => {
                    self.limit = (self.limit / 8).max(1);
                }
                PageRead::TooBig(prefix) => {
                    let (namespace, name) = prefix.first_item();
                    self.advance(prefix.continue_token());
                    return Ok(Some(Paged::Over { namespace, name }));
                }
            }
        }
        Ok(None)
    }

    /// Moves on to the page `token` names; the list ends without one.
    fn advance(&mut self, token: Option<String>) {
        self.continue_token = token.filter(|t| !t.is_empty());
        self.done = self.continue_token.is_none();
    }

    /// One page of at most `limit` objects, read up to [`PAGE_BYTES`].
    async fn read_page<T: DeserializeOwned>(&self) -> Result<PageRead<T>, PageError> {
        let mut params = self.params.clone().limit(self.limit);
        params.continue_token = self.continue_token.clone();
        let request = kube::core::Request::new(self.path.clone())
            .list(&params)
            .map_err(PageError::Request)?;
        let body = self
            .client
            .request_stream(request)
            .await
            .map_err(PageError::List)?;
        match read_bounded(body, PAGE_BYTES)
            .await
            .map_err(|e| PageError::List(kube::Error::ReadEvents(e)))?
        {
            Bounded::Whole(bytes) => {
                let page = serde_json::from_slice(&bytes).map_err(PageError::Decode)?;
                Ok(PageRead::Page(page, bytes.len() as u64))
            }
            Bounded::Cut(prefix) => Ok(PageRead::TooBig(PagePrefix(prefix))),
        }
    }
}

/// A page as read: whole, or over [`PAGE_BYTES`] (then only its first bytes are kept).
enum PageRead<T> {
    /// The page and its size in bytes.
    Page(Page<T>, u64),
    /// The first bytes of a page over the bound.
    TooBig(PagePrefix),
}

/// The first bytes of a list response. The API server writes a list's `metadata` (with
/// its `continue` token) before its `items`, and an object's `metadata.name` and
/// `namespace` first in the object.
struct PagePrefix(Vec<u8>);

impl PagePrefix {
    /// The string value of the first `"key":"…"` after `from`.
    fn string_after(&self, from: usize, key: &str) -> Option<String> {
        let text = String::from_utf8_lossy(self.0.get(from..)?);
        let needle = format!("\"{key}\":\"");
        let start = text.find(&needle)? + needle.len();
        let end = text[start..].find('"')?;
        Some(text[start..start + end].to_string())
    }

    /// Where the list's items start.
    fn items_at(&self) -> Option<usize> {
        memchr::memmem::find(&self.0, b"\"items\":[")
    }

    /// The list's `continue` token, when more pages follow.
    fn continue_token(&self) -> Option<String> {
        let items = self.items_at()?;
        let metadata = PagePrefix(self.0[..items].to_vec());
        metadata
            .string_after(0, "continue")
            .filter(|t| !t.is_empty())
    }

    /// The namespace and name of the page's first object, as far as the prefix shows
    /// them (`?` when it does not).
    fn first_item(&self) -> (String, String) {
        let at = self.items_at().unwrap_or(0);
        let shown = |v: Option<String>| {
            v.map_or_else(
                || "?".to_string(),
                |v| crate::model::bounded::clean_name(&v),
            )
        };
        (
            shown(self.string_after(at, "namespace")),
            shown(self.string_after(at, "name")),
        )
    }
}

/// A body read up to a bound.
enum Bounded {
    /// All of it.
    Whole(Vec<u8>),
    /// Its first [`PREFIX_BYTES`], the rest left unread.
    Cut(Vec<u8>),
}

/// Reads `body` whole when it is at most `max` bytes; else keeps its first
/// [`PREFIX_BYTES`] and stops reading (the connection's rest is dropped).
async fn read_bounded(
    body: impl futures::AsyncBufRead + Unpin,
    max: usize,
) -> std::io::Result<Bounded> {
    use futures::AsyncReadExt as _;
    let mut out = Vec::new();
    let mut limited = body.take(max as u64 + 1);
    limited.read_to_end(&mut out).await?;
    if out.len() > max {
        out.truncate(PREFIX_BYTES);
        out.shrink_to_fit();
        return Ok(Bounded::Cut(out));
    }
    Ok(Bounded::Whole(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{FakeApi, json, page_of};
    use http::{Method, StatusCode};
    use k8s_openapi::api::core::v1::ConfigMap;
    use std::ops::ControlFlow;

    /// A namespace of `len` ConfigMaps, listed as the API server pages.
    fn config_maps(len: usize) -> (Client, FakeApi) {
        FakeApi::start(
            "ns",
            move |_: &Method, path: &str, _: &serde_json::Value| {
                let (range, next) = page_of(path, len);
                let items: Vec<_> = range
                .map(|i| serde_json::json!({"metadata": {"name": format!("c{i}"), "namespace": "ns"}}))
                .collect();
                json(
                    StatusCode::OK,
                    serde_json::json!({"apiVersion": "v1", "kind": "ConfigMapList",
                    "metadata": {"continue": next}, "items": items}),
                )
            },
        )
    }

    #[tokio::test]
    async fn each_page_follows_the_tokens_to_the_end_or_until_told_to_stop() {
        let (client, api) = config_maps(7);
        let maps: Api<ConfigMap> = Api::namespaced(client, "ns");
        let mut names = Vec::new();
        let listed = each_page(&maps, ListParams::default().limit(3), |page| {
            names.extend(page.into_iter().filter_map(|c| c.metadata.name));
            ControlFlow::Continue(())
        })
        .await
        .expect("listed");
        assert_eq!(
            listed,
            Listed {
                pages: 3,
                complete: true
            }
        );
        assert_eq!(names.len(), 7);
        let asked: Vec<String> = api.take().into_iter().map(|s| s.path).collect();
        assert!(asked[1].contains("continue=3"), "{asked:?}");
        assert!(asked[2].contains("continue=6"), "{asked:?}");

        let stopped = each_page(&maps, ListParams::default().limit(3), |_| {
            ControlFlow::Break(())
        })
        .await
        .expect("listed");
        assert_eq!(
            stopped,
            Listed {
                pages: 1,
                complete: false
            }
        );
        // Stopping on the last page leaves nothing unread.
        let last = each_page(&maps, ListParams::default().limit(10), |_| {
            ControlFlow::Break(())
        })
        .await
        .expect("listed");
        assert_eq!(
            last,
            Listed {
                pages: 1,
                complete: true
            }
        );
    }
}
