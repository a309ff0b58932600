"""
Generate sample kopf log output with kopf's OWN formatters (kopf 1.45.2 installed):

    python3 -m venv /tmp/kvenv && /tmp/kvenv/bin/pip install kopf==1.45.2
    /tmp/kvenv/bin/python gen_samples.py   # writes sample-{full,plain,json}.log here

The formatting (prefix, padding, JSON keys, exc_info) is kopf's real code
(kopf._core.actions.loggers.make_formatter); the messages are the f-strings
copied from kopf's source (execution.py, api.py, events.py, observation.py,
peering.py, throttlers.py, daemons.py, aiotasks.py), with real exceptions
raised so that the tracebacks and reprs are real.  Not captured from a live
cluster: real captures from the fixtures are added separately.
"""
import logging
import os
import sys
import warnings

import kopf
from kopf._cogs.clients import errors
from kopf._core.actions import loggers

HERE = os.path.dirname(os.path.abspath(__file__))
T0 = __import__("calendar").timegm((2026, 11, 30, 2, 41, 55)) + 0.039412  # 2026-11-30T02:41:55.039412Z


class FixedClock(logging.Filter):
    def __init__(self):
        super().__init__()
        self.n = 0

    def filter(self, record):
        record.created = T0 + self.n * 0.25
        record.msecs = (record.created - int(record.created)) * 1000
        self.n += 1
        return True


def forbidden(verb, plural, group, namespace=None, sa="system:serviceaccount:operators:kopf-example"):
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    full = f"{plural}.{group}" if group else plural
    msg = f'{full} is forbidden: User "{sa}" cannot {verb} resource "{plural}" in API group "{group}" {where}'
    payload = {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure',
               'message': msg, 'reason': 'Forbidden',
               'details': {'group': group, 'kind': plural}, 'code': 403}
    return errors.APIForbiddenError(payload, status=403, headers={})


def emit(fmt_name, path):
    logging.Formatter.converter = __import__('time').gmtime
    formatter = loggers.make_formatter(log_format=loggers.LogFormat[fmt_name.upper()], log_prefix=None)
    stream = open(path, 'w')
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    clock = FixedClock()
    handler.addFilter(clock)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG)

    settings = kopf.OperatorSettings()
    body = {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
            'metadata': {'name': 'kopf-example-1', 'namespace': 'default',
                         'uid': '0d4a4f4e-2f0c-4a53-9d2b-6f2b9a0c1e11'}}
    cbody = {'apiVersion': 'kopf.dev/v1', 'kind': 'ClusterKopfExample',
             'metadata': {'name': 'cluster-thing', 'uid': '7b1f7a52-9a6c-4c3e-8a4e-1f0e5b7c2d33'}}
    obj = loggers.ObjectLogger(body=body, settings=settings)
    cobj = loggers.ObjectLogger(body=cbody, settings=settings)
    api_logger = logging.getLogger('kopf._cogs.clients.api')
    running = logging.getLogger('kopf._core.reactor.running')
    observation = logging.getLogger('kopf._core.reactor.observation')
    peering = logging.getLogger('kopf._core.engines.peering')
    activities = logging.getLogger('kopf.activities.startup')
    user = logging.getLogger('my_operator')

    running.debug("Starting Kopf 1.45.2.")
    activities.info("Activity 'startup_fn' succeeded.")
    running.info("Initial authentication has been initiated.")
    obj.debug("Handler 'create_fn' is invoked.")
    obj.info("Handler 'create_fn' succeeded.")
    obj.info("Creation is processed: 1 succeeded; 0 failed.")
    cobj.info("Handler 'create_cluster_fn' succeeded.")
    obj.info("Timer 'tick' succeeded.")
    obj.error("Handler 'update_fn' failed temporarily: Not ready yet.")
    obj.error("Handler 'update_fn' failed temporarily but will time out after 60 seconds: Not ready yet.")
    obj.error("Handler 'update_fn' failed temporarily but will exceed 3 retries: Not ready yet.")
    obj.error("Handler 'update_fn' failed permanently: Invalid spec.field.")
    obj.error("Handler 'update_fn' has timed out after 0:01:00.512345.")
    obj.error("Handler 'update_fn' has exceeded 3 retries.")
    obj.info("Updating is processed: 0 succeeded; 1 failed.")
    for tail in ["will try again in 60 seconds", "will ignore it", "will stop now",
                 "will stop now (it would time out in 600 seconds on the next attempt)",
                 "will stop now (it would exceed 5 retries on the next attempt)"]:
        try:
            {}['spec']['field']
        except Exception as e:
            obj.exception(f"Handler 'delete_fn' failed with an exception and {tail}: {str(e) or repr(e)}")
    for old in ["Will retry.", "Will ignore.", "Will stop."]:
        try:
            raise ValueError("old style")
        except Exception:
            obj.exception(f"Handler 'delete_fn' failed with an exception. {old}")
    obj.warning("Merge-patching finished with inconsistencies: (('remove', ('status',), {'create_fn': {'message': 'hello'}}, None),)")
    obj.warning("Patching failed with inconsistencies: (('remove', ('status',), {'create_fn': {'message': 'hello'}}, None),)")
    e = forbidden("create", "events", "", namespace="default")
    obj.warning(f"Failed to post an event. Ignoring and continuing. "
                f"Code: {e.code}. Message: {e.message}. Details: {e.details}"
                f"Event: type={'Warning'!r}, reason={'Logging'!r}, message={'Handler failed.'!r}.")
    what = "GET https://10.96.0.1:443/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    e = forbidden("list", "customresourcedefinitions", "apiextensions.k8s.io")
    api_logger.error(f"Request attempt #1/9 failed; will retry: {what} -> {e!r}")
    api_logger.error(f"Request attempt #9/9 failed; escalating: {what} -> {e!r}")
    e = forbidden("patch", "kopfexamples", "kopf.dev", namespace="default")
    obj.error(f"Request attempt #2/9 failed; will retry: PATCH https://10.96.0.1:443/apis/kopf.dev/v1/namespaces/default/kopfexamples/kopf-example-1 -> {e!r}")
    api_logger.error("Request attempt #3 failed; TCP closed; will re-authenticate: GET https://10.96.0.1:443/api/v1/pods")
    observation.warning("Not enough permissions to list namespaces. "
                        "Falling back to a list of namespaces which are assumed to exist: "
                        f"{['default', 'team-a']!r}")
    observation.warning("Not enough permissions to watch for namespaces: "
                        "changes (deletion/creation) will not be noticed; "
                        "the namespaces are only refreshed on operator restarts.")
    observation.warning("Not enough permissions to watch for resources: "
                        "changes (creation/deletion/updates) will not be noticed; "
                        "the resources are only refreshed on operator restarts.")
    observation.warning("Unresolved resources cannot be served (try creating their CRDs): "
                        "Selector(group='kopf.dev', plural='kopfexamples')")
    peering.info("Pausing operations in favour of [Peer(id='other-host', priority=100)].")
    peering.warning("Possibly conflicting operators with the same priority: [Peer(id='other-host', priority=0)].")
    peering.warning("Pausing all operators, including self: [Peer(id='other-host', priority=0)]")
    peering.info("Resuming operations after the pause. Conflicting operators with the same priority are gone.")
    try:
        try:
            raise forbidden("watch", "kopfexamples", "kopf.dev", namespace="default")
        except Exception as e:
            raise RuntimeError("watch stream failed") from e
    except Exception as e:
        capname = "watcher for kopfexamples.v1.kopf.dev@default".capitalize()
        running.exception(f"{capname} has failed: {e}")
    try:
        raise forbidden("list", "kopfexamples", "kopf.dev", namespace="default")
    except Exception as e:
        running.exception(f"{'multidimensional multitasker'.capitalize()} has failed: {e}")
    try:
        raise RuntimeError("boom")
    except Exception as e:
        obj.exception(f"Throttling for 1 seconds due to an unexpected error: {e!r}")
    obj.info("Throttling is over. Switching back to normal operations.")
    obj.warning("Daemon 'monitor' did not exit in time. Leaving it orphaned.")
    obj.warning("Handler 'slow_fn' is cancelled. Will escalate.")
    obj.info("Some user message from a handler: spec.replicas=3")
    user.info("Reconciled 3 objects.")
    running.info("Signal SIGTERM is received. Operator is stopping.")
    stream.flush()
    # Non-kopf lines on the same stream (kubectl logs merges stdout and stderr).
    stream.write("print() from a handler: hello\n")
    warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: stream.write(
        warnings.formatwarning(message, category, filename, lineno, line))
    warnings.warn_explicit(
        "Absence of either namespaces or cluster-wide flag will become an error soon."
        " For now, switching to the cluster-wide mode for backward compatibility.",
        FutureWarning, "/usr/local/lib/python3.12/site-packages/kopf/_core/reactor/running.py", 179)
    stream.write("Unclosed client session\nclient_session: <aiohttp.client.ClientSession object at 0x7f1c2b3d4e50>\n")
    stream.close()


for name in ["full", "plain", "json"]:
    emit(name, os.path.join(HERE, f"sample-{name}.log"))

# Make the tracebacks independent of where this script was run from.
for name in ["full", "plain", "json"]:
    path = os.path.join(HERE, f"sample-{name}.log")
    text = open(path).read().replace(os.path.abspath(__file__), "/app/handlers.py")
    open(path, "w").write(text)
