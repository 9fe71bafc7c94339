"""Transcript formats of other hosts, from the shapes their real files have: Codex CLI rollouts,
Responses-API items, `{"messages": [...]}` lines, and the harness text Claude Code writes in
the person's role. What each reads and skips, the same through the scan, the index and
`anima stage`, and a source that yields no turn named by recall and doctor.

Each fixture says where its shape was seen. The texts the person never said are in capitals
(or are Claude Code's and Codex's own words), so that a test can tell they were not read.
"""

import json
import os

import pytest

from anima.recall import sessions

from conftest import file_time

T = "2026-11-02T09:00:0{}.000Z"


def jsonl(*records) -> bytes:
    return b"".join(json.dumps(r, ensure_ascii=False).encode("utf-8") + b"\n" for r in records)


def put(path, data: bytes) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    t = int(file_time(-3600) * 1e9)  # settled, and cold for the index
    os.utime(path, ns=(t, t))
    return str(path)


def rows(path):
    session = sessions.read_session(str(path), None, 0, lambda m: None)
    return session, [(t.line, t.who, t.text) for t in session.turns]


# --- Codex CLI ------------------------------------------------------------------------------
# A rollout as openai/codex's rollout recorder writes it (codex-rs RolloutLine {timestamp, type,
# payload}; session_meta as Codex 0.46 wrote it, seen in a `codex exec` rollout quoted by
# jnarowski/agentcmd .agent/research/codex/format-comparison.md, and as a Codex 0.60.1 rollout quoted
# in a public prompt log shows it, with the environment context a user message of its own). The
# developer message and the AGENTS.md / environment parts are what codex-rs core/src/context writes
# (the markers of contextual_user_message.rs); event_msg repeats the messages (user_message,
# agent_message).

def item(line_type, n, **payload):
    return {"timestamp": T.format(n), "type": line_type, "payload": payload}


def said(role, n, *texts):
    part = "input_text" if role != "assistant" else "output_text"
    return item("response_item", n, type="message", role=role, content=[{"type": part, "text": t} for t in texts])


CODEX = [
    item("session_meta", 0, id="019a2d7a-41c4-78b1-b7cc-a45d62a89cd5", timestamp=T.format(0), cwd="/home/p",
         originator="codex_cli_rs", cli_version="0.46.0", instructions=None, source="cli", git={}),        # 1
    said("developer", 1, "<permissions instructions>SANDBOX RULES</permissions instructions>"),            # 2
    said("user", 1, "# AGENTS.md instructions for /home/p\n\n<INSTRUCTIONS>\nAGENTS FILE\n</INSTRUCTIONS>",
         "<environment_context>\n  <cwd>/home/p</cwd>\n  <shell>bash</shell>\n</environment_context>"),       # 3
    said("user", 2, "I keep my tea notes in notes/tea.md."),                                                # 4
    item("event_msg", 2, type="user_message", message="I keep my tea notes in notes/tea.md.", kind="plain"),  # 5
    item("turn_context", 2, cwd="/home/p", approval_policy="on-request", model="gpt-5-codex", summary="auto"),  # 6
    item("response_item", 3, type="reasoning", summary=[{"type": "summary_text", "text": "SECRET REASONING"}],
         content=None, encrypted_content="gAAAA"),                                                         # 7
    item("response_item", 3, type="function_call", name="shell", arguments='{"command":["cat","notes/tea.md"]}',
         call_id="call_1"),                                                                                 # 8
    item("response_item", 4, type="function_call_output", call_id="call_1",
         output='{"output":"TOOL OUTPUT","metadata":{"exit_code":0}}'),                                    # 9
    said("assistant", 5, "Your tea notes are in notes/tea.md."),                                            # 10
    item("event_msg", 5, type="agent_message", message="Your tea notes are in notes/tea.md."),              # 11
    item("event_msg", 5, type="token_count", info=None),                                                    # 12
    said("user", 6, "<environment_context>\n  <cwd>/home/q</cwd>\n</environment_context>",
         "and green tea after lunch"),                                                                      # 13
    said("user", 7, "<user_shell_command>\n<command>ls</command>\n<result>SHELL OUTPUT</result>\n"
         "</user_shell_command>"),                                                                          # 14
    item("compacted", 8, message="COMPACTION SUMMARY"),                                                     # 15
]
NEVER_SAID = ("SANDBOX", "AGENTS FILE", "environment_context", "SECRET", "TOOL OUTPUT", "SHELL OUTPUT",
              "COMPACTION", "REMINDER", "CLAUDE.MD", "HOOK", "Request interrupted", "No response requested",
              "API Error", "continued from", "Caveat", "compact", "barley-cli", "BASH")


def test_codex_rollout(home):
    path = put(home / "codex" / "2026" / "11" / "02" / "rollout-2026-11-02T09-00-00-019a.jsonl", jsonl(*CODEX))
    session, got = rows(path)
    assert (session.id, session.format, session.delegated) == ("019a2d7a-41c4-78b1-b7cc-a45d62a89cd5", "codex", False)
    assert got == [(4, "user", "I keep my tea notes in notes/tea.md."), (10, "me", "Your tea notes are in notes/tea.md."),
                   (13, "user", "and green tea after lunch")]
    assert [t.ts for t in session.turns] == [1793610002.0, 1793610005.0, 1793610006.0]
    assert not [s for s in NEVER_SAID if any(s in t.text for t in session.turns)]


def test_a_codex_sub_agent_rollout_is_delegated(home):
    # session_meta of a spawned sub-agent: `"source": {"subagent": {"thread_spawn": {...}}}` (codex-rs
    # SessionSource::SubAgent, as rollouts of Codex 0.142 show it).
    meta = item("session_meta", 0, id="019f-child", session_id="019f-root", parent_thread_id="019f-root",
                source={"subagent": {"thread_spawn": {"parent_thread_id": "019f-root", "depth": 1}}})
    session, got = rows(put(home / "codex" / "rollout-child.jsonl", jsonl(meta, *CODEX[3:])))
    assert (session.id, session.delegated) == ("019f-child", True)
    assert {who for _, who, _ in got} == {"delegated"}


# --- Responses-API items --------------------------------------------------------------------
# Items as the Responses API returns and takes them (`output` items with id, status, annotations;
# `input` items with input_text and input_image parts), kept one a line; the first line is a
# reasoning item, which no other format has. A Codex rollout before 0.32 was such items after a
# first {"id", "timestamp", "instructions"} line, with `<user_instructions>` as a user message.

RESPONSES = [
    {"id": "rs_01", "type": "reasoning", "summary": [{"type": "summary_text", "text": "SECRET REASONING"}]},  # 1
    {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "Which tea keeps me awake?"},
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]},                                 # 2
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "recall", "arguments": "{}"},       # 3
    {"type": "function_call_output", "call_id": "call_1", "output": "TOOL OUTPUT"},                          # 4
    {"id": "msg_02", "type": "message", "status": "completed", "role": "assistant",
     "content": [{"type": "output_text", "text": "Green tea, after dinner.", "annotations": []}]},           # 5
    {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "SANDBOX RULES"}]},     # 6
    {"type": "message", "role": "user", "content": "A plain string works too."},                             # 7
]
LEGACY_CODEX = [
    {"id": "6f1b", "timestamp": "2025-05-01T10:00:00.000Z", "instructions": None},                           # 1
    {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "<user_instructions>\n\nAGENTS FILE\n\n</user_instructions>"}]},      # 2
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Rename the tea module."}]},  # 3
    {"record_type": "state"},                                                                                # 4
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Renamed."}]},      # 5
]


def test_responses_items(home):
    session, got = rows(put(home / "logs" / "resp-7.jsonl", jsonl(*RESPONSES)))
    assert (session.id, session.format) == ("resp-7", "responses")
    assert got == [(2, "user", "Which tea keeps me awake?"), (5, "me", "Green tea, after dinner."),
                   (7, "user", "A plain string works too.")]
    session, got = rows(put(home / "logs" / "rollout-2025-05-01.jsonl", jsonl(*LEGACY_CODEX)))
    assert session.format == "responses"
    assert got == [(3, "user", "Rename the tea module."), (5, "me", "Renamed.")]


# --- {"messages": [...]} lines ----------------------------------------------------------------
# OpenAI's fine-tuning / evals JSONL: one conversation a line, `{"messages": [...]}`; and request
# logs that keep each chat-completions request body a line (`{"model", "messages", ...}`).

MESSAGES = [
    {"messages": [{"role": "system", "content": "SANDBOX RULES"},
                  {"role": "user", "content": "I switched to barley tea."},
                  {"role": "assistant", "content": "Barley tea it is."},
                  {"role": "user", "content": [{"type": "text", "text": "It has no caffeine."}]}]},        # 1
    {"model": "gpt-4o-mini", "messages": [{"role": "assistant", "content": "Good morning."}], "temperature": 0},  # 2
    {"messages": [{"role": "tool", "content": "TOOL OUTPUT"}]},                                            # 3
]


def test_messages_lines(home):
    session, got = rows(put(home / "logs" / "ft.jsonl", jsonl(*MESSAGES)))
    assert session.format == "messages"
    assert got == [(1, "user", "I switched to barley tea.\nIt has no caffeine."), (2, "me", "Good morning.")]


# --- Claude Code harness text ------------------------------------------------------------------
# Lines the real Claude Code CLI wrote in the user's role (issue 16: `/compact`, an MCP prompt),
# and as transcripts under ~/.claude/projects show them: the local-command caveat (isMeta),
# slash commands and their stdout, `!` shell commands (bash-input / bash-stdout), hook output,
# interruption notices, the compaction summary (isCompactSummary, isVisibleInTranscriptOnly; older
# versions without the flag), CLAUDE.md in a <system-reminder> part, and synthetic assistant
# lines (`"model": "<synthetic>"`, isApiErrorMessage).

def cc(kind, content, n, model="claude-opus-4-1-20250805", **extra):
    message = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(model=model, id=f"msg_{n}", type="message")
    return {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/p", "sessionId": "cc-h",
            "version": "1.0.80", "gitBranch": "main", "type": kind, "message": message, "uuid": f"u{n}",
            "timestamp": T.format(n % 10), **extra}


CAVEAT = ("<local-command-caveat>Caveat: The messages below were generated by the user while running local "
          "commands. DO NOT respond to these messages or otherwise consider them in your response unless the "
          "user explicitly asks you to.</local-command-caveat>")
REMINDER = ("<system-reminder>\nAs you answer the user's questions, you can use the following context:\n"
            "# claudeMd\nContents of /p/CLAUDE.md (project instructions):\n\nCLAUDE.MD SAYS USE BARLEY-CLI\n"
            "</system-reminder>")
COMPACT = ("This session is being continued from a previous conversation that ran out of context. The "
           "conversation is summarized below:\nAnalysis: SHE LIKES TEA.")
CLAUDE = [
    {"type": "summary", "summary": "Tea talk", "leafUuid": "u9"},                                          # 1
    cc("user", CAVEAT, 2, isMeta=True),                                                                     # 2
    cc("user", "<command-name>/compact</command-name>\n            <command-message>compact</command-message>\n"
               "            <command-args></command-args>", 3),                                             # 3
    cc("user", "<local-command-stdout>Compacted. ctrl+r to see full summary</local-command-stdout>", 4),   # 4
    cc("user", COMPACT, 5, isCompactSummary=True, isVisibleInTranscriptOnly=True),                          # 5
    cc("user", COMPACT, 6),                                                                                 # 6 older
    cc("user", [{"type": "text", "text": REMINDER}, {"type": "text", "text": "I drink barley tea at night."}], 7),  # 7
    cc("user", "Remind me to buy oolong.\n\n" + REMINDER, 8),                                              # 8
    cc("user", "<bash-input>ls ~/tea</bash-input>", 9),                                                     # 9
    cc("user", "<bash-stdout>BASH OUTPUT</bash-stdout><bash-stderr></bash-stderr>", 10),                    # 10
    cc("user", "<user-prompt-submit-hook>HOOK OUTPUT</user-prompt-submit-hook>", 11),                       # 11
    cc("user", "[Request interrupted by user]", 12),                                                        # 12
    cc("user", [{"type": "text", "text": "[Request interrupted by user for tool use]"}], 13),               # 13
    cc("assistant", [{"type": "text", "text": "No response requested."}], 14, model="<synthetic>"),        # 14
    cc("assistant", [{"type": "text", "text": "API Error: 529 Overloaded"}], 15, model="<synthetic>",
       isApiErrorMessage=True),                                                                             # 15
    cc("assistant", [{"type": "text", "text": "Oolong is on the list."}], 16),                              # 16
    cc("user", "<command-message>anima:recall is running…</command-message>\n"
               "<command-name>/anima:recall (MCP)</command-name>\n<command-args>tea</command-args>", 17),  # 17
]


def test_claude_code_harness_text_is_nobodys_words(home):
    session, got = rows(put(home / "projects" / "-p" / "cc-h.jsonl", jsonl(*CLAUDE)))
    assert (session.id, session.format) == ("cc-h", "claude")
    assert got == [(7, "user", "I drink barley tea at night."), (8, "user", "Remind me to buy oolong."),
                   (16, "me", "Oolong is on the list.")]
    assert not [s for s in NEVER_SAID if any(s.lower() in t.text.lower() for t in session.turns)]


def test_harness_text_is_not_found_by_recall_nor_stageable_with_or_without_the_index(run, home):
    run("init", "--lang", "en")
    put(home / "sessions" / "claude" / "cc-h.jsonl", jsonl(*CLAUDE))
    put(home / "sessions" / "codex" / "rollout-x.jsonl", jsonl(*CODEX))
    for indexed in (False, True):
        if indexed:
            assert run("index", "rebuild").exit_code == 0 and run("index", "on").exit_code == 0
        for harness in ("barley-cli", "compacted", "overloaded", "interrupted", "sandbox", "environment_context"):
            r = run("recall", harness)
            assert (r.exit_code, r.stdout) == (1, ""), (indexed, harness)
        found = [json.loads(x) for x in run("recall", "--json", "barley").stdout.splitlines()]
        assert [(x["session"], x["line"], x["who"]) for x in found] == [("cc-h", 7, "user")]
        assert run("recall", "--json", "lunch").stdout.count("\n") == 1
    for line, quote in ((7, "CLAUDE.MD SAYS USE BARLEY-CLI"), (8, "the following context"), (3, "/compact"),
                        (15, "API Error"), (5, "SHE LIKES TEA")):
        r = run("stage", "--session", "cc-h", "--line", str(line), "--quote", quote)
        assert r.exit_code == 77, (line, quote, r.stderr)
    r = run("stage", "--session", "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5", "--line", "3", "--quote", "AGENTS FILE")
    assert r.exit_code == 77
    assert run("facts").stdout == ""
    r = run("stage", "--session", "cc-h", "--line", "7", "--quote", "I drink barley tea at night.")
    assert r.exit_code == 0 and run("facts").stdout.count("\n") == 1


# Trimmed from a real ~/.claude/projects snapshot written by Claude Code 2.1.39 (marot/spotter,
# test/fixtures/transcripts/4d5611e5-….jsonl and its subagents/agent-acompact-e1f845.jsonl): the
# first line a file-history-snapshot, hook progress lines, an assistant text that is blank, and
# the agent Claude Code runs to compact the conversation, whose "user" lines are a hook's context
# (isMeta) and Claude Code's own compaction prompt (not marked at all).

def real(kind, n, **extra):
    base = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/home/USER/p",
            "sessionId": "4d5611e5-241a-462a-8d15-5122611a9569", "version": "2.1.39", "gitBranch": "p",
            "type": kind, "uuid": f"u{n}", "timestamp": f"2026-02-12T16:02:2{n % 10}.284Z"}
    return {**base, **extra}


REAL_MAIN = [
    {"type": "file-history-snapshot", "messageId": "f509", "snapshot": {"messageId": "f509", "trackedFileBackups": {},
     "timestamp": "2026-02-12T16:02:25.227Z"}, "isSnapshotUpdate": False},                                 # 1
    real("progress", 2, data={"type": "hook_progress", "hookEvent": "SessionStart", "hookName": "SessionStart:startup",
                              "command": "bd prime"}, toolUseID="t0", parentToolUseID="t0"),              # 2
    real("user", 3, message={"role": "user", "content": "Work on bead spotter-dov. Start with the first ready task."},
         thinkingMetadata={"maxThinkingTokens": 31999}, todos=[], permissionMode="bypassPermissions"),    # 3
    real("assistant", 4, message={"model": "claude-opus-4-6", "id": "msg_01", "type": "message", "role": "assistant",
                                  "content": [{"type": "text", "text": "\n\n"}], "stop_reason": None},
         requestId="req_01"),                                                                               # 4
    real("assistant", 5, message={"model": "claude-opus-4-6", "id": "msg_01", "type": "message", "role": "assistant",
                                  "content": [{"type": "thinking", "thinking": "SECRET REASONING",
                                               "signature": "[REDACTED_SIGNATURE]"}]}),                    # 5
    real("user", 6, message={"role": "user", "content": [{"tool_use_id": "toolu_01", "type": "tool_result",
                                                          "content": "TOOL OUTPUT", "is_error": False}]},
         toolUseResult={"stdout": "TOOL OUTPUT"}),                                                          # 6
]
COMPACT_PROMPT = ("Your task is to create a detailed summary of the conversation so far, paying close attention to "
                  "the user's explicit requests and your previous actions.\nCOMPACTION PROMPT")
REAL_COMPACT_AGENT = [
    real("user", 1, isSidechain=True, agentId="acompact-e1f845", isMeta=True,
         message={"role": "user", "content": "<system-reminder>\nPostToolUse:Edit hook additional context: "
                                             "[COMPILE ERROR]\nHOOK OUTPUT\n</system-reminder>"}),          # 1
    real("user", 2, isSidechain=True, agentId="acompact-e1f845",
         message={"role": "user", "content": COMPACT_PROMPT}),                                             # 2
    real("assistant", 3, isSidechain=True, agentId="acompact-e1f845",
         message={"model": "claude-opus-4-6", "role": "assistant", "type": "message",
                  "content": [{"type": "text", "text": "<analysis>COMPACTION SUMMARY</analysis>"}]}),      # 3
]


def test_a_real_claude_code_project(home):
    root = home / "projects" / "-home-USER-p"
    session, got = rows(put(root / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl", jsonl(*REAL_MAIN)))
    assert (session.id, session.format) == ("4d5611e5-241a-462a-8d15-5122611a9569", "claude")
    assert got == [(3, "user", "Work on bead spotter-dov. Start with the first ready task.")]
    agent = root / "4d5611e5-241a-462a-8d15-5122611a9569" / "subagents" / "agent-acompact-e1f845.jsonl"
    session, got = rows(put(agent, jsonl(*REAL_COMPACT_AGENT)))
    assert (session.id, got) == ("4d5611e5-241a-462a-8d15-5122611a9569.agent-acompact-e1f845", [])


# --- a source that yields no turn ---------------------------------------------------------------

def test_a_source_that_yields_no_turn_is_named_by_recall_and_doctor(run, home, tmp_path):
    run("init", "--lang", "en")
    put(home / "sessions" / "s1.jsonl", b'{"role": "user", "content": "I like tea.", "ts": "2026-11-02T09:00:00Z"}\n')
    odd = tmp_path / "odd"
    for n in range(3):  # a format no reader knows
        put(odd / f"x{n}.jsonl", b'{"event": "prompt", "text": "tea"}\n')
    quiet = tmp_path / "quiet"
    put(quiet / "c.jsonl", jsonl(CLAUDE[0], CLAUDE[2]))  # Claude Code, but nothing the person said
    run("config", "set", "recall.sources", f"{odd}/*.jsonl,{quiet},{tmp_path}/none/*.jsonl,{home / 'sessions'}")
    r = run("recall", "tea")
    assert r.exit_code == 0 and r.stdout.startswith("s1\t1\t")
    assert r.stderr.splitlines() == [
        f"anima: warning: recall.sources {odd}/*.jsonl: 3 files, no turn read (format not recognised)",
        f"anima: warning: recall.sources {quiet}: 1 file, no turn read",
        f"anima: warning: recall.sources {tmp_path}/none/*.jsonl: no file found",
    ]
    assert run("recall", "tea").stderr == r.stderr  # from the summary as well
    assert run("index", "rebuild").exit_code == 0 and run("index", "on").exit_code == 0
    assert run("recall", "tea").stderr == r.stderr  # from the index
    run("index", "off")
    doctor = run("doctor")
    [line] = [x for x in doctor.stdout.splitlines() if x.startswith("WARN") and "recall" in x]
    assert f"{odd}/*.jsonl: 3 files" in line and f"{quiet}: 1 file" in line and "no file found" in line
    run("config", "set", "recall.sources", f"{home / 'sessions'}")
    assert run("recall", "tea").stderr == ""
    assert not [x for x in run("doctor").stdout.splitlines() if "recall" in x and x.startswith("WARN")]


@pytest.mark.parametrize("shape", ["codex", "responses", "messages"])
def test_other_hosts_as_recall_sources(run, home, tmp_path, shape):
    records = {"codex": CODEX, "responses": RESPONSES, "messages": MESSAGES}[shape]
    put(tmp_path / "logs" / "a.jsonl", jsonl(*records))
    run("init", "--lang", "en")
    run("config", "set", "recall.sources", str(tmp_path / "logs"))
    r = run("recall", "tea")
    assert r.exit_code == 0 and r.stderr == "" and r.stdout


def test_a_file_where_no_line_decided_is_read_anew_when_it_grows(run, home):
    """Its format is unknown, not anima's: an index update reads it whole when lines come that decide."""
    run("init", "--lang", "en")
    path = put(home / "sessions" / "later.jsonl", b'{"event": "start"}\n')
    assert run("index", "rebuild").exit_code == 0 and run("index", "on").exit_code == 0
    with open(path, "ab") as f:
        f.write(jsonl(cc("user", "Saffron tea, please.", 2)))
    t = int(file_time(-3600) * 1e9)
    os.utime(path, ns=(t, t))
    assert run("index", "update").exit_code == 0
    with_index = run("recall", "--json", "saffron").stdout
    assert [json.loads(x)["line"] for x in with_index.splitlines()] == [2]
    run("index", "off")
    assert run("recall", "--json", "saffron").stdout == with_index


def test_an_index_of_the_formats_before_is_rebuilt_by_the_next_update(run, home):
    """What is read of a file changed (harness text out): an index made before is not used, and
    `anima index update` (from cron or the tick) builds it anew rather than failing every time."""
    import sqlite3

    from anima.recall import index

    run("init", "--lang", "en")
    put(home / "sessions" / "claude" / "cc-h.jsonl", jsonl(*CLAUDE))
    assert run("index", "rebuild").exit_code == 0 and run("index", "on").exit_code == 0
    db = str(home / "index" / index.NAME)
    with sqlite3.connect(db) as con:
        con.execute("UPDATE meta SET value='4' WHERE key='version'")
    con.close()
    r = run("recall", "barley-cli")
    assert r.exit_code == 1 and "made by another version of anima" in r.stderr
    assert run("index", "status").exit_code == 65
    assert run("index", "update").exit_code == 0
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT value FROM meta WHERE key='version'").fetchone() == (index.version(),)
    con.close()
    r = run("recall", "--json", "barley")
    assert r.stderr == "" and [json.loads(x)["line"] for x in r.stdout.splitlines()] == [7]
