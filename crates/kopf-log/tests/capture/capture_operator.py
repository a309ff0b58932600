"""A tiny kopf operator whose handlers make kopf log its outcome templates, for
capturing real kopf output against tests/capture/fake_apiserver.py (hack/capture-kopf-logs.sh
local). Runs unchanged on kopf 1.38 to 1.45."""
import os

import kopf

EXAMPLES = ('kopf.dev', 'v1', 'kopfexamples')


@kopf.on.startup()
def configure(settings, **_):
    # Short retries, so that 403s and 500s escalate in seconds, not in a minute.
    settings.networking.error_backoffs = [0.5, 0.5, 0.5]
    # Keep-alives every second (when peering is on), so that a failing one shows soon.
    settings.peering.lifetime = 3


@kopf.on.login()
def login(**_):
    return kopf.ConnectionInfo(server=os.environ['FAKE_APISERVER'], scheme='Bearer',
                               token='capture-only-not-a-secret', insecure=True)


@kopf.on.create(*EXAMPLES, id='succeed')
def succeed(**_):
    return {'ok': True}


@kopf.on.create(*EXAMPLES, id='temporary', retries=2)
def temporary(**_):
    raise kopf.TemporaryError('the database is not ready yet', delay=1)


@kopf.on.create(*EXAMPLES, id='permanent')
def permanent(**_):
    raise kopf.PermanentError('spec.field must be a number')


@kopf.on.create(*EXAMPLES, id='exception', retries=2, backoff=1)
def exception(spec, **_):
    return spec['missing']


@kopf.on.create(*EXAMPLES, id='announce')
def announce(body, **_):
    kopf.info(body, reason='Announced', message='the example is being handled')


@kopf.on.create('capture.kopf-audit.dev', 'v1', 'beacons', id='beacon')
def beacon(**_):
    pass
