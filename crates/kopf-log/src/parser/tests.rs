use super::*;

/// The buffer of an unterminated line never holds more than the bound, and
/// its allocation stays within twice the bound, however long the line.
#[test]
fn the_carry_buffer_is_bounded() {
    let mut p = Parser::default();
    let mut out: Vec<Record> = Vec::new();
    let chunk = vec![b'x'; 3000];
    for _ in 0..(10 << 20) / chunk.len() {
        p.push_chunk(&chunk, &mut out);
        assert!(p.carry.len() <= MAX_BUFFERED_LINE_BYTES);
        assert!(p.carry.capacity() <= 2 * MAX_BUFFERED_LINE_BYTES);
    }
    assert!(p.carry_dropped);
    p.push_chunk(b"\nnext\n", &mut out);
    assert!(p.carry.is_empty() && !p.carry_dropped);
    out.extend(p.finish());
    assert_eq!(out.len(), 2);
    assert!(out[0].truncated && !out[1].truncated);
    assert_eq!(out[1].message, "next");
}

/// Parses `lines`, one at a time, then finishes.
fn parse_lines(lines: &[&str]) -> Vec<Record> {
    let mut p = Parser::default();
    let mut out: Vec<Record> = lines
        .iter()
        .filter_map(|l| p.push_line(l.as_bytes()))
        .collect();
    while let Some(r) = p.finish() {
        out.push(r);
    }
    out
}

/// The lines of a PEM block that an earlier traceback line opened are
/// masked whole, up to the `-----END` marker; the lines after it are not.
#[test]
fn a_pem_block_in_a_traceback_is_masked_across_its_lines() {
    let out = parse_lines(&[
        "[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] [ns/n] Handler 'x' failed with an exception and will try again in 60 seconds: bad key",
        "Traceback (most recent call last):",
        "  File \"/app/op.py\", line 7, in x",
        "ValueError: bad key -----BEGIN PRIVATE KEY-----",
        "MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF",
        "Zq7Lw2Nx",
        "Zq7L -----END PRIVATE KEY----- and more",
        "  after the block",
    ]);
    assert_eq!(
        out[0].traceback,
        [
            "Traceback (most recent call last):",
            "  File \"/app/op.py\", line 7, in x",
            "ValueError: bad key -----BEGIN PRIVATE KEY-----",
            "***",
            "***",
            "***-----END PRIVATE KEY----- and more",
            "  after the block",
        ]
    );
}

/// A line cut at the bound ends at its last whole word: the word the cut
/// split (here a URL's password before its `@`) is not kept.
#[test]
fn a_line_cut_at_the_bound_ends_at_its_last_whole_word() {
    let head = "[ns/n] Handler 'x' failed temporarily: cannot fetch ";
    let line = format!("{head}https://deploy:S3cretPassw0rdS3cretPassw0rd@registry/v2/\n");
    let mut p = Parser::new(ParserOptions {
        max_line_bytes: head.len() + 20,
        ..ParserOptions::default()
    });
    let mut out: Vec<Record> = Vec::new();
    p.push_chunk(line.as_bytes(), &mut out);
    out.extend(p.finish());
    assert!(out[0].truncated);
    assert_eq!(
        out[0].message,
        "Handler 'x' failed temporarily: cannot fetch "
    );
}

/// An input cut short (a log read bounded by `limitBytes`) cuts its
/// unterminated last line like the bound does; a terminated one is whole.
#[test]
fn an_input_cut_short_ends_at_its_last_whole_word() {
    let read = "[ns/n] Handler 'x' failed temporarily: boom\n[ns/n] Handler 'x' failed temporarily: cannot fetch https://deploy:S3cr";
    let mut p = Parser::default();
    let mut out: Vec<Record> = Vec::new();
    p.push_chunk(read.as_bytes(), &mut out);
    p.input_cut_short();
    while let Some(r) = p.finish() {
        out.push(r);
    }
    assert_eq!(out.len(), 2);
    assert!(!out[0].truncated && out[1].truncated);
    assert_eq!(
        out[1].message,
        "Handler 'x' failed temporarily: cannot fetch "
    );
    assert_eq!(p.stats().cut_lines, 1);
    let mut whole = Parser::default();
    whole.push_chunk(b"[ns/n] Handler 'x' failed temporarily: boom\n", &mut out);
    whole.input_cut_short();
    assert!(whole.finish().is_some_and(|r| !r.truncated));
}

/// kopf started from Python with `logging.basicConfig()`: its records are parsed as
/// kopf's (level, logger, kind, traceback), in both routine modes alike; another
/// program's lines in the same format are not taken for kopf's.
#[test]
fn basic_config_records_of_kopfs_loggers_are_kopf_records() {
    let lines = [
        "INFO:kopf.activities.startup:Activity 'configure' succeeded.",
        "ERROR:kopf.objects:Handler 'reconcile' failed with an exception. Will retry.",
        "Traceback (most recent call last):",
        "  File \"/app/op.py\", line 9, in reconcile",
        "    raise ValueError('boom')",
        "ValueError: boom",
        "INFO:kopf.objects:Handler 'reconcile' succeeded.",
        "INFO:urllib3.connectionpool:Starting new HTTPS connection (1): example.com:443",
    ];
    let records = parse_lines(&lines);
    assert_eq!(records.len(), 4, "{records:#?}");
    let failed = &records[1];
    assert_eq!(failed.format, Some(LogFormat::Basic));
    assert_eq!(failed.level, Some(Level::Error));
    assert_eq!(failed.logger.as_deref(), Some("kopf.objects"));
    assert!(
        matches!(failed.kind, EventKind::HandlerFailedWithException { .. }),
        "{:?}",
        failed.kind
    );
    assert_eq!(failed.traceback.len(), 4, "{:?}", failed.traceback);
    assert_eq!(records[2].message, "Handler 'reconcile' succeeded.");
    assert_eq!(records[2].format, Some(LogFormat::Basic));
    assert_eq!(records[3].format, None, "not kopf's logger");

    // Counting routine records: the failure is still built, the success is not.
    let mut p = Parser::default().with_routine(Routine::Count);
    let mut out: Vec<Record> = Vec::new();
    for l in lines {
        out.extend(p.push_line(l.as_bytes()));
    }
    out.extend(p.finish());
    assert!(
        out.iter().any(
            |r| matches!(r.kind, EventKind::HandlerFailedWithException { .. })
                && r.traceback.len() == 4
        ),
        "{out:#?}"
    );
    assert!(
        !out.iter()
            .any(|r| r.message == "Handler 'reconcile' succeeded."),
        "{out:#?}"
    );
    assert!(p.stats().kopf_lines >= 3, "{:?}", p.stats());
}

/// kopf's loggers in custom `logging.basicConfig(format=...)` formats, as operators
/// started with `kopf.run()` configure them: the level and the `kopf.*` logger are
/// found in the header, the message after them.
#[test]
fn custom_python_formats_of_kopfs_loggers_are_kopf_records() {
    for line in [
        "2026-12-01 10:00:00,000 ERROR [kopf.objects] Handler 'provision' failed permanently: no",
        "2026-12-01 10:00:00,000 [ERROR] kopf.objects: Handler 'provision' failed permanently: no",
        "kopf.objects - ERROR - Handler 'provision' failed permanently: no",
        "ERROR:kopf.objects:Handler 'provision' failed permanently: no",
    ] {
        let r = parse_lines(&[line]);
        assert_eq!(r.len(), 1, "{line}");
        assert_eq!(r[0].format, Some(LogFormat::Basic), "{line}");
        assert_eq!(r[0].level, Some(Level::Error), "{line}");
        assert_eq!(r[0].logger.as_deref(), Some("kopf.objects"), "{line}");
        assert_eq!(
            r[0].message, "Handler 'provision' failed permanently: no",
            "{line}"
        );
        assert!(
            matches!(r[0].kind, EventKind::HandlerFailedPermanently { .. }),
            "{line}: {:?}",
            r[0].kind
        );
    }
    // Not kopf's logger, no level next to it, or `kopf` in a traceback: not kopf's.
    for line in [
        "2026-12-01 10:00:00,000 ERROR [myapp.kopfish] failed",
        "2026-12-01 10:00:00,000 [myapp] kopf.objects is a logger name ERROR later on, far away from it",
        "kopf._core.actions.execution.PermanentError: boom",
        "  File \"/usr/lib/python3/site-packages/kopf/_core/reactor/running.py\", line 1",
    ] {
        let r = parse_lines(&[line]);
        assert_ne!(r[0].format, Some(LogFormat::Basic), "{line}");
    }
}
