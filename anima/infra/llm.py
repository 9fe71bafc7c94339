"""Model backends for the translators: `ask` a model for one JSON answer, or None for rules.

Backends (config llm.backend, ANIMA_LLM, or a command's --llm):

- `rules`: no model; `ask` returns None and the caller uses its offline templates.
- `openai`: any OpenAI-compatible chat-completions endpoint through the openai SDK, which
  reads OPENAI_BASE_URL and OPENAI_API_KEY; model llm.model, timeout llm.timeout_sec, no
  retries of the SDK's own (the timing is ours). The answer is asked for as structured output
  (response_format json_schema) and a plain JSON answer is accepted as well.
- `cmd:ARGV`: ARGV (split as a shell would, never run by one) gets the prompt on stdin and
  prints the answer on stdout; text or ``` fences around the JSON object are allowed (the
  first {...} that parses is taken). A non-zero exit or a timeout is Unavailable.

Size: an answer is read only up to llm.max_answer_bytes (the whole HTTP body, an error's
included, asked for uncompressed; or the command's stdout). Past it the reading stops (the
connection closed, the command killed) and the call is Unavailable: a model that answers
without end never holds more than that in memory.

The prompt of TASK in LANG is the first file that exists of
$ANIMA_HOME/prompts/LANG/TASK.md, $ANIMA_HOME/prompts/TASK.md and the package's
anima/data/prompts/LANG/TASK.md (TASK upper case: INTERNALIZER, EXTERNALIZER, CONSOLIDATOR);
$name in it is replaced by the variable `name` (a string as it is, anything else as JSON;
$schema is always the answer's JSON schema; $$ is a dollar sign; an unknown $name stays).

The answer must be a JSON object valid against the schema (a small subset of JSON Schema,
checked by hand: type, required, properties, enum, items, maxLength, minLength, maxItems,
minimum, maximum) and pass the caller's own `check`. An invalid answer is asked again once,
saying what was wrong; invalid twice raises Invalid (with the raw answer).

Every call appends one line to log/llm.jsonl:
{"at", "task", "backend", "model", "prompt_sha256", "tokens_in", "tokens_out", "latency_ms",
"ok", "error"?} (tokens from the endpoint's usage, else null; ok: a valid answer came back).
Budget: when the lines with "ok" of the last hour (by `at`, read from the end of the file)
reach llm.max_calls_per_hour, `ask` calls nothing, appends {"at", "task", "backend",
"fallback": "rules", "why"} and returns None: the rules backend takes over. 0 means no calls.
A retry is a call: the budget is checked before it too.
"""

import json
import os
import re
import shlex
import time

from anima.infra import clock, fs, jsontext
from anima.infra.digest import sha
from anima.infra.errors import UNAVAILABLE, AnimaError, ConfigError, UsageError

TASKS = ("internalizer", "externalizer", "consolidator")
RAW_MAX = 4000  # characters of a raw answer kept in a reason or a message
_TAIL_CHUNK = 65536


class Unavailable(AnimaError):
    """The model could not be asked: a timeout, an HTTP error, a refused connection, a
    command that failed. Nothing was decided; try again later."""

    exit_code = UNAVAILABLE


class TooLarge(Exception):
    """The answer is longer than llm.max_answer_bytes (raised while it is read)."""


class Invalid(Exception):
    """The model answered, twice, with something that is not a valid answer."""

    def __init__(self, message: str, raw: str):
        super().__init__(message)
        self.raw = raw


# --- the backend setting --------------------------------------------------------------------

def backend_problem(value) -> str | None:
    """Why `value` is not a backend, or None."""
    if value in ("rules", "openai"):
        return None
    if isinstance(value, str) and value.startswith("cmd:"):
        try:
            argv = shlex.split(value[4:])
        except ValueError as e:
            return f"its argv does not split ({e})"
        return None if argv else "cmd: needs a command after the colon"
    return "must be rules, openai or cmd:ARGV"


def check_backend(value, what: str = "--llm") -> str:
    problem = backend_problem(value)
    if problem:
        raise UsageError(f"{what}: {value!r} {problem}")
    return value


# --- prompts --------------------------------------------------------------------------------

def prompt_path(home, task: str, lang: str) -> str:
    name = task.upper() + ".md"
    for path in (home.path("prompts", lang, name), home.path("prompts", name)):
        if os.path.isfile(path):
            return path
    return os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "prompts", lang, name)


def render(template: str, variables: dict) -> str:
    from string import Template

    values = {k: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, indent=1)
              for k, v in variables.items()}
    return Template(template).safe_substitute(values)


# --- validating an answer -------------------------------------------------------------------

_TYPES = {"object": dict, "array": list, "string": str, "integer": int, "number": (int, float), "boolean": bool}


def schema_problem(value, schema: dict, where: str = "the answer") -> str | None:
    """What is wrong with `value` against `schema`, or None."""
    kind = schema.get("type")
    if kind is not None:
        if not isinstance(value, _TYPES[kind]) or (kind in ("integer", "number") and isinstance(value, bool)):
            return f"{where} must be of type {kind}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where} must be one of {', '.join(map(str, schema['enum']))}"
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{where} is {len(value)} characters, over {schema['maxLength']}"
        if "minLength" in schema and len(value) < schema["minLength"]:
            return f"{where} is shorter than {schema['minLength']} characters"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{where} is below {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{where} is above {schema['maximum']}"
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value:
                return f"{where} lacks {key!r}"
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                problem = schema_problem(value[key], sub, f"{where}.{key}")
                if problem:
                    return problem
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{where} has {len(value)} items, over {schema['maxItems']}"
        if "items" in schema:
            for i, item in enumerate(value):
                problem = schema_problem(item, schema["items"], f"{where}[{i}]")
                if problem:
                    return problem
    return None


def parse(raw: str) -> dict | None:
    """The JSON object in a completion: the whole text, else the first {...} in it that parses."""
    text = raw.strip()
    try:
        value = jsontext.loads(text)
        if isinstance(value, dict):
            return value
    except ValueError:
        pass
    start = text.find("{")
    while start != -1:
        try:
            value, _ = jsontext.raw_decode(text, start)
            if isinstance(value, dict):
                return value
        except ValueError:
            pass
        start = text.find("{", start + 1)
    return None


# --- the log and the budget -----------------------------------------------------------------

def log_path(home) -> str:
    return home.path("log", "llm.jsonl")


def _log(home, entry: dict) -> None:
    fs.append(log_path(home), json.dumps(entry, ensure_ascii=False) + "\n")


def calls_since(home, since: float) -> int:
    """Calls logged at or after `since`, read backwards from the end until an older line."""
    path = log_path(home)
    try:
        fd = fs.open_file(path)  # a link here is refused (77) like anywhere in the home, not a bug (70)
    except FileNotFoundError:
        return 0
    count = 0
    with os.fdopen(fd, "rb") as f:
        end = f.seek(0, os.SEEK_END)
        carry = b""
        while end > 0:
            start = max(0, end - _TAIL_CHUNK)
            f.seek(start)
            data = f.read(end - start) + carry
            lines = data.split(b"\n")
            carry = lines.pop(0) if start > 0 else b""  # maybe cut: joined with the next chunk
            for line in reversed(lines):
                try:
                    entry = jsontext.loads(line)
                    at = clock.parse(entry["at"], "at")
                except (ValueError, KeyError, TypeError, AnimaError):
                    continue
                if at < since:
                    return count
                if isinstance(entry.get("ok"), bool):
                    count += 1
            end = start
    return count


# --- asking ---------------------------------------------------------------------------------

def ask(home, cfg, task: str, lang: str, variables: dict, schema: dict, now: float, backend: str | None = None,
        check=None) -> dict | None:
    """The model's answer for `task`, asked at `now`: a dict valid against `schema` (and
    `check(answer)`, which returns what is wrong or None); None when the backend is rules or
    the budget is spent.
    Unavailable when the model cannot be asked; Invalid after two invalid answers."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}")
    backend = cfg["llm.backend"] if backend is None else backend
    problem = backend_problem(backend)
    if problem:
        raise ConfigError(f"llm.backend: {backend!r} {problem}")
    if backend == "rules":
        return None
    template = fs.read_text(prompt_path(home, task, lang))
    if template is None:
        raise ConfigError(f"no prompt for {task} in {lang}: {prompt_path(home, task, lang)}")
    prompt = render(template, {"schema": json.dumps(schema, ensure_ascii=False), **variables})
    call = _openai if backend == "openai" else _command
    messages = [{"role": "user", "content": prompt}]
    raw = ""
    cap = cfg["llm.max_calls_per_hour"]
    for attempt in (1, 2):
        if calls_since(home, now - 3600) >= cap:  # a retry is a call too: the cap holds for it
            _log(home, {"at": clock.iso(now), "task": task, "backend": backend, "fallback": "rules",
                        "why": f"llm.max_calls_per_hour ({cap}) spent"})
            return None
        raw, usage, log = call(home, cfg, backend, task, messages, schema, now)
        answer = parse(raw)
        problem = "it is not a JSON object" if answer is None else schema_problem(answer, schema)
        if problem is None and check is not None:
            problem = check(answer)
        log["ok"] = problem is None
        if problem is not None:
            log["error"] = f"invalid answer: {problem}"
        _log(home, log)
        if problem is None:
            return answer
        if attempt == 1:
            messages = messages + [
                {"role": "assistant", "content": raw},
                {"role": "user", "content": _again(lang, problem)},
            ]
    raise Invalid(f"the model's answer was invalid twice ({problem})", raw[:RAW_MAX])


def _again(lang: str, problem: str) -> str:
    if lang == "zh":
        return f"这个回答无效：{problem}。请改正后重新回答，只给出那个 JSON 对象。"
    return f"That answer is not valid: {problem}. Answer again, correcting it, with only the JSON object."


def _entry(task, backend, model, messages, now: float) -> dict:
    sent = "\n\n".join(m["content"] for m in messages)
    return {"at": clock.iso(now), "task": task, "backend": backend, "model": model,
            "prompt_sha256": sha(sent),
            "tokens_in": None, "tokens_out": None, "latency_ms": None}


def _failed(home, log: dict, started: float, reason: str, backend: str) -> Unavailable:
    log.update(latency_ms=round((time.monotonic() - started) * 1000), ok=False, error=reason)
    _log(home, log)
    return Unavailable(f"model backend {backend}: {reason}")


def _openai(home, cfg, backend, task, messages, schema, now):
    try:
        import openai
    except ImportError:
        raise ConfigError("llm.backend openai needs the openai package (pip install openai)") from None
    if not os.environ.get("OPENAI_API_KEY"):
        raise ConfigError("llm.backend openai needs OPENAI_API_KEY in the environment "
                          "(any value for an endpoint that wants none)")
    timeout = cfg["llm.timeout_sec"]
    model = cfg["llm.model"]
    cap = cfg["llm.max_answer_bytes"]
    log = _entry(task, backend, model, messages, now)
    started = time.monotonic()
    # Endpoints that do not know structured output (many local servers) answer 400 to it: ask
    # again for a JSON object, then plainly; the prompt carries the schema and the answer is
    # validated against it either way.
    formats = [{"type": "json_schema", "json_schema": {"name": task, "schema": schema}}, {"type": "json_object"}, None]
    try:
        # identity: the cap counts the bytes that are kept, and a compressed body could hold
        # a thousand times more than it measures
        http = openai.DefaultHttpxClient(event_hooks={"response": [_bounded(cap)]},
                                         headers={"Accept-Encoding": "identity"})
        client = openai.OpenAI(timeout=timeout, max_retries=0, http_client=http)
        for k, form in enumerate(formats):
            try:
                extra = {"response_format": form} if form else {}
                response = client.chat.completions.create(model=model, messages=messages, **extra)
                break
            except openai.BadRequestError:
                if k == len(formats) - 1:
                    raise
    except TooLarge as e:
        raise _failed(home, log, started, str(e), backend) from None
    except openai.APITimeoutError:
        raise _failed(home, log, started, f"timed out after {timeout} s", backend) from None
    except openai.APIStatusError as e:
        detail = _one_line(getattr(e, "message", "") or str(e))
        raise _failed(home, log, started, f"HTTP {e.status_code}: {detail}", backend) from None
    except openai.APIConnectionError as e:
        if isinstance(e.__cause__, TooLarge):  # SDKs that wrap whatever the transport raised
            raise _failed(home, log, started, str(e.__cause__), backend) from None
        cause = _one_line(str(e.__cause__ or e))
        where = os.environ.get("OPENAI_BASE_URL") or "the OpenAI API"
        raise _failed(home, log, started, f"cannot connect to {where}: {cause}", backend) from None
    except openai.OpenAIError as e:
        raise _failed(home, log, started, _one_line(str(e)), backend) from None
    log["latency_ms"] = round((time.monotonic() - started) * 1000)
    usage = getattr(response, "usage", None)
    if usage is not None:
        log["tokens_in"] = getattr(usage, "prompt_tokens", None)
        log["tokens_out"] = getattr(usage, "completion_tokens", None)
    try:
        raw = response.choices[0].message.content or ""
    except (AttributeError, IndexError, TypeError):
        raw = ""
    return raw, usage, log


def _too_large(cap: int) -> TooLarge:
    return TooLarge(f"the answer is longer than {cap} bytes (llm.max_answer_bytes); not read further")


def _bounded(cap: int):
    """An httpx response hook: the body is read through a counter that stops at `cap` bytes
    (the hook runs before the body is read, for an error's body too)."""
    def hook(response):
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > cap:
            raise _too_large(cap)
        if response.headers.get("content-encoding", "identity").lower() != "identity":
            raise TooLarge(f"the answer came {response.headers['content-encoding']}-encoded, "
                           "not as asked (identity): its size cannot be bounded")
        response.stream = _counted(response, cap)
    return hook


def _counted(response, cap: int):
    """The body stream of `response`, raising TooLarge past `cap` bytes."""
    import sys

    # the response checks its stream's class against its own httpx's (httpx, or httpx2 under
    # newer SDKs): subclass that one
    httpx = sys.modules[type(response).__module__.partition(".")[0]]
    stream = response.stream

    class Counted(httpx.SyncByteStream):
        def __iter__(self):
            seen = 0
            for chunk in stream:
                seen += len(chunk)
                if seen > cap:
                    raise _too_large(cap)
                yield chunk

        def close(self):
            stream.close()

    return Counted()


def _command(home, cfg, backend, task, messages, schema, now):
    import subprocess

    argv = shlex.split(backend[4:])
    timeout = cfg["llm.timeout_sec"]
    log = _entry(task, backend, None, messages, now)
    prompt = messages[0]["content"]
    for m in messages[1:]:  # a retry: the exchange so far, in plain text
        label = "Your answer" if m["role"] == "assistant" else "Then"
        prompt += f"\n\n{label}:\n{m['content']}"
    started = time.monotonic()
    try:
        code, answer, err = _run_bounded(argv, prompt.encode("utf-8"), timeout, cfg["llm.max_answer_bytes"])
    except subprocess.TimeoutExpired:
        raise _failed(home, log, started, f"{argv[0]} timed out after {timeout} s", backend) from None
    except TooLarge as e:
        raise _failed(home, log, started, f"{argv[0]}: {e}", backend) from None
    except OSError as e:
        raise _failed(home, log, started, f"{argv[0]}: {e.strerror}", backend) from None
    log["latency_ms"] = round((time.monotonic() - started) * 1000)
    if code != 0:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        why = f"{argv[0]} exited {code}" + (f": {_one_line(lines[-1])}" if lines else "")
        raise _failed(home, log, started, why, backend)
    return answer.decode("utf-8", "replace"), None, log


STDERR_KEPT = 65536  # bytes of a model command's stderr kept: its last line goes into the message


def _run_bounded(argv: list, data: bytes, timeout: float, cap: int) -> tuple[int, bytes, bytes]:
    """Run `argv` with `data` on stdin: its exit status, stdout and the tail of its stderr.
    TooLarge past `cap` bytes of stdout, subprocess.TimeoutExpired after `timeout` seconds;
    either way the command is killed. (subprocess.run would hold all it prints.)"""
    import selectors
    import subprocess

    deadline = time.monotonic() + timeout
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err, view = bytearray(), bytearray(), memoryview(data)
    try:
        with selectors.DefaultSelector() as selector:
            os.set_blocking(proc.stdin.fileno(), False)  # a full pipe must not stall the reading
            selector.register(proc.stdin, selectors.EVENT_WRITE)
            selector.register(proc.stdout, selectors.EVENT_READ)
            selector.register(proc.stderr, selectors.EVENT_READ)
            while selector.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(argv, timeout)
                for key, _ in selector.select(left):
                    pipe = key.fileobj
                    if pipe is proc.stdin:
                        try:
                            view = view[os.write(pipe.fileno(), view):]
                        except BlockingIOError:
                            continue
                        except BrokenPipeError:  # it stopped reading: what it prints still counts
                            view = view[:0]
                        if not view:
                            selector.unregister(pipe)
                            pipe.close()
                        continue
                    chunk = os.read(pipe.fileno(), 65536)
                    if not chunk:
                        selector.unregister(pipe)
                        continue
                    if pipe is proc.stdout:
                        out += chunk
                        if len(out) > cap:
                            raise _too_large(cap)
                    else:
                        err += chunk
                        del err[:-STDERR_KEPT]
        return proc.wait(max(0.0, deadline - time.monotonic())), bytes(out), bytes(err)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            pipe.close()


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()[:300]
