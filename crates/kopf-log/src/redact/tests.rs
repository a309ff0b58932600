use super::*;

#[test]
fn masks_secrets() {
    let cases = [
        (
            "Authorization: Bearer abc.def-ghi",
            "Authorization: Bearer ***",
        ),
        (
            "headers={'Authorization': 'Bearer abc123'}",
            "headers={'Authorization': 'Bearer ***'}",
        ),
        ("password=hunter2 user=bob", "password=*** user=bob"),
        ("db_password: s3cr3t, host: x", "db_password: ***, host: x"),
        (
            "{\"token\": \"abc\\\"def\", \"a\": 1}",
            "{\"token\": \"***\", \"a\": 1}",
        ),
        ("https://u:pw@example.com/x", "https://u:***@example.com/x"),
        (
            "got eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl here",
            "got *** here",
        ),
        ("key ghp_abcdefghijklmnopqrstuvwx", "key ***"),
        ("?token=abc&x=1", "?token=***&x=1"),
        ("X-Auth-Token: abc", "X-Auth-Token: ***"),
        (
            "Handler 'create_secret' failed temporarily: boom",
            "Handler 'create_secret' failed temporarily: boom",
        ),
        ("nothing to see", "nothing to see"),
        ("", ""),
        ("token=", "token="),
        ("päss wörd secret=ü€", "päss wörd secret=***"),
    ];
    for (input, want) in cases {
        assert_eq!(redact(input), want, "{input}");
    }
}

#[test]
fn excerpts() {
    assert_eq!(excerpt("a\n\tb  \x1b[31mred\x1b[0m", 100), "a b red");
    assert_eq!(excerpt("abcdef", 4), "abc…");
    assert_eq!(excerpt("password=x", 0), "");
    assert_eq!(excerpt("ééééé", 3), "éé…");
}

#[test]
fn strips_ansi() {
    assert_eq!(strip_ansi("\x1b[1;31mERROR\x1b[0m x"), "ERROR x");
    assert_eq!(strip_ansi("\x1b]0;title\x07x"), "x");
    assert_eq!(strip_ansi("\x1b"), "");
    assert_eq!(strip_ansi("\x1b["), "");
}

#[test]
fn the_invisible_table_is_sorted() {
    assert!(text::INVISIBLE.windows(2).all(|w| w[0].1 < w[1].0));
    assert!(text::INVISIBLE.iter().all(|(lo, hi)| lo <= hi));
}

/// kopf's own lines, and the names, paths and ids in them, are not masked.
#[test]
fn kopf_lines_are_left_alone() {
    for line in [
        "Request attempt #1/9 failed; will retry: GET https://10.96.0.1:443/apis/apiextensions.k8s.io/v1/customresourcedefinitions -> APIForbiddenError('customresourcedefinitions.apiextensions.k8s.io is forbidden: User \"system:serviceaccount:kopf-audit-fixtures:operator\" cannot list resource \"customresourcedefinitions\" in API group \"apiextensions.k8s.io\" at the cluster scope', {'kind': 'Status'})",
        "Handler 'create_fn' failed with an exception and will try again in 60 seconds: KeyError: 'spec'",
        "Failed to post an event. Ignoring and continuing. Code: 403. Message: events is forbidden: User \"system:serviceaccount:ns:sa\" cannot create resource \"events\" in API group \"\" in the namespace \"ns\".",
        "Watcher for kopfexamples.v1.kopf.dev@ns has failed: ('kopfexamples.v1.kopf.dev', 'ns')",
        "Patching failed with inconsistencies: (('remove', ('status', 'token_fn'), {'x': 1}, None),)",
        "  File \"/usr/local/lib/python3.11/site-packages/kopf/_cogs/clients/api.py\", line 96, in request",
        "uid 0b8a2c1e-5d4f-4e3a-9b2c-1a2b3c4d5e6f, pod my-operator-5d8f9c7b6-abcde, rv 123456789012",
        "Timer 'rotate-secret' succeeded.",
        "Handler 'refresh_token' failed temporarily: not yet",
        "Keep-alive in 'default' cluster: ok.",
        "pods is forbidden: User \"system:serviceaccount:sealed-secrets:token-refresher\" cannot list resource \"pods\"",
        // Flags that name no secret, or take no value (psql's `--password` prompts).
        "kopf run --standalone --namespace ops --liveness http://0.0.0.0:8080/healthz /app/operator.py",
        "Command '['psql', '--password', '-h', 'db']' returned non-zero exit status 2.",
        "psql -h db -p 5432 -U app; ssh -p 2222 host",
        "Timer 'key-rotation' succeeded. Daemon 'shpat-sync' and 'dop-v1-cleanup' are running.",
        "hf_hub_download_with_a_rather_long_name failed; dapi-gateway-5d8f9c7b6-abcde restarted",
    ] {
        assert_eq!(redact(line), line);
    }
}

#[test]
fn masks_each_shape() {
    let cases = [
        // PEM blocks, labels kept.
        (
            "x -----BEGIN RSA PRIVATE KEY----- MIIEabc -----END RSA PRIVATE KEY----- y",
            "x -----BEGIN RSA PRIVATE KEY-----***-----END RSA PRIVATE KEY----- y",
        ),
        (
            "-----BEGIN PRIVATE KEY-----abc",
            "-----BEGIN PRIVATE KEY-----***",
        ),
        // The tail of a block whose head was cut away (kopf's `...` in an Event).
        (
            "... key tail: ZmFrZQ==\nMIIEabc\n-----END PRIVATE KEY----- y",
            "... key tail: ***-----END PRIVATE KEY----- y",
        ),
        (
            "...q8Xh3kLm9P\\n-----END EC PRIVATE KEY-----\\n')",
            "...***-----END EC PRIVATE KEY-----\\n')",
        ),
        (
            "a -----END X----- b -----BEGIN X----- c -----END X----- d -----END X-----",
            "***-----END X----- b -----BEGIN X-----***-----END X----- ***-----END X-----",
        ),
        ("[ns/name] -----END X-----", "[ns/name] -----END X-----"),
        // Keys.
        ("{'tls.key': 'abc'}", "{'tls.key': '***'}"),
        ("{b'password': b'abc'}", "{b'password': b'***'}"),
        (
            "{\\\"password\\\": \\\"a b\\\", \\\"u\\\": 1}",
            "{\\\"password\\\": \\\"***\\\", \\\"u\\\": 1}",
        ),
        ("password: horse battery staple", "password: ***"),
        ("password: horse, battery, staple", "password: ***"),
        ("pwd: x, host: y", "pwd: ***, host: y"),
        (
            "AccountKey=abc+/=;EndpointSuffix=core",
            "AccountKey=***;EndpointSuffix=core",
        ),
        ("?sv=1&sig=abc%2B&x=1", "?sv=1&sig=***&x=1"),
        ("token=password: x", "token=***"),
        (
            "'auths': {'r': {'auth': 'dXNlcg=='}}",
            "'auths': {'r': {'auth': '***'}}",
        ),
        ("KeyError: 'x'", "KeyError: 'x'"),
        (
            "ConnectionKey(host='h', port=443, proxy_auth=None, proxy=None)",
            "ConnectionKey(host='h', port=443, proxy_auth=None, proxy=None)",
        ),
        (
            "proxy_auth=hunter2, proxy=None",
            "proxy_auth=***, proxy=None",
        ),
        ("a::b, key::value", "a::b, key::value"),
        // URLs.
        ("https://user:p@ss@host/x", "https://user:***@host/x"),
        ("redis://:pw@host", "redis://:***@host"),
        ("https://host/path@v2", "https://host/path@v2"),
        // Tokens and encoded runs.
        ("id AKIAIOSFODNN7EXAMPLE.", "id ***."),
        ("xAKIAIOSFODNN7EXAMPLE", "***"),
        ("k wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "k ***"),
        ("v cGFzc3dvcmQ= ok", "v *** ok"),
        ("sha 9f8e7d6c5b4a39281706f5e4d3c2b1a0 ok", "sha *** ok"),
        ("LS0tLS1CRUdJTg", "***"),
        (
            "task-runner-0123456789abcdefghij",
            "task-runner-0123456789abcdefghij",
        ),
        ("sk-0123456789abcdefghijABCD", "***"),
        ("version=3", "version=3"),
        // Flags.
        (
            "pg_dump --host db --password Pw0rd --user app",
            "pg_dump --host db --password *** --user app",
        ),
        (
            "Command '['psql', '--password', 'x']' returned",
            "Command '['psql', '--password', '***']' returned",
        ),
        (
            "(\"psql\", \"--token\", \"it's\")",
            "(\"psql\", \"--token\", \"***\")",
        ),
        ("[b'--password', b'x']", "[b'--password', b'***']"),
        ("--token 'a b' -v", "--token '***' -v"),
        ("keytool -storepass changeit", "keytool -storepass ***"),
        (
            "[\\\"--token\\\", \\\"x\\\"]",
            "[\\\"--token\\\", \\\"***\\\"]",
        ),
        ("--api-key", "--api-key"),
        // Vendors' tokens with hex bodies.
        (
            "dop_v1_4f2a9c8e7b6d5a4c3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d.",
            "***.",
        ),
        ("(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)", "(***)"),
        ("key-4f2a9c8e7b6d5a4c3e2f1a0b9c8d7e6f", "***"),
        (
            "monkey-4f2a9c8e7b6d5a4c3e2f1a0b9c8d7e6f",
            "monkey-4f2a9c8e7b6d5a4c3e2f1a0b9c8d7e6f",
        ),
    ];
    for (input, want) in cases {
        assert_eq!(redact(input), want, "{input}");
    }
}

#[test]
fn spans_merge() {
    assert_eq!(apply("abcdef", vec![(1, 3), (2, 4), (4, 5)]), "a***f");
    assert_eq!(apply("abcdef", vec![(0, 1), (5, 6)]), "***bcde***");
    assert_eq!(apply("ééé", vec![(1, 3)]), "***é");
}
