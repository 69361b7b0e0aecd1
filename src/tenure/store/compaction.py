"""Compaction's deletions, the same on both backends: each is one short write transaction of
at most one batch (the connector's ``writing()``: SQLite's write lock, or a PostgreSQL
transaction whose rows are taken ``FOR UPDATE SKIP LOCKED``, so a key being acquired is left
for the next pass and nothing waits on a pass).

Lease rows: the batch's largest token is written to the retired-token mark (and its refusals to
the retired total) in the transaction that deletes the rows, so no commit, crash or other server
can see a key without its row and without the mark that covers its token.
"""

from __future__ import annotations

from tenure.core.compaction import Scope
from tenure.core.models import EventDraft
from tenure.store import rows
from tenure.store.connector import Connector


class Compaction:
    connector: Connector

    def compact_leases(self, scope: Scope, before: int, batch: int) -> int:
        """Delete up to ``batch`` lease rows of ``scope``'s keys whose lease ended and whose
        deadline is before ``before`` (never an item's claim), raising the retired-token mark
        to their largest token first; the number deleted."""
        with self.connector.writing() as cur:
            params = {
                "prefix": scope.prefix,
                "skip": self.connector.texts(scope.skip),
                "before": before,
            }
            found = cur.execute(
                self.connector.Q["idle_leases"], {**params, "limit": batch}
            ).fetchall()
            if not found:
                return 0
            top = max(int(r[1]) for r in found)
            conflicts = sum(int(r[2]) for r in found)
            cur.execute(self.connector.Q["raise_retired"], {"top": top, "conflicts": conflicts})
            keys = self.connector.texts([r[0] for r in found])
            return int(
                cur.execute(
                    self.connector.Q["delete_leases"], {"keys": keys, "before": before}
                ).rowcount
            )

    def compact_fenced_ops(self, scope: Scope, before: int, batch: int) -> int:
        """Delete up to ``batch`` op_ids of fenced writes on ``scope``'s keys written before
        ``before``; the number deleted."""
        params = {
            "prefix": scope.prefix,
            "skip": self.connector.texts(scope.skip),
            "before": before,
        }
        with self.connector.writing() as cur:
            deleted = cur.execute(self.connector.Q["delete_fenced_ops"], {**params, "limit": batch})
            return int(deleted.rowcount)

    def compact_item_ops(self, before: int, batch: int) -> int:
        """Delete up to ``batch`` op_ids of item writes written before ``before``."""
        with self.connector.writing() as cur:
            deleted = cur.execute(
                self.connector.Q["delete_item_ops"], {"before": before, "limit": batch}
            )
            return int(deleted.rowcount)

    def forget_session_tasks(self, before: int, batch: int) -> int:
        """Delete up to ``batch`` session tasks last set or prompted before ``before`` (the
        sessions that ended without saying so)."""
        with self.connector.writing() as cur:
            deleted = cur.execute(
                self.connector.Q["forget_session_tasks"], {"before": before, "limit": batch}
            )
            return int(deleted.rowcount)

    def retired_token(self) -> int:
        """The largest token of the lease rows compaction deleted."""
        with self.connector.writing() as cur:
            return int(cur.execute(self.connector.Q["token_floor"]).fetchone()[1])

    def retire_agents(self, before: int, batch: int) -> int:
        """Delete up to ``batch`` dispatched agents whose tokens were revoked (their claim
        ended) before ``before`` and that hold nothing (:data:`Q` ``retirable_agents``), with
        their tokens and cursors; each recorded as ``principal_removed`` (reason ``retired``).
        Events, items and transfers keep their names. The number retired."""
        with self.connector.writing() as cur:
            now = self.connector.now_in(cur)
            params = {"before": before, "now": now, "limit": batch}
            found = cur.execute(self.connector.Q["retirable_agents"], params).fetchall()
            events = []
            for row in found:
                for query in ("delete_tokens", "delete_cursors"):
                    cur.execute(self.connector.Q[query], {"name": row[0]})
                if (
                    cur.execute(self.connector.Q["delete_principal"], {"name": row[0]}).rowcount
                    != 1
                ):
                    continue  # another server's pass retired it meanwhile
                gone = rows.principal_from(row)
                data = {"kind": gone.kind, "roles": list(gone.roles), "parent": gone.parent}
                events.append(
                    EventDraft("principal_removed", None, gone.name, reason="retired", data=data)
                )
            self.connector.append(cur, events, now)
            return len(events)
