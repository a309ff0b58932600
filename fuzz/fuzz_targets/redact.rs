//! `redact` and `excerpt` on arbitrary text: no panics, bounded output,
//! plain text out; and the redaction property: a line of the secrets corpus
//! (`crates/kopf-log/tests/data/secrets/corpus.txt`) put between arbitrary
//! text keeps every secret masked.
#![no_main]

use libfuzzer_sys::fuzz_target;

const CORPUS: &str = include_str!("../../crates/kopf-log/tests/data/secrets/corpus.txt");

/// The corpus cases: (text with the ⟦⟧ markers removed, the marked secrets);
/// one per line, or per run of lines joined by a `⏎` at the end of each but
/// the last.
fn corpus() -> Vec<(String, Vec<String>)> {
    let mut cases = Vec::new();
    let mut joined = String::new();
    for l in CORPUS
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        match l.strip_suffix('⏎') {
            Some(head) => {
                joined.push_str(head);
                joined.push('\n');
            }
            None => {
                joined.push_str(l);
                cases.push(case(&std::mem::take(&mut joined)));
            }
        }
    }
    cases
}

/// A case from its marked text.
fn case(marked: &str) -> (String, Vec<String>) {
    let (mut text, mut secrets, mut rest) = (String::new(), Vec::new(), marked);
    while let Some(open) = rest.find('⟦') {
        text.push_str(&rest[..open]);
        let after = &rest[open + '⟦'.len_utf8()..];
        let close = after.find('⟧').unwrap_or(after.len());
        text.push_str(&after[..close]);
        secrets.push(after[..close].to_string());
        rest = after.get(close + '⟧'.len_utf8()..).unwrap_or("");
    }
    text.push_str(rest);
    (text, secrets)
}

fn alnum(s: &str) -> String {
    s.chars().filter(|c| c.is_alphanumeric()).collect()
}

fn plain(out: &str) -> bool {
    out.chars().all(|c| {
        !(c.is_control() && c != '\n')
            && !matches!(u32::from(c), 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2069 | 0xFEFF)
    })
}

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let r = kopf_log::redact(&s);
    assert!(r.len() <= s.len() * 2 + 8);
    assert!(plain(&r));
    let e = kopf_log::excerpt(&s, 40);
    assert!(e.chars().count() <= 40);
    assert!(plain(&e) && !e.contains('\n'));
    let _ = kopf_log::strip_ansi(&s);
    let _ = kopf_log::parse_forbidden(&s);
    let _ = kopf_log::classify_message(&s);

    // The property: a corpus line between two parts of the input.
    let cases = corpus();
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let (text, secrets) = &cases[usize::from(pick) % cases.len()];
    let rest = String::from_utf8_lossy(rest);
    let cut = (0..=rest.len())
        .rev()
        .find(|&i| rest.is_char_boundary(i) && i <= rest.len() / 2)
        .unwrap_or(0);
    let line = format!("{}{text}{}", &rest[..cut], &rest[cut..]);
    // The letters and digits of the arbitrary text, raw and as plain text:
    // libFuzzer copies what the target compares (the secrets) into its input,
    // and a window the arbitrary text holds is its own, in no secret's context
    // (`...b'p` + the case + `assword': b'x'`), whatever escapes, controls or
    // the case's first bytes join or split around it.
    let arbitrary = [alnum(&rest), alnum(&kopf_log::plain_text(&rest))];
    for out in [kopf_log::redact(&line), kopf_log::excerpt(&line, 240)] {
        for secret in secrets {
            let chars: Vec<char> = secret.chars().collect();
            let windows: Vec<String> = if chars.len() <= 8 {
                vec![secret.clone()]
            } else {
                chars
                    .windows(8)
                    .filter(|w| !w.contains(&'\\'))
                    .map(|w| w.iter().collect())
                    .collect()
            };
            let own = |w: &String| arbitrary.iter().any(|a| a.contains(&alnum(w)));
            for w in windows.iter().filter(|w| !own(w)) {
                assert!(!out.contains(w), "{w:?} of {secret:?} survived in {out:?}");
            }
        }
    }
});
