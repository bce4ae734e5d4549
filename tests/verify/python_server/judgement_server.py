"""An MCP server on the official Python SDK, on PostgreSQL, with the behaviours of
crystaldba's postgres-mcp that verify once judged wrongly (issue 31):

- next_ticket    readOnlyHint true, but takes nextval() of a sequence    read_only_write
- explain_query  readOnlyHint true, but runs EXPLAIN ANALYZE and commits  read_only_write
- run_sql        destructiveHint true; its `sql` argument defaults to "all" (no statement)
- health_report  readOnlyHint true; a successful report whose first word is "Invalid"
- count_items    destructiveHint true, but only reads: could be read-only

Every error comes back as ordinary text (`isError: false`), as postgres-mcp answers.

Usage: python judgement_server.py --db postgres://... [--schema NAME] [--cache N]
       [--init-only]

The schema (default public) gets the table `items` and the sequence `tickets_seq` (CACHE N,
default 1) when it has no table.
"""

import argparse
import functools
import sys

import psycopg
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

ARGS = argparse.Namespace()

mcp = MCPServer("hintaudit-judgement-fixture")


def connect():
    conn = psycopg.connect(ARGS.db, autocommit=True)
    conn.execute(f'SET search_path TO "{ARGS.schema}"')
    return conn


def run(sql: str):
    with connect() as conn:
        cur = conn.execute(sql)
        return cur.fetchall() if cur.description else None


def text_errors(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - errors as text, like postgres-mcp
            return f"Error: {e}"

    return wrapper


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
@text_errors
def next_ticket() -> str:
    """Shows the next ticket number. Dishonest: it takes it (nextval)."""
    return str(run("SELECT nextval('tickets_seq')")[0][0])


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
@text_errors
def explain_query(sql: str) -> str:
    """Explains a query. Dishonest: EXPLAIN ANALYZE runs it, and the change commits."""
    rows = run(f"EXPLAIN ANALYZE {sql}")
    return "\n".join(r[0] for r in rows or [])


@mcp.tool(annotations=ToolAnnotations(destructiveHint=True, openWorldHint=False))
@text_errors
def run_sql(sql: str = "all") -> str:
    """Executes any SQL query (postgres-mcp's execute_sql: the default is no statement)."""
    rows = run(sql)
    return "No results" if rows is None else str([list(r) for r in rows])


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
@text_errors
def health_report() -> str:
    """Checks the items. The report's first word is "Invalid": it is no error."""
    invalid = run("SELECT count(*) FROM items WHERE qty < 0")[0][0]
    dupes = run("SELECT count(*) - count(DISTINCT name) FROM items")[0][0]
    return (
        f"Invalid item check: {'No invalid items found.' if invalid == 0 else invalid}\n"
        f"Duplicate item check: {'No duplicate items found.' if dupes == 0 else dupes}\n"
    )


@mcp.tool(
    annotations=ToolAnnotations(
        readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=False
    )
)
@text_errors
def count_items() -> str:
    """Counts the items. Declared destructive, yet it only reads."""
    return str(run("SELECT count(*) FROM items")[0][0])


def init_db() -> None:
    with psycopg.connect(ARGS.db, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{ARGS.schema}"')
        n = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = %s",
            (ARGS.schema,),
        ).fetchone()[0]
        if n == 0:
            s = f'"{ARGS.schema}"'
            conn.execute(
                f"CREATE TABLE {s}.items (id int PRIMARY KEY, name text NOT NULL, "
                "qty int NOT NULL DEFAULT 0)"
            )
            conn.execute(
                f"INSERT INTO {s}.items VALUES (1, 'anchor', 3), (2, 'buoy', 0), "
                "(3, 'compass', 5), (4, 'dinghy', 1)"
            )
            conn.execute(f"CREATE SEQUENCE {s}.tickets_seq CACHE {ARGS.cache}")


def main() -> None:
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--db", required=True)
    p.add_argument("--schema", default="public")
    p.add_argument("--cache", type=int, default=1)
    p.add_argument("--init-only", action="store_true")
    ARGS = p.parse_args()
    init_db()
    if not ARGS.init_only:
        mcp.run()


if __name__ == "__main__":
    sys.exit(main())
