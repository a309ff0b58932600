use super::*;

/// A file's facts; the test files are all within lint's bounds.
fn read_ok(path: &str, text: &str) -> SourceFacts {
    read(path, text).expect("within lint's bounds")
}

const OPERATOR: &str = r#"
import logging
import time
import kopf
import requests

GROUP = "kopf.dev"
logger = logging.getLogger(__name__)

@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    settings.peering.standalone = True
    settings.posting.level = logging.WARNING

settings = object()
settings.scanning.disabled = True

@kopf.on.create(GROUP, "v1", "kopfexamples")
async def create_fn(spec, name):
    time.sleep(1)
    logger.info("created %s", name)
    requests.get("http://example.com")

@kopf.on.update("secrets", labels={"app": "x"})
def update_fn(logger, **kwargs):
    logger.info("kopf's own logger: fine")

@kopf.timer("kopfexamples.kopf.dev", interval=10)
def tick(**kwargs):
    pass

if __name__ == "__main__":
    kopf.run(clusterwide=True, standalone=False, liveness_endpoint="http://0.0.0.0:8080/healthz")
"#;

#[test]
fn handlers_their_resources_and_signatures_are_read() {
    let facts = read_ok("op.py", OPERATOR);
    assert!(facts.problems.is_empty(), "{:?}", facts.problems);
    let names: Vec<&str> = facts.handlers.iter().map(|h| h.function.as_str()).collect();
    assert_eq!(names, ["configure", "create_fn", "update_fn", "tick"]);
    let create = &facts.handlers[1];
    assert_eq!(create.decorator, "on.create");
    assert_eq!(
        create.resource,
        Some(ResourceSpec {
            group: Some("kopf.dev".into()),
            version: Some("v1".into()),
            name: "kopfexamples".into()
        })
    );
    assert!(create.is_async && !create.has_kwargs && !create.filtered);
    assert_eq!(create.location, Location::new("op.py", 18));
    let update = &facts.handlers[2];
    assert!(update.filtered && update.has_kwargs);
    assert_eq!(
        update.resource.as_ref().map(|r| r.name.as_str()),
        Some("secrets")
    );
    let tick = &facts.handlers[3];
    assert_eq!(
        tick.resource.as_ref().and_then(|r| r.group.as_deref()),
        Some("kopf.dev")
    );
}

#[test]
fn blocking_calls_count_in_async_handlers_and_module_loggers_unless_shadowed() {
    let facts = read_ok("op.py", OPERATOR);
    let create = &facts.handlers[1];
    let blocking: Vec<&str> = create
        .blocking_calls
        .iter()
        .map(|(w, _)| w.as_str())
        .collect();
    assert_eq!(blocking.len(), 2, "{blocking:?}");
    assert!(blocking[0].starts_with("time.sleep"));
    assert_eq!(create.blocking_calls[0].1, Location::new("op.py", 20));
    assert_eq!(create.module_logger_calls.len(), 1);
    // update_fn takes kopf's `logger`: the module logger is shadowed.
    assert!(facts.handlers[2].module_logger_calls.is_empty());
}

/// Module-level client objects and pykube: each request through them blocks the loop.
const CLIENTS: &str = r#"
import kopf
import pykube
from kubernetes import client

v1 = client.CoreV1Api()
api = pykube.HTTPClient(pykube.KubeConfig.from_env())

@kopf.on.create("widgets")
async def create_fn(name, **_):
    v1.read_namespaced_secret(name, "ns")
    pykube.Pod(api, {}).create()
    for pod in pykube.Pod.objects(api).filter(namespace="ns"):
        pass
    api.get(url="/version")

@kopf.on.update("widgets")
async def update_fn(v1, **_):
    v1.read_namespaced_secret("x", "ns")

def helper(api):
    api.get(url="/version")

def other():
    v1.list_namespace()
"#;

#[test]
fn module_level_clients_and_pykube_block_unless_a_parameter_shadows_them() {
    let facts = read_ok("op.py", CLIENTS);
    let create: Vec<(&str, u32)> = facts.handlers[0]
        .blocking_calls
        .iter()
        .map(|(w, l)| (w.as_str(), l.line))
        .collect();
    assert_eq!(create.len(), 4, "{create:#?}");
    assert_eq!(create[0].1, 11);
    assert!(
        create[0]
            .0
            .contains("v1 = client.CoreV1Api() at module level"),
        "{}",
        create[0].0
    );
    assert!(
        create[1].0.starts_with("pykube.Pod().create()"),
        "{}",
        create[1].0
    );
    assert!(
        create[2].0.starts_with("pykube.Pod.objects()"),
        "{}",
        create[2].0
    );
    assert!(
        create[3].0.contains("api = pykube.HTTPClient()"),
        "{}",
        create[3].0
    );
    // A parameter of the same name is not the module's client.
    assert!(facts.handlers[1].blocking_calls.is_empty());
    let helper = |name: &str| {
        facts
            .helpers
            .iter()
            .find(|h| h.function == name)
            .expect("read")
    };
    assert!(helper("helper").blocking_calls.is_empty());
    assert_eq!(helper("other").blocking_calls.len(), 1);
}

/// Loggers that wrap a module logger, and loguru's ready-made one.
const WRAPPED_LOGGERS: &str = r#"
import logging
import kopf
from loguru import logger as lg

adapter = logging.LoggerAdapter(logging.getLogger(__name__), {"app": "op"})
child = logging.getLogger(__name__).getChild("sync")
wrapped = structlog.wrap_logger(logging.getLogger())

@kopf.on.create("widgets")
def create_fn(**_):
    adapter.info("a")
    child.warning("b")
    wrapped.info("c")
    lg.info("d")
"#;

#[test]
fn logger_wrappers_and_loguru_are_module_loggers() {
    let facts = read_ok("op.py", WRAPPED_LOGGERS);
    let loggers: Vec<&str> = facts.handlers[0]
        .module_logger_calls
        .iter()
        .map(|(l, _)| l.as_str())
        .collect();
    assert_eq!(loggers, ["adapter", "child", "wrapped", "lg"]);
}

/// A method of what a call returns is no function of the repository: it never takes
/// a place among the calls the call graph follows.
#[test]
fn chained_calls_are_not_followed_as_the_repositorys_functions() {
    assert!(may_be_own_function("sync_secret"));
    assert!(may_be_own_function("k8s.read_config"));
    assert!(!may_be_own_function("session().query"));
    assert!(!may_be_own_function("pykube.Pod().create"));
    let facts = read_ok(
        "op.py",
        "import kopf\n\n@kopf.on.create('widgets')\ndef create_fn(**_):\n    db().query().all()\n    helper()\n",
    );
    let calls: Vec<&str> = facts.handlers[0]
        .calls
        .iter()
        .map(|(f, _)| f.as_str())
        .collect();
    assert_eq!(
        calls,
        ["db", "helper"],
        "db() may be the repository's; its methods not"
    );
}

#[test]
fn settings_are_kopfs_only_and_know_whether_a_startup_handler_writes_them() {
    let facts = read_ok("op.py", OPERATOR);
    let written: Vec<(&str, bool)> = facts
        .settings
        .iter()
        .map(|s| (s.path.as_str(), s.in_startup))
        .collect();
    assert_eq!(
        written,
        [
            ("peering.standalone", true),
            ("posting.level", true),
            ("scanning.disabled", false)
        ]
    );
    assert_eq!(
        facts.setting("peering.standalone"),
        Some(&Literal::Bool(true))
    );
    assert_eq!(facts.setting("scanning.disabled"), None);
}

#[test]
fn kopf_run_and_its_keyword_arguments_are_read() {
    let facts = read_ok("op.py", OPERATOR);
    let start = facts.starts.first().expect("kopf.run");
    assert_eq!(start.function, "kopf.run");
    assert_eq!(start.clusterwide, Some(Literal::Bool(true)));
    assert_eq!(start.standalone, Some(Literal::Bool(false)));
    assert_eq!(
        start.liveness_endpoint,
        Some(Literal::Str("http://0.0.0.0:8080/healthz".into()))
    );
    assert_eq!(start.namespaces, None);
}

#[test]
fn resource_specs_follow_kopfs_selector() {
    let spec = |src: &str| {
        let text = format!("import kopf\n@kopf.on.event({src})\ndef f(**_): pass\n");
        read_ok("x.py", &text).handlers[0].resource.clone()
    };
    let rs = |g: Option<&str>, v: Option<&str>, n: &str| {
        Some(ResourceSpec {
            group: g.map(str::to_string),
            version: v.map(str::to_string),
            name: n.to_string(),
        })
    };
    assert_eq!(spec("'pods'"), rs(None, None, "pods"));
    assert_eq!(spec("'v1', 'pods'"), rs(Some(""), Some("v1"), "pods"));
    assert_eq!(
        spec("'apps/v1', 'deployments'"),
        rs(Some("apps"), Some("v1"), "deployments")
    );
    assert_eq!(spec("'kopf.dev', 'kex'"), rs(Some("kopf.dev"), None, "kex"));
    assert_eq!(
        spec("'kex.v1.kopf.dev'"),
        rs(Some("kopf.dev"), Some("v1"), "kex")
    );
    assert_eq!(spec("'kex.kopf.dev'"), rs(Some("kopf.dev"), None, "kex"));
    assert_eq!(spec("kind='Pod'"), rs(None, None, "Pod"));
    assert_eq!(spec("some_variable"), None);
}

#[test]
fn a_file_that_does_not_parse_is_a_problem_with_its_line() {
    let facts = read_ok("bad.py", "import kopf\n\ndef f(:\n    pass\n");
    assert_eq!(facts.problems.len(), 1);
    assert_eq!(facts.problems[0].location.line, 3);
    assert!(facts.handlers.is_empty());
}

#[test]
fn current_python_syntax_parses() {
    // PEP 695 type parameters (3.12) and PEP 750 template strings (3.14).
    let facts = read_ok(
        "new.py",
        "import kopf\ntype Pair[T] = tuple[T, T]\ndef first[T](p: Pair[T]) -> T: return p[0]\nname = 'x'\ngreeting = t'hello {name}'\n",
    );
    assert!(facts.problems.is_empty(), "{:?}", facts.problems);
}

#[test]
fn raises_posts_and_kopfs_logger_are_read_per_handler() {
    let facts = read_ok(
        "op.py",
        "import kopf\n\n@kopf.timer('kex', interval=5)\ndef tick(body, logger, **_):\n    kopf.info(body, reason='Tick', message='tick')\n    if body.get('x'):\n        kopf.warn(body, reason='X', message='x')\n    logger.info('ticked')\n    def nested():\n        kopf.event(body, type='Normal', reason='N', message='n')\n    raise kopf.TemporaryError('again', delay=5)\n",
    );
    let tick = &facts.handlers[0];
    let posts: Vec<(u32, bool)> = tick
        .posts
        .iter()
        .map(|(l, every)| (l.line, *every))
        .collect();
    assert_eq!(posts, [(5, true), (7, false), (10, false)]);
    assert_eq!(
        tick.kopf_logger_calls,
        [("info".to_string(), Location::new("op.py", 8))]
    );
    assert_eq!(
        tick.raises,
        [(
            "kopf.TemporaryError".to_string(),
            Location::new("op.py", 11)
        )]
    );
}

#[test]
fn self_patches_of_changing_values_to_what_kopf_diffs_are_read() {
    let facts = read_ok(
        "op.py",
        "import datetime, uuid, kopf\n\n@kopf.on.update('stamps')\nasync def stamp(spec, patch, meta, **_):\n    patch.metadata.annotations['x/at'] = datetime.datetime.now().isoformat()\n    patch.spec['token'] = str(uuid.uuid4())\n    patch.status['at'] = datetime.datetime.now().isoformat()\n    patch.metadata.labels['size'] = str(spec['size'])\n    if meta.annotations.get('x/at') is None:\n        patch.meta.annotations['x/first'] = datetime.datetime.now().isoformat()\n",
    );
    let found: Vec<(&str, u32, bool)> = facts.handlers[0]
        .self_patches
        .iter()
        .map(|(p, l, every)| (p.as_str(), l.line, *every))
        .collect();
    assert_eq!(
        found,
        [
            (r#"metadata.annotations["x/at"]"#, 5, true),
            (r#"spec["token"]"#, 6, true),
            (r#"meta.annotations["x/first"]"#, 10, false),
        ]
    );
    // Without kopf's `patch` argument, `patch` is someone else's.
    let other = read_ok(
        "op.py",
        "import time, kopf\npatch = {}\n@kopf.on.update('stamps')\ndef stamp(spec, **_):\n    patch.spec['at'] = time.time()\n",
    );
    assert!(other.handlers[0].self_patches.is_empty());
}

#[test]
fn kopf_0_x_events_loglevel_is_read_as_the_posting_level() {
    let facts = read_ok(
        "op.py",
        "import logging\nimport kopf\nkopf.config.EventsConfig.events_loglevel = logging.WARNING\n",
    );
    assert_eq!(
        facts.setting("posting.level"),
        Some(&Literal::Name("logging.WARNING".into()))
    );
}

const DAEMONS: &str = r#"import asyncio, time, kopf

@kopf.daemon("widgets", cancellation_backoff=2.5, cancellation_timeout=10 * 60)
def sync_watch(stopped, **_):
    while True:
        time.sleep(30)

@kopf.daemon("widgets", cancellation_timeout=TIMEOUT)
async def async_watch(**kwargs):
    while not kwargs["stopped"]:
        await asyncio.sleep(delay())

@kopf.on.daemon("gadgets", cancellation_timeout=None)
def plain(stopped, **_):
    def inner():
        return stopped.is_set()
    inner()

@kopf.timer("widgets", interval=1)
def tick(**_):
    while True:
        time.sleep(1)
"#;

#[test]
fn daemons_stopping_options_loops_sleeps_and_reads_of_stopped_are_read() {
    let facts = read_ok("op.py", DAEMONS);
    let daemon = |i: usize| facts.handlers[i].daemon.clone().expect("a daemon");
    let sync = daemon(0);
    assert_eq!(sync.cancellation_backoff, Some(Millis(2500)));
    assert_eq!(sync.cancellation_timeout, Some(Millis(600_000)));
    assert!(sync.cancels);
    assert_eq!(sync.first_loop, Some(Location::new("op.py", 5)));
    // The parameter alone is no read.
    assert!(!sync.reads_stopped);
    assert_eq!(
        sync.sleeps,
        [Sleep {
            function: "time.sleep".into(),
            duration: Some(Millis(30_000)),
            location: Location::new("op.py", 6),
        }]
    );
    let unread = daemon(1);
    assert_eq!(unread.cancellation_timeout, None);
    assert!(unread.cancels, "a variable is still a timeout");
    assert!(unread.reads_stopped, "kwargs[\"stopped\"]");
    assert_eq!(unread.sleeps[0].duration, None);
    let plain = daemon(2);
    assert!(!plain.cancels, "None is no timeout");
    assert!(plain.reads_stopped, "in a nested function");
    assert_eq!(plain.first_loop, None);
    assert_eq!(facts.handlers[3].daemon, None, "a timer is no daemon");
    let longest = facts.longest_daemon_stop().expect("a waited daemon");
    assert_eq!(longest.function, "sync_watch");
    assert_eq!(longest.total(), Millis(602_500));
}

#[test]
fn a_daemon_stacked_under_another_decorator_keeps_its_facts() {
    let facts = read_ok(
        "op.py",
        "import kopf\n@kopf.on.resume('widgets')\n@kopf.daemon('widgets', cancellation_timeout=5)\ndef both(stopped, **_):\n    pass\n",
    );
    let daemon = facts.handlers[0].daemon.as_ref().expect("stacked daemon");
    assert_eq!(daemon.cancellation_timeout, Some(Millis(5000)));
}

#[test]
fn handlers_are_kopf_s_however_the_module_names_kopf() {
    let aliased = read_ok(
        "a.py",
        "import kopf as k\n\n@k.on.create('widgets')\ndef created(**_):\n    raise k.TemporaryError('later')\n",
    );
    assert_eq!(aliased.handlers[0].decorator, "on.create");
    assert_eq!(aliased.handlers[0].raises[0].0, "kopf.TemporaryError");
    let taken = read_ok(
        "b.py",
        "from kopf import on, timer, PermanentError\n\n@on.update('widgets')\ndef updated(**_):\n    raise PermanentError('no')\n\n@timer('widgets', interval=60)\ndef tick(**_):\n    pass\n",
    );
    let decorators: Vec<&str> = taken
        .handlers
        .iter()
        .map(|h| h.decorator.as_str())
        .collect();
    assert_eq!(decorators, ["on.update", "timer"]);
    assert_eq!(taken.handlers[0].raises[0].0, "kopf.PermanentError");
    // A class that registers its handlers on the kopf module it is given.
    let passed = read_ok(
        "c.py",
        "import kopf\n\nclass Operator:\n    def register(self, kopf_module):\n        @kopf_module.on.delete(self.group, self.version, self.plural)\n        def on_delete(name, **kwargs):\n            pass\n",
    );
    assert_eq!(passed.handlers.len(), 1);
    assert_eq!(passed.handlers[0].decorator, "on.delete");
    // Without kopf imported, `X.on.create` is someone else's.
    let other = read_ok(
        "d.py",
        "import app\n\n@app.on.create('widgets')\ndef created(**_):\n    pass\n",
    );
    assert!(other.handlers.is_empty());
}

#[test]
fn kopf_configure_at_debug_is_read() {
    let facts = read_ok(
        "main.py",
        "import kopf\n\nasync def main():\n    kopf.configure(log_prefix=True, verbose=True)\n",
    );
    assert_eq!(
        facts.debug_configures,
        [(
            "kopf.configure(verbose=True)".to_string(),
            Location::new("main.py", 4)
        )]
    );
    let quiet = read_ok(
        "q.py",
        "import kopf\nkopf.configure(verbose=False, debug=None)\n",
    );
    assert!(quiet.debug_configures.is_empty());
}
