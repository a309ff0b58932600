use super::*;

/// serde's reading of a JSON line, as `Parser::json` does it.
fn by_serde(text: &str, refkey: &str) -> Option<JsonFields> {
    let mut de = serde_json::Deserializer::from_str(text);
    let f = LineSeed { refkey }.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(f)
}

/// Mutants of kopf's JSON lines: whatever [`quick_fields`] reads, serde
/// reads the same.
#[test]
fn quick_fields_read_what_serde_reads() {
    let bases = [
        r#"{"message": "Handler 'x' failed temporarily: boom", "object": {"apiVersion": "v1", "kind": "K", "name": "n", "namespace": "ns", "uid": "u"}, "severity": "error", "timestamp": "2026-11-30T00:00:00.017412+00:00"}"#,
        r#"{"levelname":"WARNING","name":"kopf.objects","message":"m","ref":{"name":"a","namespace":null,"kind":["x"]},"time":"2026-11-30 00:00:00,017","o":{"name":"z"}}"#,
        "{ \"message\" : \"caf\u{e9}\" , \"object\" : { \"name\" : \"\" , \"namespace\" : \"\" } , \"level\" : \"info\" , \"logger\" : null }  ",
    ];
    let alphabet: Vec<char> = "{}[]:,\\\" tfnrulase0x\u{e9}".chars().collect();
    let mut next = crate::test_rng(0x2545_f491_4f6c_dd1d);
    let (mut quick, mut left) = (0, 0);
    // One cache for all lines, as in a parser.
    let hours = HourCache::default();
    for round in 0..40_000 {
        let mut l: Vec<char> = bases[round % bases.len()].chars().collect();
        let edits = next() % 3;
        crate::test_mutate(&mut l, &alphabet, edits, &mut next);
        let text: String = l.into_iter().collect();
        let refkey = if round % 2 == 0 { "ref" } else { "object" };
        match quick_fields(&text, refkey, &hours) {
            Some(f) => {
                quick += 1;
                assert_eq!(Some(f), by_serde(&text, refkey), "{text}");
            }
            None => left += 1,
        }
    }
    // Both sides of the boundary were exercised.
    assert!(quick > 5_000 && left > 5_000, "{quick} {left}");
}
