//! kopf's vocabulary on the objects it handles and the requests it makes, in one place:
//! its annotation prefix and keys, its default finalizer, its field manager and Events
//! component, and the rule that tells a progress annotation from the others (kopf
//! 1.38-1.45 `_cogs/configs/progress.py`, `_cogs/configs/diffbase.py`,
//! `_cogs/clients/auth.py`, `_cogs/clients/events.py`).

/// kopf's annotation prefix (its default `AnnotationsProgressStorage` and
/// `AnnotationsDiffBaseStorage` prefix).
pub(crate) const PREFIX: &str = "kopf.zalando.org";
/// The diff-base's key under the prefix; `-ofDRS` variants follow it for ReplicaSets.
pub(crate) const DIFFBASE_KEY: &str = "last-handled-configuration";
/// The diff-base annotation under kopf's default prefix.
pub(crate) const DIFFBASE_ANNOTATION: &str = "kopf.zalando.org/last-handled-configuration";
/// The key kopf touches to wake itself (`touch-dummy`), no progress.
pub(crate) const TOUCH_KEY: &str = "touch-dummy";
/// kopf's default finalizer.
pub(crate) const DEFAULT_FINALIZER: &str = "kopf.zalando.org/KopfFinalizerMarker";
/// The field manager of kopf's writes: the API server names managers after the
/// User-Agent's first part, and kopf sends `kopf/<version>`. Also the `source.component`
/// and `reportingComponent` of the Events it posts.
pub(crate) const MANAGER: &str = "kopf";

/// The annotation prefix kopf stores under on an object with these annotation keys:
/// kopf's default, or the one an `Annotations…Storage(prefix=...)` setting chose (the
/// prefix of a `<prefix>/last-handled-configuration` annotation).
pub(crate) fn prefix<'a>(keys: impl Iterator<Item = &'a str> + Clone) -> String {
    if keys.clone().any(|k| k == DIFFBASE_ANNOTATION) {
        return PREFIX.to_string();
    }
    keys.filter_map(|k| k.split_once('/'))
        .find(|(p, name)| name.starts_with(DIFFBASE_KEY) && *p != PREFIX)
        .map_or_else(|| PREFIX.to_string(), |(p, _)| p.to_string())
}

/// Whether an annotation is one of kopf's progress marks under `prefix` (a handler's
/// state): any key under it but the diff-base (and its `-ofDRS` variants) and the touch
/// key.
pub(crate) fn is_progress_annotation(key: &str, prefix: &str) -> bool {
    key.strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|rest| !rest.starts_with(DIFFBASE_KEY) && rest != TOUCH_KEY)
}

/// Whether a finalizer is kopf's: its default, one that says kopf, or `<the resource's
/// group>/...` (`settings.persistence.finalizer`, kopf's docs suggest `<group>/finalizer`).
pub(crate) fn is_kopf_finalizer(finalizer: &str, group: Option<&str>) -> bool {
    finalizer == DEFAULT_FINALIZER
        || finalizer.to_ascii_lowercase().contains("kopf")
        || group.is_some_and(|g| !g.is_empty() && finalizer.starts_with(&format!("{g}/")))
}

/// The prefix of a diff-base annotation (`<prefix>/last-handled-configuration`, or its
/// `-ofDRS` variant), if `key` is one: each prefix is one kopf operator's storage.
pub(crate) fn diffbase_prefix(key: &str) -> Option<&str> {
    key.split_once('/')
        .filter(|(p, name)| {
            !p.is_empty()
                && (*name == DIFFBASE_KEY || *name == format!("{DIFFBASE_KEY}-ofDRS").as_str())
        })
        .map(|(p, _)| p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_is_kopfs_or_the_one_the_diffbase_is_stored_under() {
        let keys = |k: &[&'static str]| prefix(k.iter().copied());
        assert_eq!(keys(&[]), PREFIX);
        assert_eq!(
            keys(&["my.example.com/last-handled-configuration"]),
            "my.example.com"
        );
        assert_eq!(
            keys(&[
                DIFFBASE_ANNOTATION,
                "my.example.com/last-handled-configuration"
            ]),
            PREFIX
        );
        assert_eq!(keys(&["app.kubernetes.io/name"]), PREFIX);
    }

    #[test]
    fn a_diffbase_key_names_its_prefix() {
        assert_eq!(diffbase_prefix(DIFFBASE_ANNOTATION), Some(PREFIX));
        assert_eq!(
            diffbase_prefix("a.example.com/last-handled-configuration-ofDRS"),
            Some("a.example.com")
        );
        assert_eq!(diffbase_prefix("a.example.com/create_fn"), None);
        assert_eq!(diffbase_prefix("last-handled-configuration"), None);
    }

    #[test]
    fn kopf_finalizers_are_the_default_kopfs_or_the_groups() {
        assert!(is_kopf_finalizer(DEFAULT_FINALIZER, None));
        assert!(is_kopf_finalizer("my.kopf.dev/x", None));
        assert!(is_kopf_finalizer(
            "example.com/finalizer",
            Some("example.com")
        ));
        assert!(!is_kopf_finalizer(
            "example.com/finalizer",
            Some("other.com")
        ));
        assert!(!is_kopf_finalizer("foregroundDeletion", Some("")));
    }

    #[test]
    fn progress_marks_are_every_key_but_the_diffbase_and_the_touch() {
        assert!(is_progress_annotation("kopf.zalando.org/create_fn", PREFIX));
        assert!(!is_progress_annotation(DIFFBASE_ANNOTATION, PREFIX));
        assert!(!is_progress_annotation(
            "kopf.zalando.org/last-handled-configuration-ofDRS",
            PREFIX
        ));
        assert!(!is_progress_annotation(
            "kopf.zalando.org/touch-dummy",
            PREFIX
        ));
        assert!(is_progress_annotation(
            "my.example.com/create_fn",
            "my.example.com"
        ));
        assert!(!is_progress_annotation(
            "my.example.com.evil/x",
            "my.example.com"
        ));
        assert!(!is_progress_annotation(
            "kopf.zalando.org/create_fn",
            "my.example.com"
        ));
    }
}
