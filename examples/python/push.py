"""Push a task from Python inside the producer's own transaction.

An order and the task that mails its confirmation commit together, or
neither does. See docs/languages.md. Needs psycopg 3 (Debian:
python3-psycopg).

    push.py DSN TOPIC ORDER commit|rollback
"""

import sys

import psycopg

REFUSED = ("TR001", "TR004")  # the topic's capacity, an identifier's


def place_order(dsn, topic, order, outcome):
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY)")
        with conn.transaction():
            conn.execute("INSERT INTO orders (id) VALUES (%s)", (order,))
            try:
                # A savepoint: a refused push leaves the order in place.
                with conn.transaction():
                    row = conn.execute(
                        "SELECT public.task_push(%s, %s, %s)",
                        (topic, order, '{"mail": "confirmation"}'),
                    ).fetchone()
                print("pushed", row[0])
            except psycopg.Error as err:
                if err.sqlstate not in REFUSED:
                    raise
                print("refused:", err.diag.message_primary)
            if outcome == "rollback":
                raise psycopg.Rollback()  # no order, no task
    print(outcome)


if __name__ == "__main__":
    place_order(*sys.argv[1:5])
