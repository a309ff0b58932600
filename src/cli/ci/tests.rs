use super::*;
use crate::cli::output::{Source, Subject};

/// `report` as lint's results, one subject.
fn lint_results(report: LintReport) -> Results {
    Results {
        source: Source::Lint,
        subjects: vec![Subject {
            name: ".".into(),
            audited: true,
            report,
            ..Subject::default()
        }],
        data: serde_json::Value::Null,
    }
}
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
                insert_before: None,
            },
            LintFinding {
                finding: finding(
                    CheckId::RbacCrdScan,
                    "op",
                    "no list on customresourcedefinitions".into(),
                    None,
                ),
                location: None,
                insert_before: None,
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
fn sarif_output_validates_against_the_sarif_2_1_0_schema() {
    let mut schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../tests/data/sarif-schema-2.1.0.json"))
            .expect("the schema parses");
    // The published schema's one defect: the `language` pattern (of `run` and of
    // `toolComponent`) has a stray `]`, which the meta-schema's regex format refuses.
    // Its intent (`en`, `en-US`) is restored here; lint never writes `language`.
    for definition in ["run", "toolComponent"] {
        let language = &mut schema["definitions"][definition]["properties"]["language"]["pattern"];
        assert_eq!(language, "^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$");
        *language = serde_json::json!("^[a-zA-Z]{2}(-[a-zA-Z]{2})?$");
    }
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let mut full = report();
    full.findings[0].finding.evidence = Some("time.sleep(1)".into());
    full.findings[0].finding.fix = Some("@kopf.on.resume(\"widgets\")\n".into());
    full.findings[0].insert_before = Some("@kopf.on.resume(\"widgets\")\n".into());
    full.findings[1].finding.fix = Some("- apiGroups: [\"\"]\n".into());
    for sarif in [sarif(&LintReport::default()), sarif(&full)] {
        let errors: Vec<String> = validator
            .iter_errors(&sarif)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}", errors.join("\n"));
    }
    // The schema is strict: an unknown property would fail, so the test can fail.
    let mut broken = sarif(&full);
    broken["runs"][0]["unknownProperty"] = serde_json::json!(1);
    assert!(!validator.is_valid(&broken));
}

#[test]
fn a_gitlab_code_quality_report_has_one_located_issue_per_finding() {
    let issues = code_quality(&report());
    let issues = issues.as_array().expect("an array");
    assert_eq!(issues.len(), 2);
    for issue in issues {
        for key in ["description", "check_name", "fingerprint", "severity"] {
            assert!(issue[key].is_string(), "{key} in {issue}");
        }
        assert!(issue["location"]["path"].is_string());
        assert!(issue["location"]["lines"]["begin"].as_u64().expect("line") >= 1);
    }
    assert_eq!(issues[0]["severity"], "major");
    assert_eq!(issues[1]["severity"], "critical");
}

#[test]
fn junit_has_a_test_case_per_check_failed_by_its_findings_and_escaped() {
    let mut r = report();
    r.findings[0].finding.message = "calls <time.sleep> & \"blocks\"".into();
    let xml = junit(&lint_results(r));
    assert!(xml.starts_with("<?xml"));
    assert_eq!(xml.matches("<testcase ").count(), CheckId::ALL.len());
    assert_eq!(xml.matches("<failure ").count(), 2);
    assert!(xml.contains(&format!("tests=\"{}\" failures=\"2\"", CheckId::ALL.len())));
    assert!(
        xml.contains("calls &lt;time.sleep&gt; &amp; &quot;blocks&quot;"),
        "{xml}"
    );
    assert!(xml.contains("op.py:20: "));
    assert!(!xml.contains("<time.sleep>"));
}

#[test]
fn a_live_audits_status_gives_the_same_findings_to_the_ci_formats() {
    let status = crate::api::KopfAuditStatus {
        findings: report().findings.into_iter().map(|f| f.finding).collect(),
        ..Default::default()
    };
    let live = from_status(&status);
    assert_eq!(live.findings.len(), 2);
    assert!(live.findings.iter().all(|f| f.location.is_none()));
    let sarif = sarif(&live);
    assert_eq!(
        sarif["runs"][0]["results"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(junit(&lint_results(live)).matches("<failure ").count(), 2);
}

#[test]
fn a_mechanical_fix_is_shown_and_an_insertion_becomes_a_sarif_fix() {
    let mut r = report();
    let decorator = "@kopf.on.resume(\"kopf.dev\", \"v1\", \"widgets\")\n";
    r.findings[0].finding.fix = Some(decorator.into());
    r.findings[0].insert_before = Some(decorator.into());
    r.findings[1].finding.fix = Some("- apiGroups: [apiextensions.k8s.io]\n".into());
    let out = sarif(&r);
    let results = &out["runs"][0]["results"];
    let fix = &results[0]["fixes"][0]["artifactChanges"][0];
    assert_eq!(fix["artifactLocation"]["uri"], "op.py");
    let replacement = &fix["replacements"][0];
    assert_eq!(replacement["deletedRegion"]["startLine"], 20);
    assert_eq!(
        replacement["deletedRegion"]["startColumn"], replacement["deletedRegion"]["endColumn"],
        "an insertion deletes nothing"
    );
    assert_eq!(replacement["insertedContent"]["text"], decorator);
    assert!(
        results[1].get("fixes").is_none(),
        "a fix with no place to insert is text only"
    );
    assert!(
        results[1]["message"]["markdown"]
            .as_str()
            .is_some_and(|m| m.contains("```\n- apiGroups: [apiextensions.k8s.io]")),
        "{}",
        results[1]["message"]
    );
    assert_eq!(json(&r)["findings"][0]["fix"], decorator);
}

#[test]
fn junit_has_a_suite_per_audited_operator() {
    let mut results = lint_results(report());
    results.source = Source::Report;
    let mut second = results.subjects[0].clone();
    second.name = "team-b/op".into();
    second.report.findings.truncate(1);
    results.subjects.push(second);
    let xml = junit(&results);
    assert_eq!(xml.matches("<testsuite ").count(), 2);
    assert!(
        xml.contains("<testsuite name=\"kopf-audit report team-b/op\""),
        "{xml}"
    );
    assert!(
        xml.contains(&format!(
            "<testsuites name=\"kopf-audit report\" tests=\"{}\" failures=\"3\">",
            2 * CheckId::ALL.len()
        )),
        "{xml}"
    );
    let merged = results.merged();
    assert_eq!(merged.findings.len(), 3);
    assert!(merged.findings[2].finding.target.starts_with("team-b/op: "));
}
