//! The benchmark's log generator, shared by `benches/scan.rs` and the
//! equivalence tests (`tests/routine.rs`): deterministic (xorshift seed),
//! three formats in runs of 2000 records, kubelet timestamps, tracebacks,
//! 403 retries, non-kopf noise. See BENCHMARKS.md ("Log scanning").

use kopf_log::LogFormat;
use std::io::Write;

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const HANDLERS: &[&str] = &[
    "create_fn",
    "update_fn",
    "delete_fn",
    "resume_fn",
    "reconcile/sub1",
];
const NAMESPACES: &[&str] = &["default", "team-a", "team-b", "payments", "kube-ops"];

struct Gen {
    rng: Rng,
    t: u64,
}

impl Gen {
    /// One kopf record (possibly with traceback lines) in `fmt`, with the
    /// kubelet's timestamp prefix on every line.
    fn record(&mut self, fmt: LogFormat, out: &mut Vec<u8>) {
        self.t += 1 + self.rng.below(40);
        let ms = self.t;
        let (secs, millis) = (ms / 1000, ms % 1000);
        let (h, m, s) = ((secs / 3600) % 24, (secs / 60) % 60, secs % 60);
        let kubelet = format!("2026-11-30T{h:02}:{m:02}:{s:02}.{millis:03}412345Z ");
        let ns = NAMESPACES[self.rng.below(NAMESPACES.len() as u64) as usize];
        let name = format!("example-{}", self.rng.below(500));
        let handler = HANDLERS[self.rng.below(HANDLERS.len() as u64) as usize];
        let roll = self.rng.below(1000);
        let sa = "system:serviceaccount:operators:kopf-example";
        // (level, logger, object?, message, traceback lines)
        let (level, logger, object, msg, tb): (&str, &str, bool, String, Vec<String>) = match roll {
            0..=599 => ("INFO", "kopf.objects", true, format!("Handler '{handler}' succeeded."), vec![]),
            600..=699 => (
                "INFO",
                "kopf.objects",
                true,
                format!("{} is processed: 1 succeeded; 0 failed.", ["Creation", "Updating", "Resuming"][(roll % 3) as usize]),
                vec![],
            ),
            700..=739 => ("INFO", "kopf.objects", true, "Timer 'tick' succeeded.".to_string(), vec![]),
            740..=779 => (
                "INFO",
                "my_operator.handlers",
                true,
                format!("Reconciled {} replicas for {name}; spec.size={}", self.rng.below(9), self.rng.below(100)),
                vec![],
            ),
            780..=839 => (
                "ERROR",
                "kopf.objects",
                true,
                format!("Handler '{handler}' failed temporarily: Waiting for the database {name}-db to become ready."),
                vec![],
            ),
            840..=859 => (
                "ERROR",
                "kopf.objects",
                true,
                format!("Handler '{handler}' failed with an exception and will try again in 60 seconds: 'spec'"),
                vec![
                    "Traceback (most recent call last):".into(),
                    "  File \"/usr/local/lib/python3.12/site-packages/kopf/_core/actions/execution.py\", line 277, in execute_handler_once".into(),
                    "    result = await invoke_handler(".into(),
                    "  File \"/app/handlers.py\", line 42, in create_fn".into(),
                    "    size = spec['size']".into(),
                    "KeyError: 'spec'".into(),
                ],
            ),
            860..=864 => ("ERROR", "kopf.objects", true, format!("Handler '{handler}' failed permanently: invalid spec.size"), vec![]),
            865..=874 => {
                let (n, of) = (1 + self.rng.below(9), 9);
                let what = if n == of { "escalating".to_string() } else { "will retry".to_string() };
                let m = format!("customresourcedefinitions.apiextensions.k8s.io is forbidden: User \"{sa}\" cannot list resource \"customresourcedefinitions\" in API group \"apiextensions.k8s.io\" at the cluster scope");
                (
                    "ERROR",
                    "kopf._cogs.clients.api",
                    false,
                    format!("Request attempt #{n}/{of} failed; {what}: GET https://10.96.0.1:443/apis/apiextensions.k8s.io/v1/customresourcedefinitions -> APIForbiddenError('{m}', {{'kind': 'Status', 'apiVersion': 'v1', 'metadata': {{}}, 'status': 'Failure', 'message': '{m}', 'reason': 'Forbidden', 'details': {{'group': 'apiextensions.k8s.io', 'kind': 'customresourcedefinitions'}}, 'code': 403}}, status=403)"),
                    vec![],
                )
            }
            875..=884 => (
                "WARNING",
                "kopf.objects",
                true,
                format!("Failed to post an event. Ignoring and continuing. Code: 403. Message: events is forbidden: User \"{sa}\" cannot create resource \"events\" in API group \"\" in the namespace \"{ns}\". Details: {{'kind': 'events'}}Event: type='Warning', reason='Logging', message='Handler failed.'."),
                vec![],
            ),
            885..=889 => (
                "WARNING",
                "kopf.objects",
                true,
                "Merge-patching finished with inconsistencies: (('remove', ('status',), {'create_fn': {'message': 'hello'}}, None),)".into(),
                vec![],
            ),
            890..=894 => (
                "WARNING",
                "kopf._core.engines.peering",
                false,
                "Possibly conflicting operators with the same priority: [Peer(id='other-host', priority=0)].".into(),
                vec![],
            ),
            895..=899 => (
                "DEBUG",
                "kopf.objects",
                true,
                format!("Merge-patching the resource with: {{'metadata': {{'annotations': {{'kopf.zalando.org/{handler}': '{{\"started\":\"2026-11-30T02:41:55.039412+00:00\",\"retries\":1,\"success\":false}}'}}}}}}"),
                vec![],
            ),
            _ => {
                // Not kopf's: prints, Python warnings, aiohttp noise.
                let noise = match roll % 4 {
                    0 => format!("print() from a handler: processing {name} in {ns}"),
                    1 => "/usr/local/lib/python3.12/site-packages/aiohttp/client.py:1025: DeprecationWarning: verify_ssl is deprecated, use ssl=False instead".into(),
                    2 => "Unclosed client session".into(),
                    _ => "client_session: <aiohttp.client.ClientSession object at 0x7f1c2b3d4e50>".into(),
                };
                out.extend_from_slice(kubelet.as_bytes());
                out.extend_from_slice(noise.as_bytes());
                out.push(b'\n');
                return;
            }
        };
        match fmt {
            LogFormat::Full => {
                let lg: String = format!("{logger:<20}").chars().take(20).collect();
                let obj = if object {
                    format!("[{ns}/{name}] ")
                } else {
                    String::new()
                };
                writeln!(out, "{kubelet}[2026-11-30 {h:02}:{m:02}:{s:02},{millis:03}] {lg} [{level:<8}] {obj}{msg}").ok();
                for l in &tb {
                    writeln!(out, "{kubelet}{l}").ok();
                }
            }
            LogFormat::Plain => {
                let obj = if object {
                    format!("[{ns}/{name}] ")
                } else {
                    String::new()
                };
                writeln!(out, "{kubelet}{obj}{msg}").ok();
                for l in &tb {
                    writeln!(out, "{kubelet}{l}").ok();
                }
            }
            LogFormat::Basic => {
                // `logging.basicConfig()`: no time, no object prefix.
                writeln!(out, "{kubelet}{level}:{logger}:{msg}").ok();
                for l in &tb {
                    writeln!(out, "{kubelet}{l}").ok();
                }
            }
            LogFormat::Json => {
                let sev = match level {
                    "WARNING" => "warn".to_string(),
                    l => l.to_ascii_lowercase(),
                };
                let mut v = serde_json::json!({
                    "message": msg,
                    "timestamp": format!("2026-11-30T{h:02}:{m:02}:{s:02}.{millis:03}412+00:00"),
                    "severity": sev,
                });
                if !tb.is_empty() {
                    v["exc_info"] = serde_json::Value::String(tb.join("\n"));
                }
                if object {
                    v["object"] = serde_json::json!({
                        "apiVersion": "kopf.dev/v1", "kind": "KopfExample", "name": name,
                        "uid": format!("0d4a4f4e-2f0c-4a53-9d2b-{:012x}", self.rng.below(1 << 40)),
                        "namespace": ns,
                    });
                }
                writeln!(out, "{kubelet}{v}").ok();
            }
        }
    }
}

/// Writes at least `target_bytes` of generated log to `w`.
pub fn generate_into<W: Write>(mut w: W, target_bytes: u64) -> std::io::Result<()> {
    let mut g = Gen {
        rng: Rng(0x5EED_0FC0_FFEE),
        t: 0,
    };
    let mut written = 0u64;
    let mut buf = Vec::with_capacity(1 << 16);
    while written < target_bytes {
        // Pods log in one format; a fleet mixes them: 50% full, 30% json, 20% plain,
        // in runs of 2000 records (one pod's window at a time).
        let fmt = match g.rng.below(10) {
            0..=4 => LogFormat::Full,
            5..=7 => LogFormat::Json,
            _ => LogFormat::Plain,
        };
        for _ in 0..2000 {
            buf.clear();
            g.record(fmt, &mut buf);
            w.write_all(&buf)?;
            written += buf.len() as u64;
        }
    }
    w.flush()
}
