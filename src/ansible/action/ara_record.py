# logbook's `ara_record` action: the same arguments and result as ARA's, so
# playbooks that use ara_record run unchanged under logbook's callback.
#
# Actions run in Ansible's forked workers, where a connection opened before the
# fork must not be reused (TLS breaks at random, docs/api.md#batch-ingest). So this action does
# not send the record: it validates the arguments and returns the record in the
# task's result; logbook's callback (main process) sends it with the run's
# other events. The playbook id and the records already sent come from the
# callback's state, which the worker inherited by fork; a worker forked before
# the server answered the run's first batch asks the server for the id, on a
# connection of its own (as for a record on another playbook).
from __future__ import absolute_import, division, print_function

import datetime
import hashlib
import json
import os
import sys
import tempfile
import time

try:
    from urllib.parse import quote
    from urllib.request import Request, urlopen
except ImportError:  # pragma: no cover
    raise

from ansible.parsing.ajson import AnsibleJSONEncoder
from ansible.plugins.action import ActionBase

DOCUMENTATION = """
---
module: ara_record
short_description: Records a key/value pair on the running playbook (logbook's callback)
description:
  - Same arguments as ARA's ara_record. The record is handed to logbook's callback through the task's
    result and sent with the run's other events.
options:
  playbook_id:
    description: Id of the playbook to write the key to; only the running playbook is supported.
    required: false
  key:
    description: Name of the key to write data to
    required: true
  value:
    description: Value of the key written to
    required: true
  type:
    description: Type of the key
    choices: [text, url, json, list, dict]
    default: text
"""

STATE_MODULE = "logbook_callback_state"


def handover_prefix(task_uuid, host):
    """Names of the files a record of this task on this host is handed over in (no_log: see _hand_over).
    The callback (logbook.py) names them the same way."""
    return "%s.%s." % (task_uuid, hashlib.sha1(host.encode("utf-8", "surrogateescape")).hexdigest()[:16])


def _call(api, method, path, body=None, timeout=None):
    """One request on a connection of its own (opened here in the worker, closed at once: nothing crosses the fork)."""
    data = json.dumps(body).encode("utf-8") if body is not None else None
    req = Request(api["url"] + path, data=data, method=method, headers=dict(api["headers"]))
    with urlopen(req, timeout=timeout or api["timeout"], context=api["ssl_context"]) as res:
        return json.loads(res.read().decode("utf-8"))


class ActionModule(ActionBase):
    """Hands a key/value record to logbook's callback."""

    TRANSFERS_FILES = False
    VALID_ARGS = frozenset(("playbook_id", "key", "value", "type"))
    VALID_TYPES = ["text", "url", "json", "list", "dict"]

    def run(self, tmp=None, task_vars=None):
        if task_vars is None:
            task_vars = dict()

        for arg in self._task.args:
            if arg not in self.VALID_ARGS:
                return {"failed": True, "msg": "{0} is not a valid option.".format(arg)}

        result = super(ActionModule, self).run(tmp, task_vars)

        playbook_id = self._task.args.get("playbook_id", None)
        key = self._task.args.get("key", None)
        value = self._task.args.get("value", None)
        type_ = self._task.args.get("type", "text")

        for parameter in ("key", "value"):
            if not self._task.args.get(parameter):
                result["failed"] = True
                result["msg"] = "Parameter '{0}' is required".format(parameter)
                return result

        if type_ not in self.VALID_TYPES:
            result["failed"] = True
            result["msg"] = "Type '{0}' is not supported, choose one of: {1}".format(type_, ", ".join(self.VALID_TYPES))
            return result

        state = sys.modules.get(STATE_MODULE)
        if state is None:
            result["failed"] = True
            result["msg"] = "Record failed to be created or updated: logbook's callback is not enabled"
            return result
        current = getattr(state, "playbook_id", None)
        if current is None:
            # Forked before the server answered the run's first batch: ask it (ARA's record always has the id)
            current = self._playbook_id(state)
        if playbook_id is not None and str(playbook_id) != str(current):
            # Another (earlier) playbook: not part of this run's stream. A connection of its own,
            # opened here in the worker and closed at once, so nothing crosses the fork.
            return self._record_elsewhere(state, result, playbook_id, key, value, type_)

        # Records sent before this worker forked: same value and type → unchanged (ARA's idempotency).
        previous = getattr(state, "records", {}).get(key)
        changed = previous is None or previous != (value, type_)
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        result["changed"] = changed
        result["key"] = key
        result["value"] = value
        result["type"] = type_
        result["playbook_id"] = current
        result["created"] = stamp
        result["updated"] = stamp
        result["msg"] = "Record created or updated in ARA" if changed else "Record unchanged in ARA"
        # The next item of a loop runs in this same worker: it sees this record, as ARA's would on its server.
        if isinstance(getattr(state, "records", None), dict):
            state.records[key] = (value, type_)
        if self._task.no_log or getattr(self._play_context, "no_log", False):
            self._hand_over(state, task_vars, {"key": key, "value": value, "type": type_})
        return result

    def _hand_over(self, state, task_vars, record):
        """no_log: Ansible gives callbacks a censored copy of the result (no key, no value), so the record
        goes to the callback through a file in the run's directory (0700), read and removed when the
        task's result reaches the callback. Named by task, host, then order (a loop's items, in turn)."""
        directory = getattr(state, "records_dir", None)
        if not directory:
            return
        host = str(task_vars.get("inventory_hostname") or "")
        name = "%s%020d.%d.json" % (handover_prefix(str(self._task._uuid)[:36], host), time.time_ns(), os.getpid())
        try:  # a recording problem never fails the task: the record is then not recorded
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
            with os.fdopen(fd, "w") as f:
                json.dump(record, f, cls=AnsibleJSONEncoder)  # as the callback encodes it (a vault value stays encrypted)
            os.rename(tmp, os.path.join(directory, name))
        except Exception:
            pass

    def _playbook_id(self, state, wait=2.0):
        """The running playbook's id, from the server by the stream's uuid; None if it does not say within `wait` s
        (the first batch leaves within the callback's batch interval; a server that is away leaves it None)."""
        api = getattr(state, "api", None)
        stream = getattr(state, "playbook_uuid", None)
        if not api or not stream:
            return None
        deadline = time.monotonic() + wait
        while True:
            try:
                found = _call(api, "GET", "/api/v1/playbooks?uuid=%s" % quote(stream), timeout=min(api["timeout"], wait))
                if found.get("count"):
                    return found["results"][0]["id"]
            except Exception:
                return None
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.1)

    def _record_elsewhere(self, state, result, playbook_id, key, value, type_):
        """ARA's create-or-update of a record on another playbook, over the per-record API."""
        api = getattr(state, "api", None)
        if not api:
            result["failed"] = True
            result["msg"] = "Record failed to be created or updated: logbook's callback is not configured"
            return result

        try:
            found = _call(api, "GET", "/api/v1/records?playbook=%s&key=%s" % (quote(str(playbook_id)), quote(str(key))))
            changed = True
            if found["count"] == 0:
                data = _call(api, "POST", "/api/v1/records", {"playbook": playbook_id, "key": key, "value": value, "type": type_})
            else:
                old = _call(api, "GET", "/api/v1/records/%s" % found["results"][0]["id"])
                if old["value"] != value or old["type"] != type_:
                    data = _call(api, "PATCH", "/api/v1/records/%s" % old["id"], {"key": key, "value": value, "type": type_})
                else:
                    data, changed = old, False
            result.update(changed=changed, key=data["key"], value=data["value"], type=data["type"],
                          playbook_id=data["playbook"], created=data["created"], updated=data["updated"],
                          msg="Record created or updated in ARA" if changed else "Record unchanged in ARA")
        except Exception as e:
            result["changed"] = False
            result["failed"] = True
            result["msg"] = "Record failed to be created or updated in ARA: {0}".format(str(e))
        return result
