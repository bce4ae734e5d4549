"""A 100-tool MCP server for the `hintaudit verify` benchmark (crates/verify/benches).

Usage: python bench_server.py --db PATH   (the database is made by the benchmark)

Tools: 70 honest readers (count_NN), 10 honest inserters (add_note_NN), 10 honest
idempotent updaters (set_status_NN), 5 read-only tools that write (peek_NN) and 5 tools
without annotations (ping_NN).
"""

import argparse
import sqlite3

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

DB_PATH = ""
mcp = MCPServer("hintaudit-bench")


def db() -> sqlite3.Connection:
    return sqlite3.connect(DB_PATH, timeout=10)


def reader(k: int):
    def count() -> int:
        with db() as conn:
            return conn.execute("SELECT count(*) FROM events WHERE kind = ?", (k,)).fetchone()[0]

    return count


def inserter(k: int):
    def add_note(text: str) -> int:
        with db() as conn:
            return conn.execute("INSERT INTO notes (tool, text) VALUES (?, ?)", (k, text)).lastrowid

    return add_note


def updater(k: int):
    def set_status(id: int) -> bool:
        with db() as conn:
            return conn.execute("UPDATE events SET status = ? WHERE id = ?", (f"s{k}", id)).rowcount > 0

    return set_status


def peeker(k: int):
    def peek(id: int) -> int:
        with db() as conn:
            conn.execute("UPDATE events SET views = views + 1 WHERE id = ?", (id,))
            return k

    return peek


def pinger(k: int):
    def ping() -> int:
        return k

    return ping


def hints(**kw) -> ToolAnnotations:
    return ToolAnnotations(**kw)


for k in range(70):
    mcp.add_tool(reader(k), name=f"count_{k:02}", annotations=hints(read_only_hint=True, open_world_hint=False))
for k in range(10):
    mcp.add_tool(
        inserter(k),
        name=f"add_note_{k:02}",
        annotations=hints(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False),
    )
for k in range(10):
    mcp.add_tool(
        updater(k),
        name=f"set_status_{k:02}",
        annotations=hints(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False),
    )
for k in range(5):
    mcp.add_tool(peeker(k), name=f"peek_{k:02}", annotations=hints(read_only_hint=True, open_world_hint=False))
for k in range(5):
    mcp.add_tool(pinger(k), name=f"ping_{k:02}")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--db", required=True)
    DB_PATH = p.parse_args().db
    mcp.run()
