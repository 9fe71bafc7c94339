import json
import sys

import click

from anima.commands._io import json_option, out, out_json, read_input, warn
from anima.infra import jsontext


@click.command("tools")
@json_option("Print the OpenAI function-calling schemas as one JSON array.")
@click.option("--strict", is_flag=True,
              help="Print them for strict mode: \"strict\": true on each and, for OpenAI's, every property required, "
                   "an optional one nullable, null meaning not given (implies --json).")
@click.option("--format", "shape", type=click.Choice(["openai", "anthropic"]), default=None,
              help="The JSON shape: openai's function tools, or anthropic's {name, description, input_schema} "
                   "of the Messages API (implies --json).  [default: openai]")
def tools(as_json, strict, shape):
    """List the tools an agent may call: NAME<TAB>description, or --json the schemas.

    self_note, memory_recall, self_recall (her own past), memory_stage, get_self_blocks,
    update_self_block (which only proposes a change to personality_baseline), outbox_take,
    outbox_ack. Approving, retiring, promoting and accepting a proposal are a person's
    commands, never tools.
    """
    from anima.host import tools as table

    if as_json or strict or shape:
        schemas = table.anthropic(strict) if shape == "anthropic" else table.openai(strict)
        out(json.dumps(schemas, ensure_ascii=False, indent=1) + "\n")
        return
    for t in table.TOOLS:
        out(f"{t.name}\t{t.description}\n")


@click.command("call")
@click.argument("name")
@click.pass_obj
def call(home, name):
    """Run tool NAME with the arguments JSON object on stdin; print its result as JSON.

    A failure prints {"error": ..., "exit": N} on stdout as well (for the host to hand back
    to the model) and exits N: 2 for an unknown tool or bad arguments, 77 for a refusal.
    """
    from anima.host import tools
    from anima.infra import clock
    from anima.infra.errors import AnimaError, DataError

    try:
        raw = read_input(None, 1024 * 1024, f"call {name}", "as a JSON object on stdin")
        try:
            args = jsontext.loads(raw) if raw.strip() else {}
        except ValueError as e:
            raise DataError(f"call {name}: the arguments are not valid JSON ({e})") from None
        result = tools.call(home, name, args, clock.now(), lambda m: warn(f"warning: {m}"))
    except AnimaError as e:
        out_json(tools.error(e))
        warn(str(e))
        sys.exit(e.exit_code)
    out_json(result)
