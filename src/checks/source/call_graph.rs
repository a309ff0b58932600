//! The repository's functions by name, and the search through them from a handler's
//! calls: how `source.blocking-call`, `source.module-logger` and
//! `source.silent-failure` follow a handler into the helpers it calls.

use crate::model::source::{Helper, Location, SourceFacts};

/// How deep [`CallGraph::through`] follows calls from helper to helper.
pub(super) const MAX_CALL_DEPTH: usize = 4;

/// The repository's functions by name, built once per run: each call a handler or
/// helper makes is looked up, not searched for among every function (a search per
/// call is quadratic in a large repository's functions).
pub(super) struct CallGraph<'a> {
    by_name: std::collections::HashMap<&'a str, Vec<&'a Helper>>,
}

/// What [`CallGraph::through`] looks for in one helper: what and where, `None` to look
/// in its callees, `Err` to stop there.
pub(super) type Pick = dyn Fn(&Helper) -> Result<Option<(String, Location)>, ()>;

/// The state of one handler's searches with one [`Pick`]: the helpers on the current
/// path (to cut cycles), and those already searched in full without a find, by the
/// depth they were searched at. Without the second, a file of helpers that each call
/// the next a few hundred times, and a handler calling the first on as many lines,
/// costs the product of those counts at every depth: billions of lookups from a few
/// KiB of hostile Python.
#[derive(Default)]
pub(super) struct Search<'a> {
    visiting: Vec<&'a str>,
    exhausted: std::collections::HashSet<(*const Helper, usize)>,
    /// Whether the search below the current helper was cut at a helper on the path:
    /// what it found then depends on the path, so it is not remembered.
    cut: bool,
}

impl<'a> CallGraph<'a> {
    /// Indexes the helpers of `facts`.
    pub(super) fn new(facts: &'a SourceFacts) -> CallGraph<'a> {
        let mut by_name: std::collections::HashMap<&str, Vec<&Helper>> =
            std::collections::HashMap::new();
        for helper in &facts.helpers {
            by_name.entry(&helper.function).or_default().push(helper);
        }
        CallGraph { by_name }
    }

    /// The helper a name calls from `file`: for a plain name, the one defined in that
    /// file, else the only one of that name in the repository; for `module.name`, the
    /// only one of that name in a module so named (`k8s.py`, `k8s/__init__.py`).
    pub(super) fn resolve(&self, name: &str, file: &str) -> Option<&'a Helper> {
        if let Some((module, function)) = name.split_once('.') {
            let mut in_module = self
                .by_name
                .get(function)?
                .iter()
                .filter(|f| module_name(&f.location.file) == Some(module));
            return match (in_module.next(), in_module.next()) {
                (Some(only), None) => Some(*only),
                _ => None,
            };
        }
        let named = self.by_name.get(name)?;
        named
            .iter()
            .find(|f| f.location.file == file)
            .or(match named.as_slice() {
                [only] => Some(only),
                _ => None,
            })
            .copied()
    }

    /// What `pick` finds in `helper` or in the helpers it calls, up to
    /// [`MAX_CALL_DEPTH`] deep, cycles cut: the chain of helpers, what, and where.
    /// `pick` gives `Err` to stop the search along a helper (one that posts an Event
    /// answers for its callees).
    ///
    /// Each helper is searched once per depth (a search at a depth finds nothing that a
    /// shallower one would not), and each name it calls once however often it calls it.
    pub(super) fn through(
        &self,
        helper: &'a Helper,
        depth: usize,
        search: &mut Search<'a>,
        pick: &Pick,
    ) -> Option<(String, String, Location)> {
        let here = || format!("{}() (defined at {})", helper.function, helper.location);
        if let Some((what, at)) = pick(helper).ok()? {
            return Some((here(), what, at));
        }
        let key = (std::ptr::from_ref(helper), depth);
        if search.visiting.contains(&helper.function.as_str()) {
            search.cut = true;
            return None;
        }
        if depth + 1 >= MAX_CALL_DEPTH || search.exhausted.contains(&key) {
            return None;
        }
        let cut_above = std::mem::replace(&mut search.cut, false);
        search.visiting.push(&helper.function);
        let mut called = std::collections::HashSet::new();
        let found = helper
            .calls
            .iter()
            .filter(|name| called.insert(name.as_str()))
            .find_map(|name| {
                let inner = self.resolve(name, &helper.location.file)?;
                let (chain, what, at) = self.through(inner, depth + 1, search, pick)?;
                Some((format!("{}, which calls {chain}", here()), what, at))
            });
        search.visiting.pop();
        if found.is_none() && !search.cut {
            search.exhausted.insert(key);
        }
        search.cut |= cut_above;
        found
    }
}

/// The name a Python file is imported by: its stem, or its package's name for an
/// `__init__.py`.
fn module_name(path: &str) -> Option<&str> {
    let mut parts = path.rsplit('/');
    let file = parts.next()?.strip_suffix(".py")?;
    if file == "__init__" {
        parts.next()
    } else {
        Some(file)
    }
}
