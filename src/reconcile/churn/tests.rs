//! Tests of the churn bound: the first change re-runs an audit at once, later ones
//! within the period join one re-run at its end, and sources are bounded apart.

use super::*;
use std::sync::Mutex;

fn audit(ns: &str, name: &str) -> ObjectRef<KopfAudit> {
    ObjectRef::new(name).within(ns)
}

fn tenant() -> Source {
    Source::Namespace("tenant".into())
}

#[test]
fn a_change_within_the_period_is_held_back_once_and_others_join_it() {
    let (bound, _released) = ChurnBound::new(CHURN_PERIOD);
    let t0 = Instant::now();
    let a = audit("ns-a", "a");
    let at = |secs: u64| t0 + Duration::from_secs(secs);
    assert_eq!(bound.admit(&tenant(), vec![a.clone()], t0), vec![a.clone()]);
    assert!(bound.admit(&tenant(), vec![a.clone()], at(5)).is_empty());
    assert!(bound.admit(&tenant(), vec![a.clone()], at(10)).is_empty());
    assert_eq!(
        bound.admit(&Source::Cluster, vec![a.clone()], at(10)),
        vec![a.clone()],
        "another source is bounded apart"
    );
    let other = audit("ns-b", "b");
    assert_eq!(
        bound.admit(&tenant(), vec![other.clone()], at(10)),
        vec![other],
        "and so is another audit"
    );
    bound.release((tenant(), a.clone()), at(30));
    assert!(
        bound.admit(&tenant(), vec![a.clone()], at(31)).is_empty(),
        "the released re-run starts the next period"
    );
}

#[test]
fn a_quiet_pair_is_forgotten_after_its_period() {
    let (bound, _released) = ChurnBound::new(CHURN_PERIOD);
    let t0 = Instant::now();
    for i in 0..100 {
        bound.admit(&tenant(), vec![audit("ns", &format!("a{i}"))], t0);
    }
    assert_eq!(bound.remembered(), 100);
    let later = t0 + CHURN_PERIOD + Duration::from_secs(1);
    let again = bound.admit(&tenant(), vec![audit("ns", "a0")], later);
    assert_eq!(again.len(), 1, "a period later it runs at once");
    assert_eq!(bound.remembered(), 1, "the others are swept");
}

/// The loop: 30 changes in 60 s from one namespace re-run an audit three
/// times (at once, then at the end of each period), the last after the last change.
#[tokio::test(start_paused = true)]
async fn thirty_changes_in_a_minute_re_run_an_audit_three_times() {
    let (bound, released) = ChurnBound::new(CHURN_PERIOD);
    let runs: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let recorded = runs.clone();
    tokio::spawn(released.for_each(move |_| {
        if let Ok(mut r) = recorded.lock() {
            r.push(Instant::now());
        }
        std::future::ready(())
    }));
    let a = audit("ns-a", "a");
    let start = Instant::now();
    let mut last_change = start;
    for _ in 0..30 {
        last_change = Instant::now();
        for run in bound.admit(&tenant(), vec![a.clone()], last_change) {
            assert_eq!(run, a);
            if let Ok(mut r) = runs.lock() {
                r.push(last_change);
            }
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    tokio::time::sleep(CHURN_PERIOD * 2).await;
    let runs = runs.lock().map(|r| r.clone()).unwrap_or_default();
    let offsets: Vec<u64> = runs.iter().map(|t| (*t - start).as_secs()).collect();
    assert_eq!(offsets, vec![0, 30, 60], "{offsets:?}");
    assert!(
        runs.last().is_some_and(|t| *t >= last_change),
        "the last change is audited"
    );
}
