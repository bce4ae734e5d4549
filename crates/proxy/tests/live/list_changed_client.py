"""A Python MCP SDK client for `correct_hints` (`hintaudit proxy --correct-hints`:
crates/proxy/tests/live/correct.rs; the layer: tests/live/correct.rs).

Connects over streamable HTTP to the URL in argv[1] with a message handler, lists the tools,
calls the tool argv[2] names (default get_item) with id=1, waits (at most 60 s) for notifications/tools/list_changed, lists
again, and prints one JSON object: whether tools.listChanged was advertised, whether the
notification came, and the annotations of every tool before and after.
"""

import json
import sys

import anyio
import mcp.types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, tool: str) -> None:
    changed = anyio.Event()

    async def on_message(message) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with streamable_http_client(url) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write, message_handler=on_message) as session:
            init = await session.initialize()
            tools = init.capabilities.tools
            advertised = bool(tools and tools.list_changed)

            def annotations(listing) -> dict:
                return {
                    t.name: (t.annotations.model_dump(by_alias=True, exclude_none=True)
                             if t.annotations else None)
                    for t in listing.tools
                }

            before = annotations(await session.list_tools())
            await session.call_tool(tool, {"id": 1})
            told = False
            with anyio.move_on_after(60):
                await changed.wait()
                told = True
            after = annotations(await session.list_tools())
    print(json.dumps({"advertised": advertised, "told": told, "before": before, "after": after}))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "get_item")
