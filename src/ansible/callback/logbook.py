# logbook's Ansible callback: records a playbook run into a logbook server
# through its batch ingest API (POST /api/v1/ingest, docs/api.md#batch-ingest).
#
# Ansible's thread only appends events to an in-memory queue; one sender
# thread ships them in batches (by size and by time), one batch in flight per
# playbook stream, retrying with backoff and spooling to disk when the server
# is away. Records the same things as ARA's stock callback (ara_default), so a
# run recorded by either reads back the same through the API.
#
# Standard library only (it runs inside ansible-playbook). Also a command:
#   python3 src/ansible/callback/logbook.py ship   # ships the spool now
from __future__ import absolute_import, division, print_function

import atexit
import configparser
import datetime
import fcntl
import gzip
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import ssl
import struct
import sys
import tempfile
import threading
import time
import types
import uuid as uuidlib
from base64 import b64encode
from collections import deque

try:  # inside ansible-playbook; the `ship` command works without Ansible too
    from ansible import __version__ as ansible_version
    from ansible.parsing.ajson import AnsibleJSONEncoder as _JSONEncoder
    from ansible.plugins.callback import CallbackBase
    from ansible.vars.clean import module_response_deepcopy, strip_internal_keys
except ImportError:  # pragma: no cover - only for `python3 logbook.py ship` without Ansible
    ansible_version = None
    _JSONEncoder = json.JSONEncoder
    CallbackBase = object

try:
    import http.client as httplib
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover - Python 2 is not supported
    raise

DOCUMENTATION = """
name: logbook
type: notification
short_description: Records playbook runs into a logbook server (batch ingest API)
description:
  - Records everything ARA's stock callback records (playbook, plays, tasks, files, hosts with facts
    and stats, results, ara_record records, labels) through logbook's POST /api/v1/ingest.
  - Never blocks Ansible on the network and never fails a run; what cannot be sent is spooled to disk
    and shipped by the next run (or by `python3 <this file> ship`).
options:
  api_server:
    description: Base URL of the logbook server.
    default: http://127.0.0.1:8000
    env: [{name: LOGBOOK_API_SERVER}]
    ini: [{section: logbook, key: api_server}]
  api_username:
    description: HTTP Basic user name.
    env: [{name: LOGBOOK_API_USERNAME}]
    ini: [{section: logbook, key: api_username}]
  api_password:
    description: HTTP Basic password.
    env: [{name: LOGBOOK_API_PASSWORD}]
    ini: [{section: logbook, key: api_password}]
  api_token:
    description: Bearer token (used instead of Basic credentials when set).
    env: [{name: LOGBOOK_API_TOKEN}]
    ini: [{section: logbook, key: api_token}]
  api_timeout:
    description: Seconds to wait for one HTTP request.
    type: float
    default: 10
    env: [{name: LOGBOOK_API_TIMEOUT}]
    ini: [{section: logbook, key: api_timeout}]
  api_insecure:
    description: Do not verify the server's TLS certificate.
    type: bool
    default: false
    env: [{name: LOGBOOK_API_INSECURE}]
    ini: [{section: logbook, key: api_insecure}]
  api_ca_file:
    description: CA bundle (PEM) to verify the server's TLS certificate with.
    env: [{name: LOGBOOK_API_CA_FILE}]
    ini: [{section: logbook, key: api_ca_file}]
  default_labels:
    description: Labels applied to every playbook.
    type: list
    default: []
    env: [{name: LOGBOOK_CALLBACK_LABELS}]
    ini: [{section: logbook, key: default_labels}]
  argument_labels:
    description: CLI arguments that, when set, become labels (like ARA's argument_labels).
    type: list
    default: [remote_user, check, tags, skip_tags, subset]
    env: [{name: LOGBOOK_CALLBACK_ARGUMENT_LABELS}]
    ini: [{section: logbook, key: argument_labels}]
  ignored_facts:
    description: Host facts replaced by a notice before they are sent.
    type: list
    default: [ansible_env]
    env: [{name: LOGBOOK_CALLBACK_IGNORED_FACTS}]
    ini: [{section: logbook, key: ignored_facts}]
  ignored_arguments:
    description: Playbook arguments replaced by a notice before they are sent.
    type: list
    default: [extra_vars]
    env: [{name: LOGBOOK_CALLBACK_IGNORED_ARGUMENTS}]
    ini: [{section: logbook, key: ignored_arguments}]
  ignored_files:
    description: Files whose path contains one of these strings are sent without their content.
    type: list
    default: []
    env: [{name: LOGBOOK_CALLBACK_IGNORED_FILES}]
    ini: [{section: logbook, key: ignored_files}]
  localhost_as_hostname:
    description: Record results of localhost under the controller's host name.
    type: bool
    default: false
    env: [{name: LOGBOOK_CALLBACK_LOCALHOST_AS_HOSTNAME}]
    ini: [{section: logbook, key: localhost_as_hostname}]
  localhost_as_hostname_format:
    description:
      - The controller's name recorded as the playbook's controller and, with localhost_as_hostname, for localhost
        (ARA's option of the same name) - fqdn (server.example.org), fqdn_short (server), hostname, hostname_short.
    default: fqdn
    choices: [fqdn, fqdn_short, hostname, hostname_short]
    env: [{name: LOGBOOK_CALLBACK_LOCALHOST_AS_HOSTNAME_FORMAT}]
    ini: [{section: logbook, key: localhost_as_hostname_format}]
  spool_dir:
    description: Where batches wait while the server is away (default ~/.cache/logbook/spool, else $TMPDIR).
    env: [{name: LOGBOOK_CALLBACK_SPOOL_DIR}]
    ini: [{section: logbook, key: spool_dir}]
  batch_size:
    description: Events per batch at most.
    type: int
    default: 1000
    env: [{name: LOGBOOK_CALLBACK_BATCH_SIZE}]
    ini: [{section: logbook, key: batch_size}]
  batch_interval:
    description: Seconds an event waits at most for a batch to fill.
    type: float
    default: 0.2
    env: [{name: LOGBOOK_CALLBACK_BATCH_INTERVAL}]
    ini: [{section: logbook, key: batch_interval}]
  max_memory_mb:
    description: Megabytes of unsent batches kept in memory; more go to the spool directory.
    type: float
    default: 64
    env: [{name: LOGBOOK_CALLBACK_MAX_MEMORY_MB}]
    ini: [{section: logbook, key: max_memory_mb}]
  flush_timeout:
    description: Seconds the end of a run waits for the server before leaving the rest in the spool.
    type: float
    default: 30
    env: [{name: LOGBOOK_CALLBACK_FLUSH_TIMEOUT}]
    ini: [{section: logbook, key: flush_timeout}]
  unreachable_timeout:
    description:
      - Seconds the end of a run keeps trying a server it cannot connect to at all (connection refused, unknown
        host name, no route, no connection within api_timeout) before leaving the rest in the spool; counted from
        the start of the end wait, or from the first failed connection during it. A server that answers (even
        503 or another error) or answers slowly gets the whole flush_timeout.
    type: float
    default: 5
    env: [{name: LOGBOOK_CALLBACK_UNREACHABLE_TIMEOUT}]
    ini: [{section: logbook, key: unreachable_timeout}]
"""

# The ara_record action (forked worker) reads the playbook id and the records
# already sent from here: a module every process of the run shares by fork.
STATE_MODULE = "logbook_callback_state"

GZIP_MIN_BYTES = 8 * 1024  # smaller bodies cost more to compress than to send
GZIP_MAGIC = b"\x1f\x8b"  # a body starting with these is gzip; JSON never does
MAX_BATCH_BYTES = 8 * 1024 * 1024  # well under the server's default max_body_bytes (32 MiB)
MAX_BATCH_EVENTS = 10000  # docs/api.md#batch-ingest
BACKOFF_MIN = 0.1
BACKOFF_MAX = 5.0
BACKOFF_MAX_UNREACHABLE_AT_END = 1.0  # retries of a server that cannot be connected to, during the end wait
TERM_FLUSH_TIMEOUT = 3.0  # the end wait after SIGTERM (at most flush_timeout): then the rest goes to the spool
RECORD_ACTIONS = ("ara_record", "ara.ara.ara_record", "logbook.ara_record")
ARGUMENTS_NOTICE = "Not saved as configured by 'ignored_arguments'"
FACTS_NOTICE = "Not saved as configured by 'ignored_facts'"
FILE_NOTICE = "Not saved as configured by 'ignored_files'"


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def default_spool_dir():
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if os.path.isdir(os.path.dirname(cache.rstrip("/")) or "/") and os.access(os.path.dirname(cache.rstrip("/")) or "/", os.W_OK):
        return os.path.join(cache, "logbook", "spool")
    return os.path.join(tempfile.gettempdir(), "logbook-spool-%d" % os.getuid())


def is_gzip(body):
    return body[:2] == GZIP_MAGIC


def packed(raw):
    """A batch's JSON as kept in memory and sent: gzip-compressed when large (GZIP_MIN_BYTES)."""
    return raw if len(raw) < GZIP_MIN_BYTES else gzip.compress(raw, compresslevel=1)


def plain_json(body):
    """A batch body as JSON bytes (bodies are kept gzip-compressed when large, always in the spool)."""
    return gzip.decompress(body) if is_gzip(body) else body


def to_json(obj, encoder=None, **kw):
    """JSON bytes, ASCII only: output that is not UTF-8 (Python keeps its bytes as lone surrogates,
    which UTF-8 cannot encode) goes as \\udcXX escapes, as the stock callback sends it; and ASCII
    bodies take the server's fast path (it scans their bytes without decoding them)."""
    return json.dumps(obj, cls=encoder or _JSONEncoder, ensure_ascii=True, **kw).encode("ascii")


class LooseJSONEncoder(_JSONEncoder):
    """Ansible's encoder, then str() for what even it cannot encode (a set…). Never `default=str` alone: that
    replaces Ansible's default, and a vault-encrypted value would be sent decrypted (str() of it is the plain
    text) where the stock callback sends its ciphertext ({"__ansible_vault": ...})."""

    def default(self, o):
        try:
            return _JSONEncoder.default(self, o)
        except TypeError:
            return str(o)


def unique(items, key):
    """items without repeats (by key), each kept where it first occurs."""
    seen, out = set(), []
    for item in items:
        k = key(item)
        if k not in seen:
            seen.add(k)
            out.append(item)
    return out


def json_key(value):
    """A hashable stand-in for any JSON value: its JSON text (equal strings have equal texts)."""
    try:
        return to_json(value, LooseJSONEncoder, sort_keys=True)
    except TypeError:  # keys that cannot be sorted
        return to_json(value, LooseJSONEncoder)


def deprecation_key(dep):
    """ARA's `_dedupe_deprecations`: a deprecation is the same one when collection_name, msg and version are."""
    if isinstance(dep, dict):
        return json_key([dep.get("collection_name"), dep.get("msg"), dep.get("version")])
    return json_key(dep)  # not a dict (ARA's callback would fail on it): kept, compared whole


def as_list(value):
    """A result's `warnings`/`deprecations` as a list (None: none; one value that is not a list: that one)."""
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def shared_state():
    state = sys.modules.get(STATE_MODULE)
    if state is None:
        state = types.ModuleType(STATE_MODULE)
        state.playbook_id = None
        state.records = {}
        state.records_dir = None
        sys.modules[STATE_MODULE] = state
    return state


def handover_prefix(task_uuid, host):
    """Names of the files ara_record hands a no_log task's record over in (the action names them the same way)."""
    return "%s.%s." % (task_uuid, hashlib.sha1(host.encode("utf-8", "surrogateescape")).hexdigest()[:16])


# After a batch is refused as a whole (400/413), it is sent again with the contents (result content,
# host facts, file content, record values) larger than each of these many bytes of JSON replaced by a
# notice, then with no events at all.
SHRINK_STEPS = (64 * 1024, 1024)
JSON_VALUED = {"result": "content", "host": "facts", "file": "content", "record": "value"}


def shrink_batch(raw, shrunk, status):
    """Makes a refused batch (parsed JSON, changed in place) smaller: the next step after `shrunk`
    earlier ones. Returns the new count, or None when there is nothing left to take out."""
    if not raw.get("events"):
        return None
    for step in range(shrunk, len(SHRINK_STEPS)):
        limit, changed = SHRINK_STEPS[step], False
        for ev in raw["events"]:
            field = JSON_VALUED.get(ev.get("kind"))
            if field is None or field not in ev:
                continue
            size = len(to_json(ev[field]))
            if size <= limit:
                continue
            notice = "Not saved: %d bytes, more than the logbook server took in one request (%d)" % (size, status)
            if ev["kind"] == "file":
                ev[field] = notice
            elif ev["kind"] == "record":
                ev[field], ev["type"] = notice, "text"
            else:
                ev[field] = {"msg": notice}
            changed = True
        if changed:
            return step + 1
    raw["events"] = []
    return len(SHRINK_STEPS) + 1


class CannotConnect(Exception):
    """No connection to the server at all: refused, unknown host name, no route, or none within the timeout.
    Unlike an answer (even 503) or a slow one, waiting the whole flush_timeout for it helps little."""

    def __init__(self, cause):
        Exception.__init__(self, str(cause))
        self.cause = cause


class Batch(object):
    """One request body of one stream, with its seq: sent as is until answered."""

    __slots__ = ("stream", "seq", "body", "path", "size", "shrunk")

    def __init__(self, stream, seq, body=None, path=None):
        self.stream = stream
        self.seq = seq
        self.shrunk = 0  # times it was sent again smaller after a 400/413 (shrink_batch)
        self.body = body  # JSON, gzip-compressed when large; None while it lives only in the spool
        self.path = path  # its spool file, once written
        self.size = len(body) if body is not None else 0

    def load(self):
        if self.body is not None:
            return self.body
        with open(self.path, "rb") as f:
            return f.read()


class Spool(object):
    """Batches on disk: <dir>/<stream uuid>/<seq>.json.gz, one lock file per stream."""

    def __init__(self, directory):
        self.dir = directory
        self.locks = {}

    def claim(self, stream):
        """Locks a stream's directory for this process (False: another run ships it)."""
        if stream in self.locks:
            return True
        d = os.path.join(self.dir, stream)
        os.makedirs(d, exist_ok=True)
        fd = os.open(os.path.join(d, ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self.locks[stream] = fd
        return True

    def write(self, batch):
        if batch.path is not None:
            return
        d = os.path.join(self.dir, batch.stream)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "%010d.json.gz" % batch.seq)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(batch.body if is_gzip(batch.body) else gzip.compress(batch.body, compresslevel=1))
        os.rename(tmp, path)
        batch.path = path

    def forget(self, batch):
        if batch.path is None:
            return
        try:
            os.unlink(batch.path)
        except OSError:
            pass
        batch.path = None

    def pending(self):
        """Every stream's spooled batches that this process could claim, oldest stream first."""
        out = []
        try:
            names = os.listdir(self.dir)
        except OSError:
            return out
        streams = []
        for name in names:
            d = os.path.join(self.dir, name)
            if not os.path.isdir(d):
                continue
            files = sorted(f for f in os.listdir(d) if re.match(r"^\d{10}\.json\.gz$", f))
            if not files:
                self.remove_stream(name, only_if_empty=True)
                continue
            if not self.claim(name):
                continue
            streams.append((os.path.getmtime(os.path.join(d, files[0])), name, files))
        for _, name, files in sorted(streams):
            for f in files:
                out.append(Batch(name, int(f[:10]), path=os.path.join(self.dir, name, f)))
        return out

    def release(self):
        """Unlocks every stream this process claimed."""
        for fd in self.locks.values():
            os.close(fd)
        self.locks.clear()

    def remove_stream(self, stream, only_if_empty=False):
        d = os.path.join(self.dir, stream)
        try:
            if only_if_empty and any(not f.startswith(".") for f in os.listdir(d)):
                return
            for f in os.listdir(d):
                if f.startswith(".tmp-") or f == ".lock":
                    os.unlink(os.path.join(d, f))
            os.rmdir(d)
        except OSError:
            pass
        fd = self.locks.pop(stream, None)
        if fd is not None:
            os.close(fd)


class Shipper(object):
    """The sender thread and the queue between it and Ansible's thread."""

    def __init__(self, url, timeout=10.0, username=None, password=None, token=None, insecure=False,
                 ca_file=None, spool_dir=None, batch_size=1000, batch_interval=0.2, max_memory_mb=64,
                 unreachable_timeout=5.0, warn=None):
        parts = urlsplit(url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("logbook server URL must be http(s)://host[:port][/prefix], got %r" % url)
        self.url = url.rstrip("/")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port
        self.path = (parts.path or "") + "/api/v1/ingest"
        self.timeout = float(timeout)
        self.headers = {"Content-Type": "application/json", "Accept": "application/json",
                        "User-Agent": "logbook-ansible-callback"}
        if token:
            self.headers["Authorization"] = "Bearer %s" % token
        elif username is not None:
            creds = ("%s:%s" % (username, password or "")).encode("utf-8")
            self.headers["Authorization"] = "Basic %s" % b64encode(creds).decode("ascii")
        self.ssl_context = None
        if self.scheme == "https":
            try:
                ctx = ssl.create_default_context(cafile=ca_file) if ca_file else ssl.create_default_context()
            except (OSError, ssl.SSLError) as e:
                raise ValueError("cannot load the CA file %s (api_ca_file): %s" % (ca_file, e))
            if insecure:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            self.ssl_context = ctx
        self.spool = Spool(spool_dir or default_spool_dir())
        self.batch_size = max(1, min(int(batch_size), MAX_BATCH_EVENTS))
        self.batch_interval = max(0.0, float(batch_interval))
        self.max_memory = int(float(max_memory_mb) * 1024 * 1024)
        self.unreachable_timeout = max(0.0, float(unreachable_timeout))
        self.warn = warn or (lambda msg: sys.stderr.write("[WARNING]: %s\n" % msg))
        self.warned = set()

        self.cond = threading.Condition()
        self.queue = deque()  # events of the current stream, not yet in a batch
        self.queue_since = 0.0
        self.pending = deque()  # batches in send order; pending[0] is (or is next) in flight
        self.memory = 0  # bytes of pending bodies held in memory
        self.forming = None  # (seq, events) popped from the queue, being serialized
        self.flushing = False
        self.stopped = False
        self.thread = None
        self.conn = None
        self.failures = 0
        self.retry_at = 0.0
        # monotonic time of the first of the latest attempts that all failed to connect (CannotConnect);
        # None once the server answered anything, or failed otherwise (a slow answer is not "away")
        self.unreachable_since = None

        self.stream = None  # the current run's playbook uuid
        self.playbook = None  # its create fields
        self.next_seq = 1
        self.on_playbook_id = None
        self.shipped = 0
        self.rejected = 0
        self.stream_dropped = False
        self.stopped_by_error = False

    # -- Ansible's side -----------------------------------------------------

    def start(self, playbook=None, on_playbook_id=None):
        """Starts the sender; with `playbook` (create fields) a new stream for this run."""
        if playbook is not None:
            self.stream = playbook["uuid"]
            self.playbook = playbook
            self.on_playbook_id = on_playbook_id
        try:  # earlier runs' spooled batches go first (listing only; bodies are read when sent)
            old = [b for b in self.spool.pending() if b.stream != self.stream]
        except Exception as e:
            old = []
            self._warn_once("spool-read", "logbook: cannot read the spool directory %s: %s" % (self.spool.dir, e))
        self.pending.extend(old)
        self.thread = threading.Thread(target=self._run, name="logbook-sender")
        self.thread.daemon = True
        self.thread.start()

    def add(self, event):
        # Lock-free on purpose: deque.append is atomic, and the sender polls the queue every
        # batch_interval. Taking the sender's lock (or waking it) here makes Ansible's thread
        # wait for the GIL and the scheduler whenever the sender is busy.
        if not (self.stopped or self.stream_dropped):
            self.queue.append(event)

    def _give_up_at(self, start, deadline):
        """When the end wait stops: at `deadline`, or `unreachable_timeout` s into it while the latest attempts all
        failed to connect (counted from the first of them when that came later than the start of the wait)."""
        since = self.unreachable_since
        if since is None:
            return deadline
        return min(deadline, max(start, since) + self.unreachable_timeout)

    def finish(self, timeout, interrupted=False):
        """Sends what is left for up to `timeout` s (less while the server cannot be connected to: unreachable_timeout),
        then spools the rest. Returns batches spooled. `interrupted`: the caller was interrupted (Ctrl-C) before."""
        start = time.monotonic()
        deadline = start + max(0.0, timeout)
        with self.cond:
            if self.stopped:
                return 0
            self.flushing = True
            if self.unreachable_since is not None:
                self.retry_at = min(self.retry_at, start)  # the server may be back: try now, not after the backoff
            self.cond.notify_all()
            told = False
            try:
                while (self.queue or self.pending or self.forming) and time.monotonic() < self._give_up_at(start, deadline) \
                        and self.thread is not None and self.thread.is_alive():
                    if not told and time.monotonic() - start >= 1.0:
                        told = True  # a wait the user would otherwise not understand (ansible-playbook looks hung)
                        self.warn("logbook: sending the rest of the run to %s, for up to %d s more (Ctrl-C leaves it in %s for the next run)"
                                  % (self.url, max(0, round(self._give_up_at(start, deadline) - time.monotonic())), self.spool.dir))
                    self.cond.wait(min(0.1, max(0.0, self._give_up_at(start, deadline) - time.monotonic())))
            except KeyboardInterrupt:
                # Ctrl-C while waiting (often the second of a run interrupted): keep the run, in the spool
                interrupted = True
                # Condition.wait() takes the lock back in a `finally`; a Ctrl-C that lands
                # while it blocks there leaves it released, and the `with` would then raise
                # "cannot release un-acquired lock" instead of spooling the rest
                if not self.cond._is_owned():
                    self.cond.acquire()
            unreachable = self.unreachable_since is not None
            left = 0
            if self.queue or self.pending or self.forming:
                left = self._spill_all()
            elif self.stream is not None:
                self.spool.remove_stream(self.stream, only_if_empty=True)
            self.stopped = True
            self.spool.release()  # what is left is the next shipper's (the next playbook of this run, or the next run)
            self.cond.notify_all()
        if left:
            if interrupted:
                why = "interrupted"
            elif unreachable:
                why = "cannot connect to the server at %s" % self.url
            else:
                why = "the server at %s did not take everything in time" % self.url
            self.warn("logbook: %s; %d batch(es) wait in %s and are shipped by the next run (or now: %s)"
                      % (why, left, self.spool.dir, self.ship_command()))
        return left

    def ship_command(self):
        """The command that ships this spool to this server (credentials, if any, from the same settings)."""
        return "LOGBOOK_API_SERVER=%s LOGBOOK_CALLBACK_SPOOL_DIR=%s python3 %s ship" % (
            shlex.quote(self.url), shlex.quote(self.spool.dir), shlex.quote(os.path.abspath(__file__)))

    # -- the sender thread ----------------------------------------------------

    def _warn_once(self, kind, msg):
        if kind not in self.warned:
            self.warned.add(kind)
            try:
                self.warn(msg)
            except Exception:
                pass

    def _run(self):
        try:
            self._loop()
        except Exception as e:  # never let the thread die silently: the run would hang in finish()
            self._warn_once("crash", "logbook: the sender stopped: %s: %s" % (type(e).__name__, e))
            with self.cond:
                self.stopped_by_error = True
                self.cond.notify_all()

    def _loop(self):
        while True:
            with self.cond:
                while True:
                    if self.stopped:
                        return
                    now = time.monotonic()
                    if now < self.retry_at:
                        # Server away: keep memory bounded while we wait.
                        if len(self.queue) >= self.batch_size:
                            break
                        self.cond.wait(self.retry_at - now)
                        continue
                    if self.pending:
                        break
                    if self.queue:
                        if not self.queue_since:
                            self.queue_since = now  # first seen by this poll: at most one interval late
                        wait = self.queue_since + self.batch_interval - now
                        if self.flushing or len(self.queue) >= self.batch_size or wait <= 0:
                            break
                        self.cond.wait(wait)
                        continue
                    if self.flushing:
                        self.cond.notify_all()
                    self.cond.wait(self.batch_interval if self.batch_interval > 0 else 0.01)
                batch = self.pending[0] if self.pending and time.monotonic() >= self.retry_at else None
                events = None
                if batch is None and self.queue:
                    events = self._take_events()
            if events is not None:
                self._form(events)
                self._limit_memory()
                continue
            if batch is not None:
                self._ship(batch)

    def _take_events(self):
        """Pops up to batch_size events and reserves their seq (called with the lock held)."""
        n = min(len(self.queue), self.batch_size)
        events = [self.queue.popleft() for _ in range(n)]
        self.queue_since = time.monotonic() if self.queue else 0.0
        self.forming = (self.next_seq, events)
        self.next_seq += 1
        return events

    def _form(self, events):
        seq = self.forming[0]
        body = self._encode(seq, events)
        with self.cond:
            if self.stopped:  # finish() spilled these already
                return
            self.forming = None
            for b in body:
                self.pending.append(b)
                self.memory += b.size

    def _encode(self, seq, events):
        """Serializes events into one batch, or several when one would be too big (seq reserved for the first)."""
        parts = []
        for ev in events:
            try:
                parts.append(to_json(ev, sort_keys=True))
            except (TypeError, ValueError):
                # keys of mixed types cannot be sorted ({1: .., "a": ..}): unsorted, as the stock callback then sends them
                try:
                    parts.append(to_json(ev, encoder=LooseJSONEncoder))
                except Exception as e:
                    self._warn_once("encode", "logbook: an event could not be encoded and was dropped: %s" % e)
        head = to_json(self.playbook, encoder=LooseJSONEncoder)
        groups, cur, size = [], [], 0
        for p in parts:
            if cur and size + len(p) > MAX_BATCH_BYTES:
                groups.append(cur)
                cur, size = [], 0
            cur.append(p)
            size += len(p) + 1
        groups.append(cur)
        out = []
        for i, g in enumerate(groups):
            s = seq
            if i > 0:  # rare: one batch too big. Reserve another seq (nothing formed since, we hold no lock
                with self.cond:  # but the sender thread is the only one that reserves)
                    s = self.next_seq
                    self.next_seq += 1
            raw = b'{"playbook":' + head + b',"seq":' + str(s).encode() + b',"events":[' + b",".join(g) + b"]}"
            # Small bodies stay plain: compressing them (and the server inflating them) cost more
            # than the bytes saved, and most batches of a run are small (one interval's events).
            out.append(Batch(self.stream, s, body=packed(raw)))
        return out

    def _limit_memory(self):
        """Moves the newest in-memory batches to the spool while memory is over its bound."""
        with self.cond:
            if self.memory <= self.max_memory:
                return
            for b in reversed(self.pending):
                if self.memory <= self.max_memory:
                    break
                if b.body is None or b is self.pending[0]:
                    continue
                try:
                    self.spool.claim(b.stream)
                    self.spool.write(b)
                except OSError as e:
                    self._warn_once("spool-write", "logbook: cannot write to the spool directory %s: %s" % (self.spool.dir, e))
                    return
                self.memory -= b.size
                b.body = None

    def _spill_all(self):
        """Writes every unsent batch (and events not in one yet) to the spool. Lock held."""
        batches = list(self.pending)
        if self.forming is not None:
            batches.extend(self._encode(self.forming[0], self.forming[1]))
            self.forming = None
        while self.queue:
            events = self._take_events()
            seq = self.forming[0]
            self.forming = None
            batches.extend(self._encode(seq, events))
        n = 0
        for b in batches:
            try:
                if b.stream is not None:
                    self.spool.claim(b.stream)
                if b.body is not None:
                    self.spool.write(b)
                n += 1
            except OSError as e:
                self._warn_once("spool-write", "logbook: cannot write to the spool directory %s: %s; %d batch(es) are lost"
                                % (self.spool.dir, e, len(batches) - n))
                break
        self.pending.clear()
        self.memory = 0
        return n

    # HTTP ------------------------------------------------------------------

    def _connection(self):
        if self.conn is None:
            if self.scheme == "https":
                self.conn = httplib.HTTPSConnection(self.host, self.port, timeout=self.timeout, context=self.ssl_context)
            else:
                self.conn = httplib.HTTPConnection(self.host, self.port, timeout=self.timeout)
        return self.conn

    def _close(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None

    def _post(self, body):
        headers = dict(self.headers)
        # Large bodies are kept gzip-compressed (memory, spool) and sent so; small ones are sent
        # plain, where compressing costs the server more than the bytes it saves. The rule is
        # _encode's (JSON under GZIP_MIN_BYTES goes plain), so a batch that was spooled between
        # two attempts is sent as the same bytes. A gzip member ends with its input's size.
        gz = is_gzip(body)
        if gz and struct.unpack("<I", body[-4:])[0] < GZIP_MIN_BYTES:
            payload = gzip.decompress(body)
        else:
            payload = body
            if gz:
                headers["Content-Encoding"] = "gzip"
        headers["Content-Length"] = str(len(payload))
        for attempt in (0, 1):  # a kept-alive connection the server closed: retry once on a new one
            conn = self._connection()
            if conn.sock is None:
                try:
                    conn.connect()
                except (ssl.SSLError, ssl.CertificateError, ConnectionResetError, ConnectionAbortedError, BrokenPipeError):
                    self._close()  # something answered there (TLS refused, or it closed the connection)
                    raise
                except OSError as e:  # refused, unknown host name, no route, no connection within the timeout
                    self._close()
                    raise CannotConnect(e)
            try:
                conn.request("POST", self.path, body=payload, headers=headers)
                res = conn.getresponse()
                data = res.read()
                if res.getheader("Connection", "").lower() == "close":
                    self._close()
                return res.status, data, res.getheader("Retry-After")
            except (httplib.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                self._close()
                if attempt == 1:
                    raise
            except Exception:
                self._close()
                raise

    def _ship(self, batch):
        try:
            body = batch.load()
        except OSError as e:
            self._warn_once("spool-read", "logbook: cannot read spooled batch %s: %s" % (batch.path, e))
            self._done(batch)
            return
        try:
            status, data, retry_after = self._post(body)
        except CannotConnect as e:
            with self.cond:
                if self.unreachable_since is None:
                    self.unreachable_since = time.monotonic()
            self._retry_later("unreachable", "logbook: cannot reach %s (%s: %s); retrying, batches are kept"
                              % (self.url, type(e.cause).__name__, e))
            return
        except Exception as e:
            if self.unreachable_since is not None:
                with self.cond:
                    self.unreachable_since = None  # connected: slow or broken, not away
            self._retry_later("unreachable", "logbook: cannot reach %s (%s: %s); retrying, batches are kept"
                              % (self.url, type(e).__name__, e))
            return
        if self.unreachable_since is not None:
            with self.cond:
                self.unreachable_since = None  # it answered
        reply = None
        try:
            reply = json.loads(data.decode("utf-8")) if data else None
        except ValueError:
            reply = None
        if status == 200 and isinstance(reply, dict):
            if reply.get("rejected"):
                self.rejected += len(reply["rejected"])
                first = reply["rejected"][0]
                self._warn_once("rejected", "logbook: the server rejected %d event(s) of batch %d, first: %s"
                                % (len(reply["rejected"]), batch.seq, json.dumps(first)[:500]))
            if batch.stream == self.stream and isinstance(reply.get("playbook"), int) and self.on_playbook_id:
                try:
                    self.on_playbook_id(reply["playbook"])
                except Exception:
                    pass
            self.shipped += 1
            self._done(batch)
            return
        detail = (reply.get("detail") if isinstance(reply, dict) else None) or data[:300].decode("utf-8", "replace")
        if status in (400, 413):
            # Refused as a whole: its seq is not used up. Send it again smaller, same seq: first with
            # every large content replaced by a notice (a task that printed more than the server takes
            # in one request), then without events, so that the playbook (seq 1 creates it) and the
            # rest of the run still arrive. A stream whose empty batch is refused is dropped.
            raw = json.loads(plain_json(body).decode("utf-8"))
            shrunk = shrink_batch(raw, batch.shrunk, status)
            if shrunk is None:
                self._warn_once("refused", "logbook: the server refused batch %d of playbook %s (%d: %s); this playbook cannot be recorded"
                                % (batch.seq, batch.stream, status, detail))
                self._drop_stream(batch.stream)
                return
            self._warn_once("refused-%d" % shrunk, "logbook: the server refused batch %d of playbook %s (%d: %s); sent again %s"
                            % (batch.seq, batch.stream, status, detail,
                               "without its events, which are lost" if not raw["events"] else
                               "with contents over %d bytes replaced by a notice" % SHRINK_STEPS[shrunk - 1]))
            with self.cond:
                smaller = Batch(batch.stream, batch.seq, body=packed(to_json(raw, separators=(",", ":"))))
                smaller.shrunk = shrunk
                self.spool.forget(batch)
                self.memory -= batch.size if batch.body is not None else 0
                self.memory += smaller.size
                self.pending[0] = smaller
            return
        if status == 409:
            self._warn_once("gap", "logbook: the server refused batch %d of playbook %s: %s; this playbook cannot be completed"
                            % (batch.seq, batch.stream, detail))
            self._drop_stream(batch.stream)
            return
        if status in (401, 403):
            self._retry_later("auth", "logbook: the server refused our credentials (%d: %s); batches are kept" % (status, detail))
            return
        self._retry_later("status-%d" % status, "logbook: the server answered %d (%s); retrying, batches are kept" % (status, detail),
                          retry_after)

    def _retry_later(self, kind, msg, retry_after=None):
        self._warn_once(kind, msg)
        self.failures += 1
        delay = min(BACKOFF_MAX, BACKOFF_MIN * (2 ** min(self.failures - 1, 10)))
        if self.flushing and self.unreachable_since is not None:
            delay = min(delay, BACKOFF_MAX_UNREACHABLE_AT_END)  # cheap attempts, and the end wait is short
        delay *= 0.5 + random.random() / 2
        try:
            if retry_after is not None:
                delay = max(delay, min(BACKOFF_MAX, float(retry_after)))
        except ValueError:
            pass
        with self.cond:
            self.retry_at = time.monotonic() + delay

    def _done(self, batch):
        with self.cond:
            self.failures = 0
            self.retry_at = 0.0
            if self.pending and self.pending[0] is batch:
                self.pending.popleft()
            if batch.body is not None:
                self.memory -= batch.size
            self.spool.forget(batch)
            if batch.stream != self.stream and not any(b.stream == batch.stream for b in self.pending):
                self.spool.remove_stream(batch.stream)
            self.cond.notify_all()

    def _drop_stream(self, stream):
        with self.cond:
            for b in [b for b in self.pending if b.stream == stream]:
                self.pending.remove(b)
                if b.body is not None:
                    self.memory -= b.size
                self.spool.forget(b)
            self.spool.remove_stream(stream)
            if stream == self.stream:
                self.queue.clear()
                self.stream_dropped = True
            self.cond.notify_all()


class CallbackModule(CallbackBase):
    """Records the run into logbook through POST /api/v1/ingest."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "logbook"

    def __init__(self):
        super(CallbackModule, self).__init__()
        self.shipper = None
        self.shipper_options = None  # what set_options gave the Shipper: each playbook of the run gets one
        self.warned = set()
        self.at_exit = False
        self.terminated = False  # SIGTERM reached ansible-playbook (_on_sigterm)
        self.localhost_hostname = None
        self.state = shared_state()
        self._new_playbook()

    def _new_playbook(self):
        """What one playbook's recording keeps (ansible-playbook a.yml b.yml records two)."""
        self.finished = False
        self.playbook_path = None
        self.play_uuid = None
        self.play_starts = {}  # Ansible play uuid → times started (once per `serial` batch)
        self.task = None  # {"uuid", "started", "action"} of the running task
        self.result_started = {}
        self.file_cache = set()
        self.host_cache = set()
        self.task_cache = {}
        self.delegation_cache = {}
        self.task_messages = {}  # task uuid → its results' warnings, deprecations, exceptions (_collect_messages)
        self.labels_sent = None
        self.name_sent = None
        self.argument_labels = []
        self.state.playbook_id = None
        self.playbook_id_known = threading.Event()
        self.state.records = {}
        self._remove_records_dir()
        self.state.records_dir = None

    def _remove_records_dir(self):
        directory = getattr(self.state, "records_dir", None)
        if directory:
            shutil.rmtree(directory, ignore_errors=True)

    # Every hook goes through _guard: a recording problem is a warning (once), never a failed run.
    def _warn(self, msg):
        try:
            self._display.warning(msg)
        except Exception:
            sys.stderr.write("[WARNING]: %s\n" % msg)

    def _guard(self, name, fn, *args, **kwargs):
        if self.shipper is None or self.finished:
            return None
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            if name not in self.warned:
                self.warned.add(name)
                self._warn("logbook callback: %s failed (%s: %s); the run goes on" % (name, type(e).__name__, e))
            return None

    def set_options(self, task_keys=None, var_options=None, direct=None):
        super(CallbackModule, self).set_options(task_keys=task_keys, var_options=var_options, direct=direct)
        try:
            o = self.get_option
            self.argument_label_names = list(o("argument_labels") or [])
            self.default_labels = list(o("default_labels") or [])
            self.ignored_facts = list(o("ignored_facts") or [])
            self.ignored_arguments = list(o("ignored_arguments") or [])
            self.ignored_files = list(o("ignored_files") or [])
            self.localhost_as_hostname = bool(o("localhost_as_hostname"))
            self.localhost_as_hostname_format = str(o("localhost_as_hostname_format") or "fqdn")
            self.flush_timeout = float(o("flush_timeout"))
            self.shipper_options = dict(
                url=o("api_server"), timeout=o("api_timeout"), username=o("api_username"), password=o("api_password"),
                token=o("api_token"), insecure=o("api_insecure"), ca_file=o("api_ca_file"), spool_dir=o("spool_dir"),
                batch_size=o("batch_size"), batch_interval=o("batch_interval"), max_memory_mb=o("max_memory_mb"),
                unreachable_timeout=o("unreachable_timeout"), warn=self._warn,
            )
            self.shipper = Shipper(**self.shipper_options)
        except Exception as e:
            self.shipper = None
            self._warn("logbook callback disabled: %s: %s" % (type(e).__name__, e))

    def _add(self, event):
        self.shipper.add(event)

    # -- playbook -------------------------------------------------------------

    def v2_playbook_on_start(self, playbook):
        if self.finished and self.shipper_options is not None:
            # the next playbook of the command line (each ends with its stats): a stream of its own
            self._new_playbook()
            try:
                self.shipper = Shipper(**self.shipper_options)
            except Exception:
                self.shipper = None  # set_options built one with these: not expected
        self._guard("v2_playbook_on_start", self._playbook_start, playbook)

    def _playbook_start(self, playbook):
        try:
            from ansible import context
            cli_options = dict(context.CLIARGS.items())
        except Exception:
            cli_options = {}
        self.localhost_hostname = controller_name(self.localhost_as_hostname_format)
        content = None
        if playbook._file_name == "__adhoc_playbook__":
            content = cli_options.get("module_name")
            if cli_options.get("module_args"):
                content = "{0}: {1}".format(content, cli_options["module_args"])
            path = "Ad-Hoc: {0}".format(content)
        else:
            path = os.path.abspath(playbook._file_name)
        self.playbook_path = path
        for argument in self.ignored_arguments:
            if argument in cli_options:
                cli_options[argument] = ARGUMENTS_NOTICE
        labels = []
        for label in self.argument_label_names:
            if label not in cli_options:
                continue
            value = cli_options[label]
            if isinstance(value, (tuple, list)):
                if value:
                    labels.append("%s:%s" % (label, ",".join(value)))
            elif isinstance(value, bool):
                labels.append("%s:%s" % (label, value))
            elif value:
                labels.append("%s:%s" % (label, value))
        self.argument_labels = labels
        # Arguments go through JSON once here so that the spool holds plain data.
        arguments = json.loads(json.dumps(cli_options, cls=LooseJSONEncoder))
        stream = str(uuidlib.uuid4())
        self.shipper.start(
            playbook={"uuid": stream, "path": path, "runner_version": ansible_version,
                      "arguments": arguments, "status": "running", "controller": self.localhost_hostname,
                      "started": now_iso()},
            on_playbook_id=self._on_playbook_id,
        )
        self.state.playbook_uuid = stream
        try:  # where ara_record hands over the records of no_log tasks (0700, removed at the end)
            self.state.records_dir = tempfile.mkdtemp(prefix="logbook-records-")
        except OSError:
            self.state.records_dir = None
        # For ara_record with another playbook's id (it opens its own connection in the worker).
        self.state.api = {"url": self.shipper.url, "headers": {k: v for k, v in self.shipper.headers.items()},
                          "timeout": self.shipper.timeout, "ssl_context": self.shipper.ssl_context}
        if not self.at_exit:
            self.at_exit = True
            atexit.register(self._at_exit)  # a run that ends without stats (error, interrupt) still ships what it has
            self._catch_sigterm()
        self._file(path, content)

    def _on_playbook_id(self, playbook_id):
        self.state.playbook_id = playbook_id
        self.playbook_id_known.set()

    def _playbook_id(self, wait=2.0):
        """This playbook's id, waiting up to `wait` s for the first batch's answer (a record written to
        another playbook by id early in a run; Ansible strips any marker the action could leave)."""
        if self.state.playbook_id is None:
            self.playbook_id_known.wait(wait)
        return self.state.playbook_id

    def _file(self, path, content=None):
        if path in self.file_cache:
            return
        self.file_cache.add(path)
        for pattern in self.ignored_files:
            if pattern in path:
                content = FILE_NOTICE
        if content is None:
            try:
                with open(path, "r") as fd:
                    content = fd.read()
            except (IOError, OSError, UnicodeDecodeError) as e:
                content = "logbook was not able to read this file: %s" % e
        self._add({"kind": "file", "path": path, "content": content})

    # -- plays and tasks ---------------------------------------------------------

    def v2_playbook_on_play_start(self, play):
        self._guard("v2_playbook_on_play_start", self._play_start, play)

    def _play_start(self, play):
        self._end_task()
        self._end_play()
        play_vars = play._variable_manager.get_vars(play=play)["vars"]
        if "ara_playbook_name" in play_vars and play_vars["ara_playbook_name"] != self.name_sent:
            self.name_sent = play_vars["ara_playbook_name"]
            self._add({"kind": "playbook", "name": self.name_sent})
        labels = self.default_labels + self.argument_labels
        if "ara_playbook_labels" in play_vars:
            extra = play_vars["ara_playbook_labels"]
            if isinstance(extra, list):
                labels = labels + list(extra)
            elif isinstance(extra, str):
                labels = labels + extra.split(",")
        if labels and sorted(labels) != self.labels_sent:
            self.labels_sent = sorted(labels)
            self._add({"kind": "playbook", "labels": list(labels)})
        for path in list(play._loader._FILE_CACHE.keys()):
            self._file(path)
        # Ansible starts a play again for each `serial` batch, and ARA records a play each time. A
        # play's uuid is its key in the stream, so the later ones get ansible-runner's suffix (_2, _3…).
        uuid = play._uuid[:36]
        starts = self.play_starts[uuid] = self.play_starts.get(uuid, 0) + 1
        self.play_uuid = uuid if starts == 1 else "%s_%d" % (uuid, starts)
        self._add({"kind": "play", "uuid": self.play_uuid, "name": play.name, "status": "running", "started": now_iso()})

    def v2_playbook_on_handler_task_start(self, task):
        self._guard("v2_playbook_on_handler_task_start", self._task_start, task, True)

    def v2_playbook_on_task_start(self, task, is_conditional, handler=False):
        self._guard("v2_playbook_on_task_start", self._task_start, task, handler)

    def _task_start(self, task, handler):
        self._end_task()
        task_uuid = str(task._uuid)[:36]
        cached = self.task_cache.get(task_uuid)
        if cached is None:
            # Like ARA: the same Ansible task started again (a handler flushed twice) keeps its record.
            pathspec = task.get_path()
            if pathspec:
                path, lineno = pathspec.split(":", 1)
                lineno = int(lineno)
            else:
                path, lineno = self.playbook_path, 1
            self._file(path)
            cached = {"uuid": task_uuid, "started": now_iso(), "action": task.action}
            self.task_cache[task_uuid] = cached
            self._add({"kind": "task", "uuid": task_uuid, "play": self.play_uuid, "file": path, "name": task.get_name(),
                       "action": task.action, "lineno": lineno, "handler": bool(handler), "tags": task.tags,
                       "status": "running", "started": cached["started"]})
        self.task = cached

    def _end_task(self):
        if self.task is not None:
            event = {"kind": "task", "uuid": self.task["uuid"], "status": "completed", "ended": now_iso()}
            event.update(self._messages(self.task["uuid"]))
            self._add(event)
            self.task = None

    def _collect_messages(self, task_uuid, content):
        """What ARA's newest callback keeps of a task's results, from the same keys: a result's
        `deprecations` (a list of dicts) replace the task's so far (ARA keeps the last result's),
        its `exception` (a traceback's text) is added, its `warnings` (a list of texts) extend them.
        Kept by task for the whole playbook, as the task's results are: ARA keeps one set, sent to
        whichever task ends next, and starts again empty. The same under the linear strategy; under
        `free` each host starts (and so ends) a task of its own accord, and a host's result can
        arrive after another host started the next task."""
        if "deprecations" not in content and "exception" not in content and "warnings" not in content:
            return
        messages = self.task_messages.setdefault(task_uuid, {"warnings": [], "deprecations": [], "exceptions": []})
        if "deprecations" in content:
            messages["deprecations"] = as_list(content["deprecations"])
        if "exception" in content:
            messages["exceptions"].append(content["exception"])
        if "warnings" in content:
            messages["warnings"].extend(as_list(content["warnings"]))
        if self.task is None or self.task["uuid"] != task_uuid:
            # its task already ended, and its end event went without these: they follow on their own
            event = {"kind": "task", "uuid": task_uuid}
            event.update(self._messages(task_uuid))
            self._add(event)

    def _messages(self, task_uuid):
        """The task's warnings, deprecations, exceptions as its task event carries them: each without
        repeats and only when there are any (most tasks have none: the batch stays small). ARA's callback
        removes repeats with set(), in an order that changes from run to run (Python hashes text with a
        per-process seed); keeping the first occurrence of each gives the same elements in a stable order."""
        messages = self.task_messages.get(task_uuid)
        if not messages:
            return {}
        out = {
            "warnings": unique(messages["warnings"], json_key),
            "deprecations": unique(messages["deprecations"], deprecation_key),
            "exceptions": unique(messages["exceptions"], json_key),
        }
        return dict((field, values) for field, values in out.items() if values)

    def _end_play(self):
        if self.play_uuid is not None:
            self._add({"kind": "play", "uuid": self.play_uuid, "status": "completed", "ended": now_iso()})
            self.play_uuid = None

    # -- results -------------------------------------------------------------------

    def v2_runner_on_start(self, host, task):
        if self.shipper is not None:
            self.result_started[host.get_name()] = now_iso()

    def v2_runner_on_ok(self, result, **kwargs):
        self._guard("v2_runner_on_ok", self._result, result, "ok", kwargs)

    def v2_runner_on_unreachable(self, result, **kwargs):
        self._guard("v2_runner_on_unreachable", self._result, result, "unreachable", kwargs)

    def v2_runner_on_failed(self, result, **kwargs):
        self._guard("v2_runner_on_failed", self._result, result, "failed", kwargs)

    def v2_runner_on_skipped(self, result, **kwargs):
        self._guard("v2_runner_on_skipped", self._result, result, "skipped", kwargs)

    def v2_runner_item_on_ok(self, result):
        self._guard("v2_runner_item_on_ok", self._delegation, result)

    def v2_runner_item_on_failed(self, result):
        self._guard("v2_runner_item_on_failed", self._delegation, result)

    def _delegation(self, result):
        # The item hooks see delegate_to templated; the final hook of a loop may not (ansible#75339).
        if result._task.delegate_to:
            self.delegation_cache.setdefault(str(result._task._uuid)[:36], []).append(result._task.delegate_to)

    def _host_name(self, host):
        if self.localhost_as_hostname and host in ("localhost", "127.0.0.1"):
            return self.localhost_hostname
        return host

    def _result(self, result, status, kwargs):
        ended = now_iso()
        hostname = result._host.get_name()
        host = self._host_name(hostname)
        task_uuid = str(result._task._uuid)[:36]
        task = self.task_cache.get(task_uuid)
        if task is None:
            raise ValueError("a result arrived for a task that never started: %s" % result._task.get_name())
        delegated_to = []
        if result._task.delegate_to and status != "skipped":
            if task_uuid in self.delegation_cache:
                delegated_to = [self._host_name(h) for h in self.delegation_cache[task_uuid]]
            else:
                delegated_to = [self._host_name(result._task.delegate_to)]
        content = strip_internal_keys(module_response_deepcopy(result._result))
        if isinstance(content.get("ansible_facts"), dict):
            for fact in self.ignored_facts:
                if fact in content["ansible_facts"]:
                    content["ansible_facts"][fact] = FACTS_NOTICE
        self.host_cache.add(host)
        self._add({"kind": "result", "task": task_uuid, "host": host, "delegated_to": delegated_to, "status": status,
                   "changed": bool(result._result.get("changed", False)),
                   "ignore_errors": bool(kwargs.get("ignore_errors", False) or False), "content": content,
                   "started": self.result_started.get(hostname, task["started"]), "ended": ended})
        if task["action"] in ("setup", "gather_facts") and "ansible_facts" in content:
            self._add({"kind": "host", "name": host, "facts": content["ansible_facts"]})
        if task["action"] in RECORD_ACTIONS and status in ("ok", "failed"):
            # failed: a loop whose other items did write their records (ARA's action writes each at once)
            if "censored" in result._result:
                items = self._handed_over(task_uuid, hostname)  # no_log: see the action's _hand_over
            elif isinstance(result._result.get("results"), list):
                items = result._result["results"]
            else:
                items = [result._result]
            for item in items:
                if not isinstance(item, dict) or "key" not in item or "type" not in item or item.get("failed"):
                    continue
                target = item.get("playbook_id")
                if target is not None and str(target) != str(self._playbook_id()):
                    continue  # written to another playbook by the action itself
                self.state.records[item["key"]] = (item.get("value"), item["type"])
                self._add({"kind": "record", "key": item["key"], "value": item.get("value"), "type": item["type"]})
        self._collect_messages(task_uuid, content)

    def _handed_over(self, task_uuid, hostname):
        """The records ara_record handed over in files (no_log hides them from the result), in the order written."""
        directory = self.state.records_dir
        if not directory:
            return []
        prefix = handover_prefix(task_uuid, hostname)
        out = []
        try:
            names = sorted(n for n in os.listdir(directory) if n.startswith(prefix))
        except OSError:
            return out
        for name in names:
            path = os.path.join(directory, name)
            try:
                with open(path) as f:
                    out.append(json.load(f))
            except (OSError, ValueError):
                pass
            try:
                os.unlink(path)
            except OSError:
                pass
        return out

    # -- the end -------------------------------------------------------------------

    def v2_playbook_on_stats(self, stats):
        self._guard("v2_playbook_on_stats", self._stats, stats)
        self._finish()

    def _stats(self, stats):
        self._end_task()
        self._end_play()
        for hostname in sorted(stats.processed.keys()):
            s = stats.summarize(hostname)
            self._add({"kind": "host", "name": self._host_name(hostname), "changed": s["changed"],
                       "unreachable": s["unreachable"], "failed": s["failures"], "ok": s["ok"], "skipped": s["skipped"]})
        status = "failed" if (len(stats.failures) >= 1 or len(stats.dark) >= 1) else "completed"
        self._add({"kind": "playbook", "status": status, "ended": now_iso()})

    def _catch_sigterm(self):
        """SIGTERM (a CI job cancelled, `docker stop`, systemd) kills ansible-playbook at once by default: atexit
        does not run, and what the queue holds (all of it while the server is away) would be lost, the playbook left
        `running`. Unless something else already handles SIGTERM, it becomes an exit instead, which runs _at_exit."""
        try:
            if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
                return
            self.pid = os.getpid()
            signal.signal(signal.SIGTERM, self._on_sigterm)
        except (ValueError, OSError, AttributeError):
            pass

    def _on_sigterm(self, signum, frame):
        if os.getpid() != self.pid:
            # a worker forked from ansible-playbook (it inherited the handler): it dies of the signal, as before
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if self.terminated:
            # a second SIGTERM while the rest is sent: into the spool at once, as a second Ctrl-C does
            raise KeyboardInterrupt()
        self.terminated = True
        # unwinds Ansible as an exit would (its `finally` blocks stop the workers), then atexit runs _at_exit
        # with a short end wait (TERM_FLUSH_TIMEOUT); the exit status is the shell's for SIGTERM, 143
        raise SystemExit(128 + signum)

    def _at_exit(self):
        """The process exits and the playbook being recorded got no stats (Ctrl-C, a fatal error): what was running
        ends `expired`, as the server's expiry (LOGBOOK_EXPIRE_RUNNING_AFTER) would mark it much later."""
        self._finish(expire=True)

    def _expire(self):
        ended = now_iso()
        if self.task is not None:
            event = {"kind": "task", "uuid": self.task["uuid"], "status": "expired", "ended": ended}
            event.update(self._messages(self.task["uuid"]))
            self._add(event)
            self.task = None
        if self.play_uuid is not None:
            self._add({"kind": "play", "uuid": self.play_uuid, "status": "expired", "ended": ended})
            self.play_uuid = None
        self._add({"kind": "playbook", "status": "expired", "ended": ended})

    def _finish(self, expire=False):
        if self.shipper is None or self.finished or self.shipper.thread is None:
            return
        self.finished = True
        try:
            try:
                if expire:
                    try:
                        self._expire()
                    except Exception as e:
                        self._warn("logbook callback: marking the interrupted run expired failed (%s: %s)" % (type(e).__name__, e))
                if self.terminated:
                    # whoever sent SIGTERM sends SIGKILL after a grace period (docker: 10 s): the spool is safer
                    self.shipper.finish(min(self.flush_timeout, TERM_FLUSH_TIMEOUT), interrupted=True)
                else:
                    self.shipper.finish(self.flush_timeout)
            except KeyboardInterrupt:
                # Ctrl-C again before the end wait began or while the rest went to the spool: spool it now
                self.shipper.finish(0, interrupted=True)
        except BaseException as e:  # from atexit too: never a traceback, never a changed exit code
            self._warn("logbook callback: the final flush failed (%s: %s)" % (type(e).__name__, e))
        finally:
            try:
                self._remove_records_dir()  # no task runs any more: nothing is handed over after this
            except BaseException:
                pass


def controller_name(form):
    """The controller's name in one of ARA's localhost_as_hostname_format forms."""
    name = socket.gethostname() if form.startswith("hostname") else socket.getfqdn()
    return name.split(".")[0] if form.endswith("_short") else name


def ansible_cfg():
    """The ansible.cfg Ansible itself would read: $ANSIBLE_CONFIG, ./ansible.cfg, ~/.ansible.cfg, /etc/ansible/ansible.cfg."""
    given = os.environ.get("ANSIBLE_CONFIG")
    if given and os.path.isdir(given):
        given = os.path.join(given, "ansible.cfg")
    for path in (given, os.path.join(os.getcwd(), "ansible.cfg"), os.path.expanduser("~/.ansible.cfg"), "/etc/ansible/ansible.cfg"):
        if path and os.path.isfile(path):
            return path
    return None


def settings():
    """The options of DOCUMENTATION as the callback gets them: the variable, else the ansible.cfg key, else the default."""
    cfg = configparser.ConfigParser(interpolation=None)
    path = ansible_cfg()
    if path:
        cfg.read(path)
    out = {}
    for name, block in re.findall(r"^  (\w+):\n((?:    .*\n)+)", DOCUMENTATION, re.M):
        default = re.search(r"^    default: (.*)$", block, re.M)
        env = re.search(r"env: \[\{name: (\w+)\}\]", block)
        ini = re.search(r"ini: \[\{section: (\w+), key: (\w+)\}\]", block)
        value = default.group(1) if default else None
        if ini and cfg.has_option(ini.group(1), ini.group(2)):
            value = cfg.get(ini.group(1), ini.group(2))
        if env and os.environ.get(env.group(1)) is not None:
            value = os.environ[env.group(1)]
        out[name] = value
    return out


def ship_main(argv):
    """`python3 logbook.py ship`: ships the spool with the callback's settings (variables, ansible.cfg)."""
    o = settings()
    try:
        shipper = Shipper(
            o["api_server"], timeout=float(o["api_timeout"]), username=o["api_username"], password=o["api_password"],
            token=o["api_token"], insecure=str(o["api_insecure"]).lower() in ("1", "true", "yes", "on"),
            ca_file=o["api_ca_file"], spool_dir=o["spool_dir"], unreachable_timeout=float(o["unreachable_timeout"]),
        )
    except ValueError as e:
        sys.stderr.write("logbook: %s\n" % e)
        return 2
    shipper.start()
    timeout = float(argv[1]) if len(argv) > 1 else float(o["flush_timeout"])
    left = shipper.finish(timeout)
    print("logbook: shipped %d batch(es) from %s to %s, %d left" % (shipper.shipped, shipper.spool.dir, shipper.url, left))
    return 0 if left == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "ship":
        sys.exit(ship_main(sys.argv[1:]))
    sys.stderr.write("usage: python3 %s ship [timeout seconds]\n" % sys.argv[0])
    sys.exit(2)
