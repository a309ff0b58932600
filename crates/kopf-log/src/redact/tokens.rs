//! Vendors' token formats: a fixed prefix and a body (`ghp_...`,
//! `dop_v1_...`, `shpat_...`, `AKIA...`), found in one pass over the text
//! whatever the number of formats.

use super::Span;

/// What a token's body is made of.
#[derive(Clone, Copy)]
enum Body {
    /// `A-Za-z0-9-_`: base62 and base64url bodies.
    Word,
    /// `A-Za-z0-9`.
    Alnum,
    /// `A-Z0-9`: AWS access key ids.
    UpperDigits,
    /// `0-9a-fA-F`.
    Hex,
}

impl Body {
    fn has(self, c: u8) -> bool {
        match self {
            Body::Word => c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_'),
            Body::Alnum => c.is_ascii_alphanumeric(),
            Body::UpperDigits => c.is_ascii_uppercase() || c.is_ascii_digit(),
            Body::Hex => c.is_ascii_hexdigit(),
        }
    }
}

/// One vendor's token format.
struct Format {
    prefix: &'static [u8],
    /// The prefix's first three bytes ([`head`]).
    head: u32,
    /// The fewest body characters that make a token (fewer: a word that
    /// happens to start like one).
    min: usize,
    body: Body,
    /// Whether the prefix must start a word: short or common prefixes
    /// (`sk-`, `hf_`, `key-`), so that `task-runner-...` is a name. The
    /// others are found anywhere, even glued to other text.
    word_start: bool,
}

const fn anywhere(prefix: &'static [u8], min: usize, body: Body) -> Format {
    Format {
        prefix,
        head: head(prefix[0], prefix[1], prefix[2]),
        min,
        body,
        word_start: false,
    }
}

const fn word_start(prefix: &'static [u8], min: usize, body: Body) -> Format {
    Format {
        word_start: true,
        ..anywhere(prefix, min, body)
    }
}

/// Three bytes as one number: a position is compared with a prefix by its
/// first three bytes at once.
const fn head(a: u8, b: u8, c: u8) -> u32 {
    u32::from_le_bytes([a, b, c, 0])
}

/// The formats, each prefix 3 bytes or longer (a shorter one does not
/// compile: see [`head`]). The minimums are below the real lengths, so that
/// a token cut short is masked too.
const FORMATS: &[Format] = &[
    // GitHub: classic personal, OAuth, app server-to-server, user, refresh; fine-grained.
    anywhere(b"ghp_", 20, Body::Word),
    anywhere(b"gho_", 20, Body::Word),
    anywhere(b"ghs_", 20, Body::Word),
    anywhere(b"ghu_", 20, Body::Word),
    anywhere(b"ghr_", 20, Body::Word),
    anywhere(b"github_pat_", 20, Body::Word),
    // GitLab: personal, deploy, runner, CI job, pipeline trigger, feed, incoming
    // mail, agent, OAuth application secret, SCIM tokens; runner registration.
    anywhere(b"glpat-", 16, Body::Word),
    anywhere(b"gldt-", 16, Body::Word),
    anywhere(b"glrt-", 16, Body::Word),
    anywhere(b"glcbt-", 16, Body::Word),
    anywhere(b"glptt-", 16, Body::Word),
    anywhere(b"glft-", 16, Body::Word),
    anywhere(b"glimt-", 16, Body::Word),
    anywhere(b"glagent-", 16, Body::Word),
    anywhere(b"gloas-", 16, Body::Word),
    anywhere(b"glsoat-", 16, Body::Word),
    anywhere(b"GR1348941", 16, Body::Word),
    // Slack: bot, user, app-level, refresh, legacy workspace, rotating tokens.
    anywhere(b"xoxb-", 10, Body::Word),
    anywhere(b"xoxp-", 10, Body::Word),
    anywhere(b"xoxa-", 10, Body::Word),
    anywhere(b"xoxr-", 10, Body::Word),
    anywhere(b"xoxs-", 10, Body::Word),
    anywhere(b"xoxe-", 10, Body::Word),
    anywhere(b"xapp-", 10, Body::Word),
    // AWS access key ids (long-lived, temporary).
    anywhere(b"AKIA", 16, Body::UpperDigits),
    anywhere(b"ASIA", 16, Body::UpperDigits),
    // Google: API keys, OAuth access tokens, OAuth client secrets.
    anywhere(b"AIza", 30, Body::Word),
    anywhere(b"ya29.", 20, Body::Word),
    anywhere(b"GOCSPX-", 20, Body::Word),
    // OpenShift OAuth access tokens.
    anywhere(b"sha256~", 20, Body::Word),
    // npm, PyPI.
    anywhere(b"npm_", 30, Body::Word),
    anywhere(b"pypi-", 30, Body::Word),
    // DigitalOcean personal access, OAuth and refresh tokens (64 hex digits).
    anywhere(b"dop_v1_", 16, Body::Word),
    anywhere(b"doo_v1_", 16, Body::Word),
    anywhere(b"dor_v1_", 16, Body::Word),
    // Shopify: admin API access, shared secret, custom app, partner tokens (32 hex digits).
    anywhere(b"shpat_", 16, Body::Word),
    anywhere(b"shpss_", 16, Body::Word),
    anywhere(b"shpca_", 16, Body::Word),
    anywhere(b"shppa_", 16, Body::Word),
    // Stripe secret and restricted keys, webhook signing secrets.
    anywhere(b"sk_live_", 16, Body::Word),
    anywhere(b"sk_test_", 16, Body::Word),
    anywhere(b"rk_live_", 16, Body::Word),
    anywhere(b"rk_test_", 16, Body::Word),
    anywhere(b"whsec_", 16, Body::Word),
    // HashiCorp Vault service, batch and recovery tokens; Terraform Cloud.
    anywhere(b"hvs.", 20, Body::Word),
    anywhere(b"hvb.", 20, Body::Word),
    anywhere(b"hvr.", 20, Body::Word),
    anywhere(b".atlasv1.", 20, Body::Word),
    // Docker Hub, Grafana (service account, cloud), Sentry, Atlassian, Postman,
    // Linear, PlanetScale, Square, Heroku, New Relic, Buildkite, Doppler, age.
    anywhere(b"dckr_pat_", 20, Body::Word),
    anywhere(b"glsa_", 20, Body::Word),
    anywhere(b"glc_", 20, Body::Word),
    anywhere(b"sntrys_", 20, Body::Word),
    anywhere(b"sntryu_", 20, Body::Word),
    anywhere(b"ATATT3", 20, Body::Word),
    anywhere(b"PMAK-", 20, Body::Word),
    anywhere(b"lin_api_", 20, Body::Word),
    anywhere(b"pscale_tkn_", 20, Body::Word),
    anywhere(b"pscale_pw_", 20, Body::Word),
    anywhere(b"pscale_oauth_", 20, Body::Word),
    anywhere(b"sq0atp-", 20, Body::Word),
    anywhere(b"sq0csp-", 20, Body::Word),
    anywhere(b"HRKU-", 20, Body::Word),
    anywhere(b"NRAK-", 20, Body::UpperDigits),
    anywhere(b"bkua_", 20, Body::Word),
    anywhere(b"dp.pt.", 20, Body::Word),
    anywhere(b"dp.st.", 20, Body::Word),
    anywhere(b"AGE-SECRET-KEY-1", 20, Body::UpperDigits),
    // OpenAI-style keys (`sk-proj-...`, `sk-ant-...`), Hugging Face, SendGrid,
    // Fly.io, Netlify.
    word_start(b"sk-", 20, Body::Word),
    word_start(b"hf_", 30, Body::Alnum),
    word_start(b"SG.", 16, Body::Word),
    word_start(b"fo1_", 20, Body::Word),
    word_start(b"nfp_", 20, Body::Word),
    // Hex bodies under short prefixes: Supabase, Databricks, Pulumi, Mailgun.
    word_start(b"sbp_", 32, Body::Hex),
    word_start(b"dapi", 32, Body::Hex),
    word_start(b"pul-", 32, Body::Hex),
    word_start(b"key-", 32, Body::Hex),
];

/// Bits of the filter on the first three bytes of a prefix.
const FILTER_BITS: usize = 4096;

/// The filter's bit for a [`head`].
const fn filter_bit(head: u32) -> usize {
    (head.wrapping_mul(0x9E37_79B1) >> 20) as usize % FILTER_BITS
}

/// A bit per first three bytes of a prefix: most positions of a text are
/// ruled out by one lookup, whatever the number of formats.
const FILTER: [u64; FILTER_BITS / 64] = {
    let mut bits = [0u64; FILTER_BITS / 64];
    let mut i = 0;
    while i < FORMATS.len() {
        let bit = filter_bit(FORMATS[i].head);
        bits[bit / 64] |= 1 << (bit % 64);
        i += 1;
    }
    bits
};

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_')
}

/// The end of the longest token starting at `i` (prefix and body), if any;
/// `at` is the [`head`] there.
fn token_at(b: &[u8], i: usize, at: u32) -> Option<usize> {
    let at_word_start = i == 0 || !is_word_byte(b[i - 1]);
    FORMATS
        .iter()
        .filter(|f| f.head == at && b[i..].starts_with(f.prefix))
        .filter(|f| at_word_start || !f.word_start)
        .filter_map(|f| {
            let body = i + f.prefix.len();
            let len = b[body..].iter().take_while(|&&c| f.body.has(c)).count();
            (len >= f.min).then_some(body + len)
        })
        .max()
}

/// Appends the vendors' tokens of `b` ([`FORMATS`]), prefix included, in
/// one pass: a position is looked at further only when its first three
/// bytes pass the filter.
pub(super) fn vendor_tokens(b: &[u8], spans: &mut Vec<Span>) {
    let mut i = 0;
    while i + 3 <= b.len() {
        let at = head(b[i], b[i + 1], b[i + 2]);
        let bit = filter_bit(at);
        let end = if FILTER[bit / 64] & (1 << (bit % 64)) != 0 {
            token_at(b, i, at)
        } else {
            None
        };
        match end {
            Some(end) => {
                spans.push((i, end));
                // A token's body may hold a prefix again: go on after it.
                i = end;
            }
            None => i += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_is_found() {
        for f in FORMATS {
            let body: Vec<u8> = std::iter::repeat_n(b'A', f.min).collect();
            let text = [b"x ", f.prefix, &body, b" y"].concat();
            let mut spans = Vec::new();
            vendor_tokens(&text, &mut spans);
            assert_eq!(
                spans,
                vec![(2, text.len() - 2)],
                "{}",
                String::from_utf8_lossy(f.prefix)
            );
        }
    }
}
