#!/usr/bin/python3
# Fills an (already migrated) ARA database with the same shape of data as the
# logbook read store: playbooks of H hosts x T tasks, one result per host and
# task, each holding the same ~1.6 KB looped-task content, ~30 KB of facts per
# host. Written through Django's ORM with bulk inserts (seconds instead of the
# minutes ARA's API would take at ~100 writes/s), in the on-disk format ARA's
# own serializers write: zlib-compressed JSON.
#
# Usage (ARA_BASE_DIR selects the database, as for ara-manage):
#   /usr/bin/python3 bench/ara_store.py <playbooks> <hosts> <tasks> <values.json>
# values.json: {"content": <result content>, "facts": <host facts>}
# Prints one JSON line: {"playbooks":…, "results":…, "seconds":…, "blobBytes": {"content":…, "facts":…}}
import datetime
import json
import os
import sys
import time
import uuid
import zlib

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ara.server.settings")

import django  # noqa: E402

django.setup()

from django.db import transaction  # noqa: E402

from ara.api import models  # noqa: E402


def z(value):
    return zlib.compress(json.dumps(value).encode("utf8"))


def main():
    playbooks, hosts, tasks = (int(a) for a in sys.argv[1:4])
    with open(sys.argv[4], encoding="utf8") as f:
        values = json.load(f)
    content, facts = z(values["content"]), z(values["facts"])
    t0 = time.monotonic()
    now = datetime.datetime.now(datetime.timezone.utc)
    second = datetime.timedelta(seconds=1)
    source = b"- hosts: all\n  tasks: []\n"
    fc = models.FileContent.objects.create(sha1="0" * 40, contents=zlib.compress(source))
    ids = {"play": 0, "task": 0, "host": 0, "result": 0, "file": 0}
    for p in range(1, playbooks + 1):
        with transaction.atomic():
            pb = models.Playbook.objects.create(
                id=p, ansible_version="2.14.18", status="completed", path="/srv/site-%d.yml" % p,
                arguments=z({"check": False}), started=now, ended=now + second, duration=second,
            )
            ids["file"] += 1
            f = models.File.objects.create(id=ids["file"], path=pb.path, content=fc, playbook=pb)
            ids["play"] += 1
            play = models.Play.objects.create(
                id=ids["play"], name="site", uuid=uuid.uuid4(), status="completed", playbook=pb,
                started=now, ended=now + second, duration=second,
            )
            host_rows = []
            for h in range(hosts):
                ids["host"] += 1
                host_rows.append(models.Host(
                    id=ids["host"], name="host-%d.example.org" % h, facts=facts, playbook=pb,
                    ok=tasks - (tasks + 6) // 7, skipped=(tasks + 6) // 7, changed=(tasks + 2) // 3,
                ))
            models.Host.objects.bulk_create(host_rows)
            task_rows, result_rows = [], []
            for t in range(tasks):
                ids["task"] += 1
                task_rows.append(models.Task(
                    id=ids["task"], name="task %d" % t, action="ansible.builtin.package", lineno=t + 3,
                    tags=z([]), handler=False, status="completed", play=play, file=f, playbook=pb,
                    started=now, ended=now + second, duration=second,
                ))
                for host in host_rows:
                    ids["result"] += 1
                    result_rows.append(models.Result(
                        id=ids["result"], status="skipped" if t % 7 == 0 else "ok", changed=t % 3 == 0,
                        ignore_errors=False, content=content, host=host, task_id=ids["task"], play=play,
                        playbook=pb, started=now, ended=now + second, duration=second,
                    ))
            models.Task.objects.bulk_create(task_rows)
            models.Result.objects.bulk_create(result_rows, batch_size=500)
    from django.db import connection

    with connection.cursor() as c:
        c.execute("SELECT COALESCE(SUM(LENGTH(content)), 0) FROM results")
        content_bytes = c.fetchone()[0]
        c.execute("SELECT COALESCE(SUM(LENGTH(facts)), 0) FROM hosts")
        facts_bytes = c.fetchone()[0]
    print(json.dumps({
        "playbooks": playbooks, "results": ids["result"], "seconds": round(time.monotonic() - t0, 2),
        "blobBytes": {"content": content_bytes, "facts": facts_bytes},
    }))


if __name__ == "__main__":
    main()
