"""`anima mcp`: the agent's tools, the prompt and the self blocks over MCP on stdio.

An adapter and nothing more: a tool call runs `anima.host.tools.call`, exactly what `anima call`
runs (the same checks and refusals), and the prompt is `anima.host.prompt.build`, byte for byte
what `anima prompt` prints. The low-level SDK server is used rather than its decorator
layer so that the tools keep the very JSON schemas `anima tools --json` prints instead of
schemas re-derived from Python signatures.
"""

import json
import os
import traceback

from anima.host import tools
from anima.infra import clock, fs
from anima.infra.errors import SOFTWARE, AnimaError
from anima.self import blocks

PROMPT_URI = "anima://prompt"
PROMPT_NAME = "anima"
BLOCK_URI = "anima://self/"
BLOCK_TEMPLATE = BLOCK_URI + "{key}"  # RFC 6570: the block URIs anima://self/KEY
PROMPT_DESCRIPTION = ("What `anima prompt` prints: the self blocks, self-notes, what is known about the person "
                      "and the project context. Put it into the system prompt.")
INSTRUCTIONS = ("anima keeps your persistent first-person self. Read the resource anima://prompt (or the "
                "prompt 'anima') into your system prompt; use the tools to write self-notes, recall past "
                "conversations and your own past (self_recall), propose facts about the user, read or "
                "rewrite your self blocks, "
                "propose a change to your personality baseline, which a person accepts, and take the "
                "replies you decided from your outbox (outbox_take), acknowledging each once sent "
                "(outbox_ack).")


def serve(home, cwd: str, warn) -> None:
    """Answer one MCP client on stdin/stdout until stdin closes, or until the client is gone
    (its end of stdout closed while a call runs): either is the end of the session."""
    import anyio

    try:
        anyio.run(_serve, home, cwd, warn)
    except BaseExceptionGroup as group:
        _, rest = group.split(_GONE)
        if rest is not None:
            raise rest from None


# What a write to a client that has gone raises
_GONE = (BrokenPipeError, ConnectionResetError)


def build_server(home, cwd: str, warn):
    """The SDK's low-level server with anima's handlers, whatever the transport (stdio here,
    Streamable HTTP in anima.host.mcp_http)."""
    from mcp.server.lowlevel import Server

    from anima import __version__

    return Server("anima", version=__version__, instructions=INSTRUCTIONS, **handlers(home, cwd, warn))


async def _serve(home, cwd, warn):
    from mcp.server.stdio import stdio_server

    server = build_server(home, cwd, warn)
    async with stdio_server() as (read_stream, write_stream):
        pending = set()
        answers = AnswerCounter(write_stream, pending)
        await server.run(DrainingReader(read_stream, pending, answers), answers,
                         server.create_initialization_options())


# The SDK ends the session as soon as stdin closes and cancels what is still running, so
# `printf REQUESTS | anima mcp` would lose the last answers. The two wrappers hold the end of
# input back until every request read has been answered (or cancelled by the client), at
# most DRAIN_SECONDS. They see only the transport's messages, none of the SDK's internals.
DRAIN_SECONDS = 60


class DrainingReader:
    """Also answers a line that is no JSON-RPC message (not JSON: -32700; JSON, but no request,
    notification or response: -32600), with the id null JSON-RPC 2.0 gives an answer to what
    has none: the SDK's stdio transport passes it to the server, which answers nothing, and
    the client would wait for its timeout. So is a request whose id is no string or integer
    ([1], null, 1.5, true): the transport reads it as a notification, its id dropped, and
    every MCP notification's method starts with notifications/."""

    def __init__(self, inner, pending: set, answers):
        self.inner, self.pending, self.answers = inner, pending, answers

    @property
    def last_context(self):  # the sender's context, for the SDK to run the handler in
        return getattr(self.inner, "last_context", None)

    async def receive(self):
        import anyio
        import mcp_types as types

        try:
            item = await self.inner.receive()
        except anyio.EndOfStream:
            with anyio.move_on_after(DRAIN_SECONDS):
                while self.pending:
                    await anyio.sleep(0.01)
            raise
        if isinstance(item, Exception):
            await self.answers.send(_unreadable(item))
            return item
        message = getattr(item, "message", None)
        if isinstance(message, types.JSONRPCNotification) and not message.method.startswith("notifications/"):
            await self.answers.send(_invalid(types.INVALID_REQUEST))
            return item
        if isinstance(message, types.JSONRPCRequest):
            self.pending.add(message.id)
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            cancelled = (message.params or {}).get("requestId")
            if isinstance(cancelled, str | int) and not isinstance(cancelled, bool):  # (true is no id, nor [1])
                self.pending.discard(cancelled)
        return item

    async def aclose(self):
        await self.inner.aclose()

    def __aiter__(self):
        return self

    async def __anext__(self):
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.aclose()


def _unreadable(error: Exception):
    """The JSON-RPC error answering a line the transport could not read as a message."""
    import mcp_types as types

    not_json = any(e.get("type") == "json_invalid" for e in getattr(error, "errors", lambda: [])())
    return _invalid(types.PARSE_ERROR if not_json else types.INVALID_REQUEST)


def _invalid(code: int):
    """JSON-RPC's error `code` (-32700 or -32600) for a message it cannot answer by its id."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    what = "Parse error" if code == types.PARSE_ERROR else "Invalid Request"
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=what)))


class AnswerCounter:
    def __init__(self, inner, pending: set):
        self.inner, self.pending = inner, pending

    async def send(self, item):
        import mcp_types as types

        await self.inner.send(item)
        if isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError):
            self.pending.discard(item.message.id)

    async def aclose(self):
        await self.inner.aclose()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.aclose()


def handlers(home, cwd, warn) -> dict:
    import mcp_types as types
    from mcp.shared.exceptions import MCPError

    def text(value: str):
        return types.TextContent(type="text", text=value)

    def prompt_text() -> str:
        from anima.host import prompt

        try:
            result = prompt.build(home, cwd, None, None, clock.now())  # each request reads the clock once
        except AnimaError as e:
            raise MCPError(types.INTERNAL_ERROR, str(e)) from None
        for message in result.warnings:
            warn(message)
        return result.text

    def failure(message: str, code: int):
        """What `anima call` prints for a failure, as a tool error the model reads; the line on stderr too."""
        warn(message)
        return types.CallToolResult(content=[text(message)], structured_content={"error": message, "exit": code},
                                    is_error=True)

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, description=t.description, input_schema=tools.parameters(t),
                       output_schema=tools.output_schema(t),
                       annotations=types.ToolAnnotations(
                           read_only_hint=t.hints["read_only"], destructive_hint=t.hints["destructive"],
                           idempotent_hint=t.hints["idempotent"], open_world_hint=t.hints["open_world"]))
            for t in tools.TOOLS])

    async def call_tool(ctx, params):
        fs.CHANGED.clear()  # what this call writes is what git.autocommit commits for it
        try:
            result = tools.call(home, params.name, params.arguments or {}, clock.now(), lambda m: warn(f"warning: {m}"))
            if os.path.exists(os.path.join(home.root, ".git")):
                from anima.infra import git

                git.after(home, ["mcp", params.name], None, warn)
        except AnimaError as e:
            return failure(str(e), e.exit_code)
        except Exception as e:  # a bug in anima: the host gets one line, the session goes on
            if os.environ.get("ANIMA_DEBUG") == "1":
                traceback.print_exc()
            return failure(f"internal error: {type(e).__name__}: {e}", SOFTWARE)
        return types.CallToolResult(content=[text(json.dumps(result, ensure_ascii=False))], structured_content=result)

    async def list_resources(ctx, params):
        found = [types.Resource(name="prompt", uri=PROMPT_URI, mime_type="text/markdown",
                                description=PROMPT_DESCRIPTION)]
        for b in _read_blocks(home, types, MCPError):
            found.append(types.Resource(name=b.key, title=b.title, uri=BLOCK_URI + b.key, mime_type="text/markdown",
                                        description=f"My self block {b.key}" + (" (locked)" if b.locked else "")))
        return types.ListResourcesResult(resources=found)

    async def list_resource_templates(ctx, params):
        return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
            name="self_block", title="My self block", uri_template=BLOCK_TEMPLATE, mime_type="text/markdown",
            description="My self block KEY, its Markdown body: " + ", ".join(blocks.KEYS))])

    async def complete(ctx, params):
        """The keys of the blocks there are, for the template's {key} (as a host's picker asks)."""
        values = []
        if getattr(params.ref, "uri", None) == BLOCK_TEMPLATE and params.argument.name == "key":
            values = [b.key for b in _read_blocks(home, types, MCPError) if b.key.startswith(params.argument.value)]
        return types.CompleteResult(completion=types.Completion(values=values, total=len(values), has_more=False))

    async def read_resource(ctx, params):
        uri = str(params.uri)
        if uri == PROMPT_URI:
            body = prompt_text()
        else:
            key = uri.removeprefix(BLOCK_URI)
            block = None
            if uri.startswith(BLOCK_URI) and key in blocks.KEYS:
                block = _read_blocks(home, types, MCPError, key)
            if not block:
                raise MCPError(types.INVALID_PARAMS, f"no such resource: {uri}")
            body = block[0].body + "\n"  # as `anima self get KEY` prints it
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown",
                                                                             text=body)])

    async def list_prompts(ctx, params):
        return types.ListPromptsResult(prompts=[types.Prompt(name=PROMPT_NAME, description=PROMPT_DESCRIPTION)])

    async def get_prompt(ctx, params):
        if params.name != PROMPT_NAME:
            raise MCPError(types.INVALID_PARAMS, f"unknown prompt {params.name!r}; prompts: {PROMPT_NAME}")
        return types.GetPromptResult(description=PROMPT_DESCRIPTION,
                                     messages=[types.PromptMessage(role="user", content=text(prompt_text()))])

    return {"on_list_tools": list_tools, "on_call_tool": call_tool, "on_list_resources": list_resources,
            "on_list_resource_templates": list_resource_templates, "on_read_resource": read_resource,
            "on_list_prompts": list_prompts, "on_get_prompt": get_prompt, "on_completion": complete}


def _read_blocks(home, types, error, key: str | None = None) -> list:
    try:
        if key is None:
            return blocks.read_all(home.blocks)
        block = blocks.read(home.blocks, key)
        return [] if block is None else [block]
    except AnimaError as e:
        raise error(types.INTERNAL_ERROR, str(e)) from None
