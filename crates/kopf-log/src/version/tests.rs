use super::*;

fn v(s: &str) -> KopfVersion {
    KopfVersion::parse(s).expect(s)
}

fn clue(m: &str) -> Option<VersionClue> {
    version_signal(m).map(|s| s.clue)
}

/// The messages as kopf writes them, from the sources of each release.
#[test]
fn every_clue_from_kopfs_own_templates() {
    let cases = [
        // 1.38.0 and 1.39.1 `_core/actions/execution.py`.
        (
            "Handler 'create_fn' failed with an exception. Will retry.",
            VersionClue::ExceptionWillRetry,
        ),
        (
            "Daemon 'monitor' failed with an exception. Will stop.",
            VersionClue::ExceptionWillRetry,
        ),
        // 1.40.0+.
        (
            "Handler 'create_fn' failed with an exception and will try again in 60 seconds: boom",
            VersionClue::ExceptionAndWill,
        ),
        (
            "Handler 'create_fn' failed with an exception and will ignore it: boom",
            VersionClue::ExceptionAndWill,
        ),
        // `_core/actions/application.py`.
        (
            "Patching failed with inconsistencies: (('remove', ('status', 'x'), 1, None),)",
            VersionClue::PatchingFailed,
        ),
        (
            "Merge-patching finished with inconsistencies: (('remove', ('status', 'x'), 1, None),)",
            VersionClue::MergePatchingFinished,
        ),
        (
            "Patching with: {'status': {'x': 1}}",
            VersionClue::PatchingWith,
        ),
        (
            "Merge-patching the resource with: {'metadata': {}}",
            VersionClue::MergePatchingWith,
        ),
        (
            "JSON-patching the status with: [{'op': 'add'}]",
            VersionClue::MergePatchingWith,
        ),
        // `_cogs/clients/watching.py`, `api.py`.
        (
            "Receiving `too many requests` error from server, will retry after 1 seconds. Error details: ('Too many requests', {})",
            VersionClue::TooManyRequestsWarning,
        ),
        (
            "Request attempt #1/9 failed; will retry: GET https://x/apis -> APITooManyRequestsError('Too many requests', {'code': 429})",
            VersionClue::TooManyRequestsRetried,
        ),
        (
            "Overriding the backoff 1s with the retry-after 5s from the server: GET https://x/apis",
            VersionClue::RetryAfterOverride,
        ),
        (
            "Watch-stream for kopfexamples.v1.kopf.dev in 'ns' is inactive, reconnecting.",
            VersionClue::WatchStreamInactive,
        ),
        ("Starting Kopf 1.45.2.", VersionClue::Banner),
    ];
    for (m, want) in cases {
        assert_eq!(clue(m), Some(want), "{m}");
    }
    for m in [
        "Handler 'create_fn' succeeded.",
        "Handler 'create_fn' failed temporarily: boom",
        "Request attempt #1/9 failed; will retry: GET https://x -> APIForbiddenError('x')",
        "Starting Kopf (unknown version).",
        "Watch-stream for x is active.",
        "Patching the world",
        "",
    ] {
        assert_eq!(clue(m), None, "{m}");
    }
}

#[test]
fn the_ranges_are_the_releases_that_write_each_wording() {
    let r = |m: &str| version_signal(m).expect(m).range;
    let old = r("Handler 'x' failed with an exception. Will retry.");
    assert!(old.contains(v("1.38.0")) && old.contains(v("1.39.1")) && !old.contains(v("1.40.0")));
    let new = r("Handler 'x' failed with an exception and will stop now: x");
    assert!(!new.contains(v("1.39.1")) && new.contains(v("1.40.0")) && new.contains(v("1.45.2")));
    let patch = r("Patching failed with inconsistencies: ()");
    assert!(patch.contains(v("1.43.0")) && !patch.contains(v("1.44.0")));
    let merge = r("Merge-patching finished with inconsistencies: ()");
    assert!(!merge.contains(v("1.43.0")) && merge.contains(v("1.44.0")));
    let warn = r("Receiving `too many requests` error from server, will retry after 1 seconds.");
    assert!(warn.contains(v("1.42.1")) && !warn.contains(v("1.42.2")));
    assert_eq!(
        r("Starting Kopf 1.38.0.").exact_version(),
        Some(KopfVersion::new(1, 38, 0))
    );
}

#[test]
fn ranges_narrow_and_contradict() {
    let mut range = VersionRange::default();
    assert!(range.is_unbounded() && !range.is_empty());
    range.narrow(VersionClue::ExceptionAndWill.range());
    range.narrow(VersionClue::PatchingFailed.range());
    assert_eq!(range.at_least, Some(v("1.40.0")));
    assert_eq!(range.at_most, Some(v("1.43.0")));
    assert!(range.contains(v("1.42.2")) && !range.is_empty());
    range.narrow(VersionClue::WatchStreamInactive.range());
    assert!(range.is_empty());
}

#[test]
fn versions_parse() {
    assert_eq!(
        KopfVersion::parse("1.45.2"),
        Some(KopfVersion::new(1, 45, 2))
    );
    assert_eq!(KopfVersion::parse("1.38"), Some(KopfVersion::new(1, 38, 0)));
    assert_eq!(
        KopfVersion::parse("1.45.2rc1"),
        Some(KopfVersion::new(1, 45, 2))
    );
    assert_eq!(KopfVersion::parse("x"), None);
    assert_eq!(KopfVersion::new(1, 45, 2).to_string(), "1.45.2");
    assert!(KopfVersion::new(1, 9, 0) < KopfVersion::new(1, 10, 0));
}
