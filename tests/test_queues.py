import json
import os

import pytest

from anima.infra.errors import DataError
from anima.infra.home import Home
from anima.pipeline import queues

from conftest import NOW_TS, file_time


@pytest.fixture
def q(home):
    return queues.Queue(Home(str(home)), "message")


def doc(text="hi"):
    return queues.envelope("message", "test", {"text": text}, "msg", now=NOW_TS)


def test_ids_sort_by_time_and_never_repeat():
    ids = [queues.new_id("msg") for _ in range(2000)]
    assert ids == sorted(ids) and len(set(ids)) == 2000


def test_deliver_claim_finish(q):
    name = q.deliver(doc())
    assert q.ready() == [name]
    assert os.listdir(os.path.join(q.dir, "tmp")) == []
    path = q.claim(name)
    assert q.ready() == [] and q.read(path)["payload"] == {"text": "hi"}
    assert q.claim(name) is None  # losing a race is no error
    q.finish(name)
    assert os.listdir(os.path.join(q.dir, "done")) == [name]


def test_fail_leaves_the_file_with_its_reason(q):
    name = q.deliver(doc())
    q.claim(name)
    q.fail(name, "msg", "could not be read", "anima test", NOW_TS)
    reason = json.loads(open(os.path.join(q.dead, name + ".reason")).read())
    assert (reason["what"], reason["why"], reason["by"], reason["queue"]) == ("msg", "could not be read", "anima test",
                                                                              "message")
    assert os.path.exists(os.path.join(q.dead, name))


def test_recover_returns_old_claims_only(q):
    old, new = q.deliver(doc("a")), q.deliver(doc("b"))
    q.claim(old)
    q.claim(new)
    past = file_time(-3600)
    os.utime(os.path.join(q.dir, "cur", old), (past, past))  # utime does not move ctime back...
    assert q.recover(3600) == []
    assert sorted(q.recover(0)) == sorted([old, new])      # ...so a zero timeout takes every claim back
    assert q.ready() == sorted([old, new])


@pytest.mark.parametrize("bad, why", [
    ([], "not an envelope"),
    ({"envelope": {}, "payload": {}}, "envelope.id is missing"),
    ({"envelope": {"id": "x", "trace_id": "t", "timestamp": "2026-11-30T00:00:00Z", "source_node": "n",
                   "source_type": "gossip"}, "payload": {}}, "source_type 'gossip'"),
    ({"envelope": {"id": "x", "trace_id": "t", "timestamp": "later", "source_node": "n",
                   "source_type": "message"}, "payload": {}}, "timestamp: not an RFC 3339 time"),
    ({"envelope": {"id": "x", "trace_id": "t", "timestamp": "2026-11-30T00:00:00Z", "source_node": "n",
                   "source_type": "message", "ttl_sec": -5}, "payload": {}}, "ttl_sec"),
])
def test_check_says_what_is_wrong(bad, why):
    with pytest.raises(DataError, match=why):
        queues.check(bad, "f.json")
