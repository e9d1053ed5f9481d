"""signoff between an MCP client and an MCP server, end to end, in one file.

    pip install 'signoff[mcp]'
    python examples/mcp_proxy.py

It writes a policy, then starts ``signoff mcp-proxy -- python mcp_proxy.py --serve``
(this file again, as a tiny MCP server with a ``read_note`` and a ``delete_note``
tool) and talks to it with the official MCP client: a read is allowed, a path
outside the workspace is denied, a delete (which the server marks destructive) is
asked — and answered in the client's elicitation dialog, here a function that
accepts. Then it checks the audit chain.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

SERVER_FLAG = "--serve"


# ---- the MCP server (the official SDK's low-level server) ---------------------------------------

def serve() -> None:
    import mcp.types as types  # noqa: PLC0415
    from mcp.server.lowlevel import Server  # noqa: PLC0415
    from mcp.server.stdio import stdio_server  # noqa: PLC0415

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        path = {"type": "object", "properties": {"path": {"type": "string"}}}
        return types.ListToolsResult(tools=[
            types.Tool(name="read_note", input_schema=path,
                       annotations=types.ToolAnnotations(read_only_hint=True)),
            types.Tool(name="delete_note", input_schema=path,
                       annotations=types.ToolAnnotations(destructive_hint=True))])

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        target = Path(str((params.arguments or {}).get("path")))
        if params.name == "read_note":
            text = target.read_text()
        else:
            target.unlink()
            text = f"deleted {target.name}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    server: Server[Any] = Server("notes", on_list_tools=list_tools, on_call_tool=call_tool)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


# ---- the client, through the proxy --------------------------------------------------------------

POLICY = """\
[policy]
unknown_tools = "allow"

[mcp]
server = "notes"               # the policy knows the tools as notes__read_note, ...

[workspace]
root = "{root}"
outside = "deny"

[tools.notes__read_note]
paths = ["path"]
[tools.notes__delete_note]
paths = ["path"]
writes = true
"""


async def client(directory: Path) -> None:
    import mcp.types as types  # noqa: PLC0415
    from mcp import Client, StdioServerParameters  # noqa: PLC0415
    from mcp.client.stdio import stdio_client  # noqa: PLC0415

    root = directory / "ws"
    root.mkdir()
    (root / "todo.md").write_text("buy milk\n")
    (directory / "signoff.toml").write_text(POLICY.format(root=root))
    signoff = Path(sys.executable).with_name("signoff")
    params = StdioServerParameters(
        command=str(signoff), cwd=str(directory),
        args=["mcp-proxy", "--db", str(directory / "signoff.db"), "--",
              sys.executable, str(Path(__file__).resolve()), SERVER_FLAG])

    async def dialog(_ctx: Any, request: types.ElicitRequestParams) -> types.ElicitResult:
        print("  the dialog shows:", request.message.splitlines()[0])
        return types.ElicitResult(action="accept", content={})

    async with Client(stdio_client(params), elicitation_callback=dialog) as session:
        for name, path in (("read_note", root / "todo.md"), ("read_note", "/etc/passwd"),
                           ("delete_note", root / "todo.md")):
            result = await session.call_tool(name, {"path": str(path)})
            first = result.content[0].text if result.content else ""  # type: ignore[union-attr]
            print(f"{name}({path}): {'error' if result.is_error else 'ok'}: {first[:90]}")
    print("todo.md still there:", (root / "todo.md").exists())


def main() -> None:
    from signoff import SqliteStore  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as tmp:
        anyio.run(client, Path(tmp))
        store = SqliteStore(str(Path(tmp) / "signoff.db"))
        try:
            print("audit verified:", store.verify_audit().ok)
        finally:
            store.close()


if __name__ == "__main__":
    if SERVER_FLAG in sys.argv:
        serve()
    else:
        main()
