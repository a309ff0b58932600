use super::*;
use crate::checks::finding;
use crate::model::source::Location;

fn report() -> LintReport {
    LintReport {
        findings: vec![
            LintFinding {
                finding: finding(
                    CheckId::SourceBlockingCall,
                    "op.py:create_fn",
                    "async handler create_fn() calls time.sleep()".into(),
                    None,
                ),
                location: Some(Location::new("op.py", 20)),
            },
            LintFinding {
                finding: finding(
                    CheckId::RbacCrdScan,
                    "op",
                    "no list on customresourcedefinitions".into(),
                    None,
                ),
                location: None,
            },
        ],
        ..LintReport::default()
    }
}

#[test]
fn sarif_has_every_rule_and_a_located_result_per_finding() {
    let sarif = sarif(&report());
    assert_eq!(sarif["version"], "2.1.0");
    let run = &sarif["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().expect("rules");
    assert_eq!(rules.len(), CheckId::ALL.len());
    let results = run["results"].as_array().expect("results");
    assert_eq!(results.len(), 2);
    for r in results {
        let index = r["ruleIndex"].as_u64().expect("index") as usize;
        assert_eq!(rules[index]["id"], r["ruleId"]);
        let region = &r["locations"][0]["physicalLocation"]["region"];
        assert!(region["startLine"].as_u64().expect("line") >= 1);
        assert!(r["partialFingerprints"]["kopfAudit/v1"].is_string());
        assert!(
            rules[index]["helpUri"]
                .as_str()
                .expect("uri")
                .starts_with("https://")
        );
    }
    assert_eq!(results[0]["level"], "warning");
    assert_eq!(
        results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "op.py"
    );
    // A finding no linted file holds points at the root: code scanning drops results
    // without a location.
    assert_eq!(
        results[1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "."
    );
}

#[test]
fn fingerprints_ignore_the_line_but_not_the_finding() {
    let r = report();
    let mut moved = r.findings[0].clone();
    moved.location = Some(Location::new("op.py", 40));
    assert_eq!(fingerprint(&r.findings[0]), fingerprint(&moved));
    assert_ne!(fingerprint(&r.findings[0]), fingerprint(&r.findings[1]));
}

#[test]
fn text_groups_findings_by_file_and_counts_them() {
    let text = text(&report());
    assert!(text.contains("\nop.py\n"), "{text}");
    assert!(text.contains("source.blocking-call"));
    assert!(
        text.contains("2 finding(s): 1 error, 1 warning, 0 info."),
        "{text}"
    );
}
