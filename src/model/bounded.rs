//! Bounded, clean text for what a KopfAudit's readers see: its status, its Events and
//! its PolicyReport. The strings there come from the cluster and from tenants
//! (exemption annotations of up to 256 KiB, container args, object, finalizer and
//! handler names, log lines), so each passes through [`clean`]: secrets masked, then
//! controls and invisible characters removed, then cut to a byte bound.
//!
//! The bounds keep a full status far below etcd's 1.5 MiB request limit with every
//! list at its maximum: 50 findings of at most about 4 KiB (name, message, evidence),
//! 20 targets of at most about 4 KiB (five names and [`MAX_LISTED`] namespaces), 50
//! skipped checks of under 1 KiB and a dozen conditions of about 1 KiB come to about
//! 320 KiB of text; twice that if every character needed a JSON escape, with the
//! KopfAudit's own annotations (at most 256 KiB) on top, still leaves over a third of
//! the limit free (a test in the evaluate layer builds that status).

/// Longest name-like field: a Deployment, container, ServiceAccount or peering name, a
/// namespace or namespace pattern. The API's own bound on object names.
pub(crate) const MAX_NAME_BYTES: usize = 253;

/// Longest reason of a skipped check: an exemption's reason is a sentence or two for
/// the people reading the status; a longer annotation is cut.
pub(crate) const MAX_REASON_BYTES: usize = 512;

/// Longest given reason quoted inside a refusal, which has words of its own to fit
/// under [`MAX_REASON_BYTES`].
pub(crate) const MAX_QUOTED_REASON_BYTES: usize = 256;

/// Longest finding message. The longest the checks write, with five object names,
/// stays under it; only tenant-sized names or lists are cut.
pub(crate) const MAX_MESSAGE_BYTES: usize = 2048;

/// Longest finding evidence: three quoted log lines of 240 characters and a pod name.
pub(crate) const MAX_EVIDENCE_BYTES: usize = 1536;

/// Longest condition message: a sentence, and an API error or a target's name in it.
pub(crate) const MAX_CONDITION_MESSAGE_BYTES: usize = 1024;

/// Longest Event note: the API refuses notes over 1 KiB; keep under it.
pub(crate) const MAX_NOTE_BYTES: usize = 1000;

/// At most this many items of a list from the cluster (a target's namespaces, an
/// object's finalizers, foreign peers) are shown, then how many more there are.
pub(crate) const MAX_LISTED: usize = 10;

/// What ends text cut to its bound, so that a reader sees it was cut.
pub(crate) const ELLIPSIS: char = '…';

/// `text` made safe and short to show: secrets masked by [`kopf_log::redact`] (which
/// sees the whole text, so that a cut can never leave part of a secret unmasked), then
/// controls (line breaks become spaces) and invisible characters (the bidi controls
/// U+202A-U+202E, U+2066-U+2069, U+200E, U+200F and U+061C, zero widths and every other
/// format character, [`kopf_log::is_invisible`]) removed, then trimmed and cut at a
/// character boundary to at most `max_bytes` bytes, ending in [`ELLIPSIS`] when cut.
pub(crate) fn clean(text: &str, max_bytes: usize) -> String {
    cut(visible(&kopf_log::redact(text), false).trim(), max_bytes)
}

/// Like [`clean`], but line breaks are kept: a finding's message carries the RBAC rule
/// to paste, as YAML lines, and its evidence a traceback's last lines.
pub(crate) fn clean_lines(text: &str, max_bytes: usize) -> String {
    cut(visible(&kopf_log::redact(text), true).trim(), max_bytes)
}

/// A name the API validated (a Deployment's, a container's, a ServiceAccount's) as
/// status shows it: like [`clean`], but not redacted. It identifies an object (findings
/// are merged by their target's name, the PolicyReport points at it), and a mask would
/// make it point nowhere; the API allows only letters, digits, `-` and `.` in it.
pub(crate) fn clean_name(name: &str) -> String {
    cut(visible(name, false).trim(), MAX_NAME_BYTES)
}

/// `text` without invisible characters, its controls made spaces (but `\n` when
/// `keep_lines`).
fn visible(text: &str, keep_lines: bool) -> String {
    text.chars()
        .filter(|c| !kopf_log::is_invisible(*c))
        .map(|c| match c {
            '\n' if keep_lines => c,
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

/// `text` cut at a character boundary to at most `max_bytes` bytes, ending in
/// [`ELLIPSIS`] when cut.
fn cut(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let Some(mut end) = max_bytes.checked_sub(ELLIPSIS.len_utf8()) else {
        return String::new();
    };
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = text[..end].trim_end().to_string();
    out.push(ELLIPSIS);
    out
}

/// The first `max_items` of `items`, each [`clean`] to `max_item_bytes`, and then
/// `… and K more` when there were more: a list from the cluster shown in status.
pub(crate) fn clean_list(items: &[String], max_items: usize, max_item_bytes: usize) -> Vec<String> {
    let mut out: Vec<String> = items
        .iter()
        .take(max_items)
        .map(|item| clean(item, max_item_bytes))
        .collect();
    let more = items.len().saturating_sub(max_items);
    if more > 0 {
        out.push(format!("{ELLIPSIS} and {more} more"));
    }
    out
}

/// `a, b, c and K more` (with `separator` between items): at most `max_items` of
/// `items` named in a message, so that a list from the cluster (finalizers, peers)
/// cannot crowd out the rest of it. The message as a whole is [`clean`]ed where it
/// reaches status.
pub(crate) fn listed<S: AsRef<str>>(items: &[S], separator: &str, max_items: usize) -> String {
    let shown: Vec<&str> = items.iter().take(max_items).map(AsRef::as_ref).collect();
    let mut out = shown.join(separator);
    let more = items.len().saturating_sub(max_items);
    if more > 0 {
        out.push_str(&format!(" and {more} more"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bidi controls that reorder what a reader sees.
    const BIDI: [char; 12] = [
        '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}',
        '\u{2068}', '\u{2069}', '\u{200E}', '\u{200F}', '\u{061C}',
    ];

    #[test]
    fn a_huge_reason_comes_out_bounded_redacted_and_without_bidi_controls() {
        let mut reason = String::from("legacy \u{202E}exemption\u{2066} password=hunter2 ");
        while reason.len() < 200 * 1024 {
            reason.push_str("ab\u{202E}cd\u{200F}\u{0007}\n é漢 ");
        }
        reason.push_str(" token=hunter2");
        let out = clean(&reason, MAX_REASON_BYTES);
        assert!(out.len() <= MAX_REASON_BYTES, "{}", out.len());
        assert!(out.ends_with(ELLIPSIS), "{out}");
        assert!(!out.contains("hunter2"), "{out}");
        assert!(out.contains(kopf_log::MASK), "{out}");
        assert!(!out.chars().any(|c| BIDI.contains(&c)), "{out:?}");
        assert!(!out.chars().any(char::is_control), "{out:?}");
        assert!(out.starts_with("legacy exemption password="), "{out}");
    }

    #[test]
    fn a_secret_across_the_bound_is_masked_before_the_cut() {
        // Cut first, `password=hun` would leave a part of the secret; redacted first,
        // nothing of it remains.
        let text = format!("{}password=hunter2", "x ".repeat(100));
        let out = clean(&text, 215);
        assert!(!out.contains("hun"), "{out}");
    }

    #[test]
    fn every_bidi_control_and_format_character_is_removed() {
        let text: String = BIDI
            .iter()
            .chain(['\u{200B}', '\u{FEFF}', '\u{E0041}'].iter())
            .flat_map(|c| ['a', *c])
            .collect();
        assert_eq!(clean(&text, 1024), "a".repeat(15));
    }

    #[test]
    fn short_clean_text_is_unchanged_and_cutting_respects_characters() {
        assert_eq!(
            clean("CPU limits are cluster policy", 64),
            "CPU limits are cluster policy"
        );
        assert_eq!(clean("  line\none\r\n", 64), "line one");
        let cut = clean(&"漢".repeat(100), 10);
        assert_eq!(cut, "漢漢…");
        assert!(cut.len() <= 10);
        assert_eq!(clean("abc", 2), "");
    }

    #[test]
    fn messages_keep_their_lines_and_lose_the_other_controls() {
        let message = "Add to its Role:\n- apiGroups: [\"\"]\n  verbs: [create]\r\u{202e}\u{7}";
        let out = clean_lines(message, 1024);
        assert_eq!(
            out,
            "Add to its Role:\n- apiGroups: [\"\"]\n  verbs: [create]"
        );
        assert!(!clean(message, 1024).contains('\n'));
    }

    #[test]
    fn cleaning_again_changes_nothing() {
        let text = format!("a\u{202E} password=hunter2 {}", "word ".repeat(200));
        let once = clean(&text, MAX_REASON_BYTES);
        assert_eq!(clean(&once, MAX_REASON_BYTES), once);
    }

    #[test]
    fn names_are_bounded_and_visible_but_never_masked() {
        let hashed = "op.0123456789abcdef0123456789abcdef";
        assert_eq!(clean_name(hashed), hashed);
        assert_ne!(
            clean(hashed, MAX_NAME_BYTES),
            hashed,
            "a hex run is masked in text"
        );
        assert_eq!(clean_name("o\u{202E}p\n"), "op");
        assert!(clean_name(&"a".repeat(1000)).len() <= MAX_NAME_BYTES);
    }

    #[test]
    fn a_thousand_namespaces_are_listed_as_ten_and_a_count() {
        let namespaces: Vec<String> = (0..1000).map(|i| format!("team-{i}")).collect();
        let shown = clean_list(&namespaces, MAX_LISTED, MAX_NAME_BYTES);
        assert_eq!(shown.len(), MAX_LISTED + 1);
        assert_eq!(shown[0], "team-0");
        assert_eq!(shown[MAX_LISTED], "… and 990 more");
        let long = clean_list(&["n".repeat(100 * 1024)], MAX_LISTED, MAX_NAME_BYTES);
        assert!(long[0].len() <= MAX_NAME_BYTES);
        assert_eq!(
            clean_list(&namespaces[..2], MAX_LISTED, MAX_NAME_BYTES).len(),
            2
        );
    }

    #[test]
    fn listed_names_at_most_the_bound_and_counts_the_rest() {
        let finalizers: Vec<String> = (0..500).map(|i| format!("example.com/f{i}")).collect();
        assert_eq!(
            listed(&finalizers, ", ", 2),
            "example.com/f0, example.com/f1 and 498 more"
        );
        assert_eq!(listed(&finalizers[..1], "; ", 2), "example.com/f0");
    }
}
