use super::*;
use crate::cli::results::{Source, Subject, report_of_status};

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
use crate::model::source::{Location, Unread};

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
    // Hostile text everywhere and inputs not read, as `-o sarif` prints it.
    let hostile = crate::cli::inert::tests::hostile_results();
    let printed = crate::cli::output::render(&hostile, crate::cli::output::Format::Sarif, false)
        .expect("renders");
    let printed: serde_json::Value = serde_json::from_str(&printed).expect("JSON");
    assert_eq!(
        printed["runs"][0]["invocations"][0]["executionSuccessful"],
        false
    );
    for sarif in [sarif(&LintReport::default()), sarif(&full), printed] {
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
    let live = report_of_status(&status);
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
            "<testsuites name=\"kopf-audit report\" tests=\"{}\" failures=\"3\" errors=\"0\">",
            2 * CheckId::ALL.len()
        )),
        "{xml}"
    );
    let merged = results.merged();
    assert_eq!(merged.findings.len(), 3);
    assert!(merged.findings[2].finding.target.starts_with("team-b/op: "));
}

/// The `uri` of the first result's location for a finding in `file`.
fn uri_of(file: &str) -> serde_json::Value {
    let mut r = report();
    r.findings[0].location = Some(Location::new(file, 1));
    sarif(&r)["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
        ["uri"]
        .clone()
}

#[test]
fn sarif_uris_are_relative_encoded_and_never_leave_the_root() {
    for outside in [
        "../../../../etc/passwd",
        "/etc/passwd",
        "a/../../b",
        "",
        ".",
        "a\\..\\..\\b",
        "C:/Windows/x.py",
        "op\0.py",
        "op\n::error::x.py",
        "op\u{202E}yp.exe",
    ] {
        assert_eq!(uri_of(outside), ".", "{outside:?}");
    }
    assert_eq!(uri_of("dir/file name#1.py"), "dir/file%20name%231.py");
    assert_eq!(uri_of("é.py"), "%C3%A9.py");
    assert_eq!(uri_of("./a//b/../c.py"), "a/c.py", "normalised");
    assert_eq!(uri_of("a-b_c~d.py"), "a-b_c~d.py", "unreserved kept");
    assert_eq!(uri_of("%41?x=1"), "%2541%3Fx%3D1");
}

#[test]
fn a_fix_for_a_file_outside_the_root_is_dropped_and_one_inside_is_encoded() {
    let mut r = report();
    r.findings[0].insert_before = Some("x\n".into());
    r.findings[0].location = Some(Location::new("../outside.py", 3));
    assert!(sarif(&r)["runs"][0]["results"][0].get("fixes").is_none());
    r.findings[0].location = Some(Location::new("my dir/é.py", 3));
    let out = sarif(&r);
    assert_eq!(
        out["runs"][0]["results"][0]["fixes"][0]["artifactChanges"][0]["artifactLocation"]["uri"],
        "my%20dir/%C3%A9.py"
    );
}

#[test]
fn code_quality_paths_are_plain_and_inside_the_root() {
    let mut r = report();
    for (file, path) in [
        ("/etc/passwd", "."),
        ("../../x", "."),
        ("a/./b/../c.py", "a/c.py"),
        ("my dir/é.py", "my dir/é.py"),
    ] {
        r.findings[0].location = Some(Location::new(file, 1));
        assert_eq!(code_quality(&r)[0]["location"]["path"], path, "{file}");
    }
}

/// A report with two inputs that were not read, one of them outside the root.
fn unread_report() -> LintReport {
    LintReport {
        unread: vec![
            Unread {
                path: "charts/op".into(),
                why: "helm template failed: exit 1".into(),
            },
            Unread {
                path: "/etc/passwd".into(),
                why: "not inside".into(),
            },
        ],
        ..report()
    }
}

#[test]
fn unread_inputs_fail_the_sarif_invocation_with_a_notification_each() {
    let out = sarif(&unread_report());
    let invocation = &out["runs"][0]["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], false);
    let notes = invocation["toolExecutionNotifications"]
        .as_array()
        .expect("notifications");
    assert_eq!(notes.len(), 2);
    assert_eq!(notes[0]["level"], "error");
    assert_eq!(
        notes[0]["message"]["text"],
        "charts/op could not be read: helm template failed: exit 1"
    );
    let uri = |n: &serde_json::Value| {
        n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].clone()
    };
    assert_eq!(uri(&notes[0]), "charts/op");
    assert_eq!(uri(&notes[1]), ".");
    let read = sarif(&report());
    assert_eq!(
        read["runs"][0]["invocations"][0]["executionSuccessful"],
        true
    );
}

#[test]
fn unread_inputs_are_in_json_junit_and_code_quality() {
    let r = unread_report();
    let j = json(&r);
    assert_eq!(j["unread"][0]["path"], "charts/op");
    assert_eq!(j["unread"][1]["why"], "not inside");
    let issues = code_quality(&r);
    let blockers: Vec<&serde_json::Value> = issues
        .as_array()
        .expect("array")
        .iter()
        .filter(|i| i["check_name"] == UNREAD_CHECK)
        .collect();
    assert_eq!(blockers.len(), 2);
    assert_eq!(blockers[0]["severity"], "blocker");
    assert_eq!(blockers[0]["location"]["path"], "charts/op");
    assert_eq!(blockers[1]["location"]["path"], ".");
    assert_ne!(blockers[0]["fingerprint"], blockers[1]["fingerprint"]);
    let xml = junit(&lint_results(r));
    assert_eq!(xml.matches("<error ").count(), 2, "{xml}");
    assert!(
        xml.contains("<testcase classname=\"kopf-audit\" name=\"kopf-audit.unread\">"),
        "{xml}"
    );
    assert!(
        xml.contains(&format!(
            "tests=\"{}\" failures=\"2\" errors=\"2\">",
            CheckId::ALL.len() + 1
        )),
        "{xml}"
    );
}

#[test]
fn xml_escapes_every_character_xml_forbids() {
    assert_eq!(
        xml("a\0b\u{FFFF}c\u{FFFE}d\u{1b}"),
        "a b\u{FFFD}c\u{FFFD}d "
    );
    assert_eq!(xml("\u{10FFFF}\u{E000}\t\n"), "\u{10FFFF}\u{E000}\t\n");
}
