"""Seeds, measures and removes the activity-log rows of bench/history-at-scale.sh, through the
local stack's own psql (elves.local.infra), so the bench knows no port, password or database
name of its own.

    .venv/bin/python bench/history_rows.py seed ROWS USERS   # ROWS rows over the first USERS load users
    .venv/bin/python bench/history_rows.py explain           # the getHistory query's plan and time, first load user
    .venv/bin/python bench/history_rows.py count
    .venv/bin/python bench/history_rows.py remove            # the seeded rows only

The seeded rows carry their own test id, so no LoadTest's ledger counts them.
"""

from __future__ import annotations

import asyncio
import sys

from elves.engine.planning.tokens import load_user
from elves.local import infra
from elves.local.layout import Layout
from elves.local.ports import Ports
from elves.local.settings import Settings

SEED_TEST_ID = "bench-history-seed"
# One INSERT per batch keeps every psql call well inside its 60 s deadline on 2 cores.
BATCH = 100_000
# The registry's getHistory query (services/registry/.../LogQueries.java), page 0 of 20.
HISTORY_QUERY = ("SELECT id, user_id, endpoint, request_id, test_id, time FROM activity_logs"
                 " WHERE user_id = '{user}' ORDER BY time DESC, id DESC LIMIT 20 OFFSET 0")


def postgres() -> infra.Postgres:
    settings = Settings.from_env()
    return infra.Postgres("postgres", Layout(settings.state_dir.absolute()), Ports(settings.port_offset))


async def psql(sql: str) -> str:
    code, output = await postgres().psql(sql, infra.DATABASE)
    if code != 0:
        raise SystemExit(f"history_rows: psql failed: {output.strip()}")
    return output


async def seed(rows: int, users: int) -> None:
    names = ",".join(f"'{load_user(i)}'" for i in range(users))
    for first in range(1, rows + 1, BATCH):
        last = min(first + BATCH - 1, rows)
        # Newest first by i: row i is i seconds old, spread round-robin over the users.
        await psql(f"""
INSERT INTO activity_logs (id, user_id, endpoint, request_id, test_id, time)
SELECT gen_random_uuid(), (ARRAY[{names}])[1 + i % {users}], 'getData', NULL, '{SEED_TEST_ID}',
       now() - make_interval(secs => i)
FROM generate_series({first}, {last}) AS i;
""")
    await psql("ANALYZE activity_logs;")


async def main(argv: list[str]) -> None:
    match argv:
        case ["seed", rows, users]:
            await seed(int(rows), int(users))
        case ["explain"]:
            print(await psql(f"EXPLAIN (ANALYZE, COSTS OFF) {HISTORY_QUERY.format(user=load_user(0))};"), end="")
        case ["count"]:
            print((await psql("\\pset tuples_only on\nSELECT count(*) FROM activity_logs;")).strip())
        case ["remove"]:
            await psql(f"DELETE FROM activity_logs WHERE test_id = '{SEED_TEST_ID}';")
        case _:
            raise SystemExit(__doc__)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
