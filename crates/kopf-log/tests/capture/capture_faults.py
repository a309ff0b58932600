"""A tiny kopf operator for the runs about faults of the operator's own runtime, against
tests/capture/fake_apiserver.py (hack/capture-kopf-logs.sh local): one fault per run,
chosen by CAPTURE_FAULT, each with a compliant twin (`-ok`) that runs the same way
without the fault. Runs unchanged on kopf 1.38 to 1.45.

- `creds`: the login handler always returns the token `token-1`, which the fake server
  revokes (`--revoke`): kopf re-authenticates, gets the same token, and runs out of
  credentials. `creds-ok`: each login returns a new token (`token-2`...): the
  re-authentication succeeds.
- `tls`: the fake server serves HTTPS with a self-signed certificate (`--tls`) that the
  operator does not trust. `tls-ok`: the login trusts it (`ca_path`, FAKE_APISERVER_CA).
- `threads`: sync daemons, one per object (`--examples`), each holding a thread of kopf's
  executor; the process may map too little memory for more than a thread or two
  (`RLIMIT_AS`, with large thread stacks), as a container's memory limit or a low
  `pids` limit does, so Python raises `can't start new thread`. `threads-ok`: the same
  daemons without the limit.
"""
import os
import resource
import threading
import time

import kopf

EXAMPLES = ('kopf.dev', 'v1', 'kopfexamples')
FAULT = os.environ.get('CAPTURE_FAULT', '')
LOGINS = []


def mapped_bytes():
    """The process's virtual memory size (Linux `/proc/self/status` VmSize)."""
    with open('/proc/self/status') as status:
        for line in status:
            if line.startswith('VmSize:'):
                return int(line.split()[1]) * 1024
    raise RuntimeError('no VmSize')


@kopf.on.startup()
def configure(settings, **_):
    settings.networking.error_backoffs = [0.5, 0.5, 0.5]
    settings.execution.max_workers = 8
    if FAULT == 'threads':
        # Room for the event loop's own growth and about one more thread stack.
        threading.stack_size(256 * 1024 * 1024)
        limit = mapped_bytes() + 400 * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))


@kopf.on.login()
def login(**_):
    LOGINS.append(time.time())
    token = f'token-{len(LOGINS)}' if FAULT == 'creds-ok' else 'token-1'
    return kopf.ConnectionInfo(server=os.environ['FAKE_APISERVER'], scheme='Bearer', token=token,
                               insecure=not FAULT.startswith('tls'),
                               ca_path=os.environ.get('FAKE_APISERVER_CA') or None)


@kopf.on.create(*EXAMPLES, id='created')
def created(**_):
    return {'ok': True}


if FAULT.startswith('threads'):
    @kopf.daemon(*EXAMPLES, id='poller')
    def poller(stopped, **_):
        while not stopped:
            stopped.wait(0.5)
