"""pipeline/outbox/: her replies, waiting for the host to send them (the built-in `reply`).

One of Pool B's queues (anima.pipeline.queues, the same Maildir-like moves): `anima dispatch`
delivers a message whole (tmp/, then renamed in) under an id made from its action's, so a
resumed action never delivers it twice; a host takes it (claimed: renamed into cur/), sends
it, and acknowledges it (renamed into done/, durably). A message taken and not acknowledged
comes back after the claim timeout or on `requeue`: a host that crashes loses nothing, and
a message acknowledged is never given again. Two hosts racing for a message: the rename of
one wins, the other never sees it.
"""

import os

from anima.infra import fs
from anima.pipeline import queues

NAME = "outbox"
FIELDS = ("to", "text", "scene", "in_reply_to")


class Unknown(Exception):
    """Ids acknowledged that are not in the outbox at all."""


def message_id(action_id: str) -> str:
    """The id of the message an action hands over (like dispatch.result_name: one per action)."""
    return "out_" + action_id.split("_", 1)[-1]


def deliver(home, action_id: str, params: dict, trace_id: str, now: float) -> str:
    """Put the message of reply action `action_id` in the outbox, once; its id."""
    queue = queues.Queue(home, NAME)
    payload = {k: params.get(k) for k in FIELDS}
    payload["action"] = action_id
    doc = queues.envelope("action", "dispatch", payload, "out", trace_id, now=now)
    doc["envelope"]["id"] = message_id(action_id)
    if not queue.has(doc["envelope"]["id"] + ".json"):
        queue.deliver(doc)
    return doc["envelope"]["id"]


def record(doc: dict) -> dict:
    """A message as `anima outbox` prints it: one flat JSON object."""
    env, payload = doc["envelope"], doc["payload"]
    out = {"id": env["id"]}
    out.update({k: payload.get(k) for k in FIELDS})
    out.update({"trace_id": env["trace_id"], "at": env["timestamp"], "action": payload.get("action")})
    return out


def take(home, now: float, limit: int | None = None, timeout_sec: float | None = None,
         by: str = "anima outbox") -> list[dict]:
    """Claim waiting messages, oldest first (at most `limit`), after returning the claims older
    than `timeout_sec` (queues.CLAIM_TIMEOUT_SEC); each as `record` gives it. A malformed file
    goes to dead_letter/."""
    queue = queues.Queue(home, NAME)
    queue.recover(timeout_sec)
    taken = []
    if limit is not None and limit <= 0:
        return taken
    for _, doc in queue.take(by, now):
        taken.append(record(doc))
        if limit is not None and len(taken) >= limit:
            break
    return taken


def ack(home, ids: list[str]) -> list[str]:
    """Acknowledge messages: sent, never to be given again. A message claimed, or back in
    the queue after its claim timed out, goes to done/; one already done is left as it is.
    Unknown names the ids in none of these (the others are acknowledged all the same)."""
    queue = queues.Queue(home, NAME)
    done = os.path.join(queue.dir, "done")
    unknown = []
    for mid in ids:
        if not queues.plain_id(mid):
            unknown.append(mid)
            continue
        name = mid + ".json"
        # claimed, or back in the queue (a requeue may move it between our two looks): each once more
        for where in ("cur", "", "cur"):
            try:
                fs.move(os.path.join(queue.dir, where, name), os.path.join(done, name), durable=True)
                break
            except FileNotFoundError:
                continue
        else:
            if not os.path.exists(os.path.join(done, name)):
                unknown.append(mid)
    if unknown:
        raise Unknown(unknown)
    return ids


def requeue(home) -> list[str]:
    """Give back every message taken and not acknowledged, now; their ids."""
    return [n[:-len(".json")] for n in queues.Queue(home, NAME).recover(0) if n.endswith(".json")]

