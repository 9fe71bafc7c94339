"""The shape of a route topology ([[routes.rules]] in config.toml): what a valid one is.

It is checked with the rest of config.toml, before anything moves; `anima route`
(anima.pipeline.route) carries it out. The kinds, conditions and queue names are described
there and in anima-config(5).
"""

import re

from anima.infra.errors import ConfigError
from anima.infra.home import QUEUES, RESERVED

KINDS = ("switch", "broadcast", "merge")
OPS = ("==", "!=", "<", ">", "in", "contains", "exists", "matches")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


def check(rules, key: str) -> list:
    """The rules if they make a valid topology, else ConfigError saying what is wrong."""
    if not isinstance(rules, list):
        raise ConfigError(f"{key}: must be a list of [[routes.rules]] tables")
    names = set()
    for i, rule in enumerate(rules, 1):
        where = f"{key}[{i}]"
        if not isinstance(rule, dict):
            raise ConfigError(f"{where}: must be a table")
        name = rule.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name) or name in names:
            raise ConfigError(f"{where}: needs a unique plain \"name\"")
        names.add(name)
        where = f"{key}.{name}"
        kind = rule.get("kind")
        if kind not in KINDS:
            raise ConfigError(f"{where}: kind must be one of {', '.join(KINDS)}")
        _queue_name(rule.get("from"), f"{where}.from")
        if kind == "switch":
            cases = rule.get("cases")
            if not isinstance(cases, list) or not cases:
                raise ConfigError(f"{where}: a switch needs \"cases\"")
            for j, case in enumerate(cases, 1):
                if not isinstance(case, dict) or not isinstance(case.get("when"), list):
                    raise ConfigError(f"{where}.cases[{j}]: needs \"when\" (a list of [PATH, OP, VALUE])")
                for cond in case["when"]:
                    _check_condition(cond, f"{where}.cases[{j}]")
                _queue_name(case.get("to"), f"{where}.cases[{j}].to")
            _queue_name(rule.get("default"), f"{where}.default")
        elif kind == "broadcast":
            to = rule.get("to")
            if not isinstance(to, list) or not to:
                raise ConfigError(f"{where}: a broadcast needs \"to\" (a list of queues)")
            for t in to:
                _queue_name(t, f"{where}.to")
        else:
            _queue_name(rule.get("to"), f"{where}.to")
            mode = rule.get("mode", "all")
            if mode not in ("all", "any"):
                raise ConfigError(f"{where}: mode must be all or any")
            for field, low in (("expect", 2), ("timeout_sec", 1)):
                value = rule.get(field, 2 if field == "expect" else 600)
                if isinstance(value, bool) or not isinstance(value, int) or value < low:
                    raise ConfigError(f"{where}: {field} must be a whole number of at least {low}")
        if rule["from"] in targets(rule):
            raise ConfigError(f"{where}: sends files back to its own queue {rule['from']!r} (a loop)")
    return rules


def _queue_name(name, where: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name in RESERVED:
        raise ConfigError(f"{where}: must name a queue: one of anima's ({', '.join(QUEUES)}) or a plain "
                          f"name of your own, not {', '.join(sorted(RESERVED))}")
    return name


def _check_condition(cond, where: str) -> None:
    if not isinstance(cond, list) or len(cond) not in (2, 3) or not isinstance(cond[0], str) \
            or cond[1] not in OPS or (cond[1] == "exists") != (len(cond) == 2):
        raise ConfigError(f"{where}: a condition is [PATH, OP, VALUE] (OP one of {' '.join(OPS)}; "
                          "exists takes no VALUE)")
    if cond[1] == "matches":
        try:
            re.compile(str(cond[2]))
        except re.error as e:
            raise ConfigError(f"{where}: not a regular expression: {e}") from None
    if cond[1] == "in" and not isinstance(cond[2], list):
        raise ConfigError(f"{where}: in takes a list")


def queue_names(rules: list) -> list[str]:
    """The queues a topology of valid rules reads or fills, each once, in order."""
    names = [n for rule in rules for n in (rule["from"], *targets(rule))]
    return list(dict.fromkeys(names))


def targets(rule: dict) -> list:
    if rule["kind"] == "switch":
        return [c["to"] for c in rule["cases"]] + [rule["default"]]
    return rule["to"] if rule["kind"] == "broadcast" else [rule["to"]]
