use super::*;

/// A version from its text.
fn v(text: &str) -> KopfVersion {
    parse_version(text).expect("a version")
}

#[test]
fn versions_read_with_missing_parts_and_suffixes() {
    assert_eq!(v("1.38"), KopfVersion::new(1, 38, 0));
    assert_eq!(v("1.38.0rc1"), KopfVersion::new(1, 38, 0));
    assert_eq!(v("0.27"), KopfVersion::new(0, 27, 0));
    assert!(parse_version("x").is_none());
}

#[test]
fn a_caret_range_straddles_1_41_and_an_exact_one_does_not() {
    let caret = KopfRange::from_until(v("1.38.0"), v("2.0.0"));
    assert_eq!(
        caret.across(&KOPF_ERAS, LogPosting::of),
        ByVersion::Split {
            boundary: LOGGERS_SETTING,
            before: LogPosting::EveryRecord,
            from: LogPosting::WithLoggersSetting,
        }
    );
    let exact = KopfRange::exactly(v("1.37.2"));
    assert_eq!(
        exact.across(&KOPF_ERAS, LogPosting::of),
        ByVersion::Decided(LogPosting::EveryRecord)
    );
    // Below 1.41 on every side: 0.x posts like 1.x before 1.41.
    let old = KopfRange::from_until(v("0.27"), v("1.41"));
    assert_eq!(
        old.across(&KOPF_ERAS, LogPosting::of),
        ByVersion::Decided(LogPosting::EveryRecord)
    );
    let current = KopfRange {
        lower: Some(End::inclusive(v("1.41"))),
        upper: None,
    };
    assert_eq!(
        current.across(&KOPF_ERAS, LogPosting::of),
        ByVersion::Decided(LogPosting::WithLoggersSetting)
    );
    // `<=1.41.0` reaches 1.41.0 itself; `<1.41.0` does not.
    let through = KopfRange {
        lower: Some(End::inclusive(v("1.40"))),
        upper: Some(End::inclusive(v("1.41.0"))),
    };
    assert!(matches!(
        through.across(&KOPF_ERAS, LogPosting::of),
        ByVersion::Split { .. }
    ));
    assert!(matches!(
        KopfRange::default().across(&KOPF_ERAS, LogPosting::of),
        ByVersion::Split { .. }
    ));
}

#[test]
fn specifiers_joined_by_commas_intersect() {
    let at_least = KopfRange {
        lower: Some(End::inclusive(v("1.38"))),
        upper: None,
    };
    let below = KopfRange {
        lower: None,
        upper: Some(End::exclusive(v("2"))),
    };
    let both = at_least.and(below);
    assert_eq!(both, KopfRange::from_until(v("1.38"), v("2")));
    assert_eq!(both.to_string(), ">=1.38.0,<2.0.0");
    let pinned = KopfRange::exactly(v("1.37.2")).and(at_least);
    assert_eq!(pinned.lower.map(|l| l.version), Some(v("1.38")));
    assert_eq!(KopfRange::exactly(v("1.37.2")).to_string(), "==1.37.2");
}

#[test]
fn a_pin_names_itself_as_written_and_kopf_0_x_is_told() {
    let pin = |range: KopfRange, written: &str| KopfPin {
        range,
        written: written.into(),
        locked: false,
        location: Location::default(),
    };
    assert_eq!(
        pin(KopfRange::exactly(v("1.37.2")), "==1.37.2").shown(),
        "1.37.2"
    );
    let caret = pin(KopfRange::from_until(v("1.38.0"), v("2")), "^1.38.0");
    assert_eq!(caret.shown(), "^1.38.0");
    assert!(!caret.before_one());
    assert!(pin(KopfRange::from_until(v("0.27"), v("0.28")), "^0.27").before_one());
    assert!(caret.weight() < pin(KopfRange::exactly(v("1.37.2")), "==1.37.2").weight());
}

#[test]
fn a_log_and_a_requirement_meet_the_posting_loggers_boundary_at_the_same_version() {
    use kopf_log::VersionRange;
    let before = KopfVersion::new(1, 40, 1);
    let from = KopfVersion::new(1, 41, 0);
    // One rule: the same version gives the same answer whichever source names it.
    for version in [before, from] {
        let pinned = KopfRange::exactly(version).across(&KOPF_ERAS, LogPosting::of);
        assert_eq!(
            pinned,
            ByVersion::Decided(LogPosting::of(version)),
            "{version}"
        );
        assert_eq!(
            LogPosting::in_log(&VersionRange::exact(version)),
            Some(LogPosting::of(version)),
            "{version}"
        );
    }
    assert_eq!(LogPosting::of(before), LogPosting::EveryRecord);
    assert_eq!(LogPosting::of(from), LogPosting::WithLoggersSetting);
    // A log whose wording allows both sides, or nothing, decides nothing.
    let straddling = VersionRange {
        at_least: Some(before),
        at_most: Some(from),
    };
    assert_eq!(LogPosting::in_log(&straddling), None);
    assert_eq!(LogPosting::in_log(&VersionRange::default()), None);
    assert_eq!(
        LogPosting::in_log(&VersionRange::at_most(before)),
        Some(LogPosting::EveryRecord)
    );
    assert_eq!(
        LogPosting::in_log(&VersionRange::at_least(from)),
        Some(LogPosting::WithLoggersSetting)
    );
}
