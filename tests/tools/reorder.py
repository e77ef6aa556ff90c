#!/usr/bin/env python3
"""Writes a copy of an Nsight Systems SQLite export whose event tables are stored in another
row order, as nsys may write them: NVIDIA's 2025.6 release notes say "It cannot be assumed that
rows will continue to be exported in any particular order, including timestamp order."

    reorder.py SRC DST ORDER

ORDER is one of
  grouped   GPU tables by (deviceId, streamId, start), host tables by (globalTid, start): the
            order of a writer that flushes one buffer per stream or thread;
  chunks    rows cut into 7 time chunks at equal row counts, the chunks stored in a fixed
            shuffled order, each chunk in start order;
  reversed  every table in descending start order.

Every table with a `start` column is rewritten, except those whose rows are keyed by an
`INTEGER PRIMARY KEY` (the key is the row's storage order, and other tables refer to it).
"""

import shutil
import sqlite3
import sys

ORDERS = ("grouped", "chunks", "reversed")
CHUNKS = 7
# A fixed permutation of the chunks: every run reads the same file.
CHUNK_ORDER = (3, 0, 6, 2, 5, 1, 4)


def columns(conn, table):
    return [row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')]


def keyed_by_rowid(conn, table):
    """Whether the table has an INTEGER PRIMARY KEY (an alias of the rowid)."""
    for _, _, kind, _, _, pk in conn.execute(f'PRAGMA table_info("{table}")'):
        if pk and kind.upper() == "INTEGER":
            return True
    return False


def order_by(conn, table, order):
    cols = set(columns(conn, table))
    if order == "reversed":
        return "start DESC"
    if order == "grouped":
        if {"deviceId", "streamId"} <= cols:
            return "deviceId, streamId, start"
        if "globalTid" in cols:
            return "globalTid, start"
        if "globalPid" in cols:
            return "globalPid, start"
        return "start"
    # chunks: the chunk a row falls in, by its rank in start order.
    return None


def rewrite(conn, table, order):
    quoted = f'"{table}"'
    conn.execute(f"CREATE TEMP TABLE reorder_rows AS SELECT * FROM {quoted} WHERE 0")
    by = order_by(conn, table, order)
    if by is not None:
        conn.execute(f"INSERT INTO reorder_rows SELECT * FROM {quoted} ORDER BY {by}")
    else:
        (n,) = conn.execute(f"SELECT COUNT(*) FROM {quoted}").fetchone()
        size = max(1, -(-n // CHUNKS))
        for chunk in CHUNK_ORDER:
            conn.execute(
                f"INSERT INTO reorder_rows SELECT * FROM "
                f"(SELECT * FROM {quoted} ORDER BY start, rowid LIMIT ? OFFSET ?)",
                (size, chunk * size),
            )
    conn.execute(f"DELETE FROM {quoted}")
    conn.execute(f"INSERT INTO {quoted} SELECT * FROM reorder_rows")
    conn.execute("DROP TABLE reorder_rows")


def main(argv):
    if len(argv) != 4 or argv[3] not in ORDERS:
        sys.exit(f"usage: reorder.py SRC DST {{{'|'.join(ORDERS)}}}")
    src, dst, order = argv[1:]
    shutil.copyfile(src, dst)
    conn = sqlite3.connect(dst)
    tables = [
        name
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    ]
    for table in tables:
        if "start" in columns(conn, table) and not keyed_by_rowid(conn, table):
            rewrite(conn, table, order)
    conn.commit()
    conn.close()


if __name__ == "__main__":
    main(sys.argv)
