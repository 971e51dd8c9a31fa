# logbook's `ara_playbook` action: ARA's arguments and result (the running
# playbook, or the one named by `playbook_id`, as the server has it), so
# playbooks that use it run unchanged under logbook's callback.
#
# Like ara_record, it runs in a forked worker: it opens a connection of its
# own and closes it (nothing crosses the fork, docs/api.md#batch-ingest). The running
# playbook's id comes from the callback's state, inherited by fork, or from
# the server by the run's stream uuid. The server has the events the callback
# has sent: the last batch interval's (0.2 s) may not be in it yet.
from __future__ import absolute_import, division, print_function

import json
import sys
import time

try:
    from urllib.parse import quote
    from urllib.request import Request, urlopen
except ImportError:  # pragma: no cover
    raise

from ansible.plugins.action import ActionBase

DOCUMENTATION = """
---
module: ara_playbook
short_description: Retrieves the running playbook, or another one, from the logbook server (logbook's callback)
description:
  - Same arguments and result as ARA's ara_playbook.
options:
  playbook_id:
    description: Id of the playbook to retrieve; the running playbook if not set.
    required: false
"""

STATE_MODULE = "logbook_callback_state"


def _get(api, path, timeout=None):
    """One GET on a connection of its own (opened here in the worker, closed at once)."""
    req = Request(api["url"] + path, method="GET", headers=dict(api["headers"]))
    with urlopen(req, timeout=timeout or api["timeout"], context=api["ssl_context"]) as res:
        return json.loads(res.read().decode("utf-8"))


class ActionModule(ActionBase):
    """Retrieves either a specific playbook from the server or the one currently running."""

    TRANSFERS_FILES = False
    VALID_ARGS = frozenset(("playbook_id",))

    def run(self, tmp=None, task_vars=None):
        if task_vars is None:
            task_vars = dict()

        for arg in self._task.args:
            if arg not in self.VALID_ARGS:
                return {"failed": True, "msg": "{0} is not a valid option.".format(arg)}

        result = super(ActionModule, self).run(tmp, task_vars)

        state = sys.modules.get(STATE_MODULE)
        api = getattr(state, "api", None) if state is not None else None
        if not api:
            result["failed"] = True
            result["msg"] = "Playbook could not be queried: logbook's callback is not enabled"
            return result
        try:
            playbook_id = self._task.args.get("playbook_id", None)
            if playbook_id is None:
                playbook_id = getattr(state, "playbook_id", None) or self._running_playbook_id(api, state)
            if playbook_id is None:
                raise RuntimeError("the server does not know the running playbook yet")
            result["playbook"] = _get(api, "/api/v1/playbooks/%s" % quote(str(playbook_id)))
        except Exception as e:
            result["failed"] = True
            result["msg"] = "Playbook could not be queried: {0}".format(e)
            return result
        result["changed"] = False
        result["msg"] = "Queried playbook %s from ARA" % playbook_id
        return result

    @staticmethod
    def _running_playbook_id(api, state, wait=2.0):
        """Forked before the server answered the run's first batch: ask it by the stream's uuid, up to `wait` s."""
        stream = getattr(state, "playbook_uuid", None)
        if not stream:
            return None
        deadline = time.monotonic() + wait
        while True:
            found = _get(api, "/api/v1/playbooks?uuid=%s" % quote(stream), timeout=min(api["timeout"], wait))
            if found.get("count"):
                return found["results"][0]["id"]
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.1)
