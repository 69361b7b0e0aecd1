"""The verdict of a fleet soak, from the agents' own logs and the server's records.

Pure functions over plain data, so a unit test can feed them a corrupted history
(tests/unit/test_soak_checks.py) and see each check fire.

Inputs:

- ``logs``: agent name -> its log, a list of records (dicts with ``ev`` and, for claims,
  ``item`` and ``epoch``) in the order the agent wrote them. See ``agent.py`` for the records.
- ``signals``: the chaos loop's acts, dicts ``{kind, agent, line}``: ``kind`` is ``kill``,
  ``pause`` or ``reap`` (the final kill of an agent that did not stop in time), ``line`` the
  number of records in the agent's log when the signal took effect (read after the process
  was seen stopped or dead, so it is exactly what the agent had written before).
- ``events``: the server's event log (``Event.to_dict()``), oldest first.
- ``transfers``: item id -> its transfers (``Transfer.to_dict()``), oldest first.
- ``stats``: ``GET /v1/stats``.
- ``items``: item id -> final status; ``stranded``: the ids of items that were neither done nor
  claimable again within one TTL after the fleet stopped.

What is asserted (each a list of violations in :class:`Verdict`):

1. **No item completed twice**: per item, at most one accepted completion in the agents' logs,
   in the server's ``completed`` events and in its ``completed`` transfers; the three agree.
2. **No stale completion accepted**: every accepted completion carried the item's epoch at the
   time: the token of the latest ``claimed`` event on the item before the ``completed`` event,
   and the epoch of the latest claim transfer (``claimed``/``taken_over``) before the
   ``completed`` transfer, whose owner is the completer. The same holds for every accepted
   ``progress`` event (progress is fenced too).
3. **Nothing stranded**: every item is done, or was claimable again within one TTL.
4. **Every ending has a cause; the expired share matches the chaos.** Every lease ends exactly
   once. A lease *lapses* (ends ``expired`` or ``taken_over``) if and only if its holder stopped
   heartbeating while holding it: the holder was killed (``kill``, ``reap``) or paused past the
   TTL (``pause``) while the claim was open in its log, or the holder's own log shows it lost
   the claim (its client-side deadline passed: ``lost``, or a reply arriving after it:
   ``late``; or the claim's reply never came: ``claim-unknown``). A claim hit by a kill or a
   pause must lapse (unless a completion was already in flight: then it may be that
   completion). An agent holds at most one claim, so a signal hits at most one lease, and::

       expired + taken_over (GET /v1/stats)
           == kills_holding + pauses_holding + reaped_holding + client_losses

   where ``*_holding`` counts the signals that hit an open claim (attributed to the first
   signal that hit it) and ``client_losses`` the lapses of claims no signal hit. The stats'
   endings must equal the counts in the event log.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

LAPSES = ("expired", "taken_over")
ENDINGS = ("released", "expired", "force_released", "taken_over")
# Records after which an agent no longer holds (or waits for) the claim of its segment.
TERMINAL = frozenset({"refused", "completed", "complete-stale", "left"})
# Records that show the agent itself knew (or could not know) its claim had lapsed.
CLIENT_LOSS = frozenset({"lost", "late", "claim-unknown", "complete-unknown"})


@dataclass
class Segment:
    """One claim attempt of one agent: its log records from ``claim-sent`` on."""

    agent: str
    item: str
    start: int  # index of the claim-sent record in the agent's log
    records: list[tuple[int, dict[str, Any]]] = field(default_factory=list)

    @property
    def epoch(self) -> int | None:
        for _, r in self.records:
            if r["ev"] == "claimed":
                return int(r["epoch"])
        return None

    def upto(self, line: int) -> list[dict[str, Any]]:
        """The records written before the log had ``line`` records."""
        return [r for i, r in self.records if i < line]

    def has(self, evs: frozenset[str] | set[str], line: int | None = None) -> bool:
        recs = self.upto(line) if line is not None else [r for _, r in self.records]
        return any(r["ev"] in evs for r in recs)


@dataclass
class Lease:
    """One lease the server granted through a claim, with how it ended."""

    item: str
    key: str
    token: int
    holder: str
    endings: list[dict[str, Any]] = field(default_factory=list)
    segment: Segment | None = None
    hits: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ending(self) -> str | None:
        return self.endings[0]["type"] if self.endings else None

    @property
    def completed_by_holder(self) -> bool:
        e = self.endings[0] if self.endings else None
        return bool(e and e["type"] == "released" and e.get("reason") == "completed")


@dataclass
class Verdict:
    figures: dict[str, Any]
    violations: dict[str, list[str]]

    @property
    def ok(self) -> bool:
        return not any(self.violations.values())

    def problems(self) -> list[str]:
        return [f"{kind}: {v}" for kind, vs in self.violations.items() for v in vs]


def segments(agent: str, log: list[dict[str, Any]]) -> list[Segment]:
    out: list[Segment] = []
    for i, r in enumerate(log):
        if r["ev"] == "exit":
            break
        if r["ev"] == "claim-sent":
            out.append(Segment(agent, r["item"], i))
        if out:
            out[-1].records.append((i, r))
    return out


def open_segment(segs: list[Segment], line: int) -> Segment | None:
    """The claim the agent held or waited for when its log had ``line`` records."""
    before = [s for s in segs if s.start < line]
    if not before:
        return None
    seg = before[-1]
    return None if seg.has(TERMINAL, line) else seg


def leases_from_events(events: list[dict[str, Any]]) -> dict[tuple[str, int], Lease]:
    leases: dict[tuple[str, int], Lease] = {}
    for e in events:
        if e["type"] == "claimed":
            leases[(e["key"], e["token"])] = Lease(
                e["data"]["item"], e["key"], e["token"], e["holder"]
            )
    for e in events:
        if e["type"] in ENDINGS and (e["key"], e["token"]) in leases:
            leases[(e["key"], e["token"])].endings.append(e)
    return leases


def match_segments(
    leases: dict[tuple[str, int], Lease], segs: dict[str, list[Segment]]
) -> list[str]:
    """Pair each server lease with the agent's claim segment; returns the unmatched."""
    problems: list[str] = []
    by_owner: dict[tuple[str, str], list[Lease]] = defaultdict(list)
    for lease in sorted(leases.values(), key=lambda x: x.token):
        by_owner[(lease.holder, lease.item)].append(lease)
    for agent, agent_segs in segs.items():
        for seg in agent_segs:
            candidates = by_owner.get((agent, seg.item), [])
            epoch = seg.epoch
            if epoch is not None:
                found = [x for x in candidates if x.token == epoch]
                if not found:
                    problems.append(
                        f"{agent} logged a claim of {seg.item} at epoch {epoch} "
                        "that the server never granted"
                    )
                    continue
                found[0].segment = seg
        for seg in agent_segs:  # claims whose reply the agent never logged
            if seg.epoch is None and not seg.has({"refused"}):
                for lease in by_owner.get((agent, seg.item), []):
                    if lease.segment is None:
                        lease.segment = seg
                        break
    for lease in leases.values():
        if lease.segment is None and lease.holder in segs:
            problems.append(
                f"the server granted {lease.holder} item {lease.item} at epoch {lease.token} "
                "with no claim in its log"
            )
    return problems


def check(
    logs: dict[str, list[dict[str, Any]]],
    signals: list[dict[str, Any]],
    events: list[dict[str, Any]],
    transfers: dict[str, list[dict[str, Any]]],
    stats: dict[str, Any],
    items: dict[str, str],
    stranded: list[str],
) -> Verdict:
    v: dict[str, list[str]] = {
        "duplicate": [],
        "stale_accepted": [],
        "stranded": [],
        "endings": [],
        "logs": [],
    }
    segs = {agent: segments(agent, log) for agent, log in logs.items()}
    leases = leases_from_events(events)
    v["logs"] += match_segments(leases, segs)

    # 1. duplicates: the agents' logs, the events and the transfers --------------------------
    logged = Counter(r["item"] for log in logs.values() for r in log if r["ev"] == "completed")
    evented = Counter(e["data"]["item"] for e in events if e["type"] == "completed")
    moved = Counter(
        t["item"] for ts in transfers.values() for t in ts if t["reason"] == "completed"
    )
    duplicates = sorted(
        i
        for i in set(logged) | set(evented) | set(moved)
        if max(logged[i], evented[i], moved[i]) > 1
    )
    for i in duplicates:
        v["duplicate"].append(
            f"{i} completed {max(logged[i], evented[i], moved[i])} times "
            f"(agents {logged[i]}, events {evented[i]}, transfers {moved[i]})"
        )
    for i in sorted(set(evented) | set(moved)):
        if evented[i] != moved[i]:
            v["duplicate"].append(f"{i}: {evented[i]} completed events, {moved[i]} transfers")
    done = sorted(i for i, s in items.items() if s == "done")
    for i in done:
        if evented[i] == 0:
            v["duplicate"].append(f"{i} is done with no completed event")
    # every completion an agent logged is the server's, with the same epoch and holder
    server_done = {
        (e["data"]["item"], e["token"], e["holder"]) for e in events if e["type"] == "completed"
    }
    for agent, log in logs.items():
        for r in log:
            if r["ev"] == "completed" and (r["item"], r["epoch"], agent) not in server_done:
                v["duplicate"].append(
                    f"{agent} logged completing {r['item']} at epoch {r['epoch']}; "
                    "the server has no such completion"
                )
    for item, token, holder in server_done:
        seg = leases.get((f"items/{item}", token))
        if seg is None or seg.segment is None:
            continue
        if not seg.segment.has({"complete-sent"}):
            v["duplicate"].append(f"{item} completed by {holder} who never sent a completion")

    # 2. stale completions accepted -----------------------------------------------------------
    current: dict[str, tuple[int, str]] = {}
    stale = stale_progress = 0
    for e in events:
        if e["type"] == "claimed":
            current[e["key"]] = (e["token"], e["holder"])
        elif e["type"] in ("completed", "progress"):
            epoch, owner = current.get(e["key"], (None, None))
            if e["token"] != epoch or e["holder"] != owner:
                if e["type"] == "completed":
                    stale += 1
                else:
                    stale_progress += 1
                v["stale_accepted"].append(
                    f"{e['data']['item']}: {e['type']} by {e['holder']} at epoch {e['token']} "
                    f"accepted; the current epoch was {epoch} ({owner})"
                )
    for item, ts in transfers.items():
        epoch, owner = None, None
        for t in ts:
            if t["reason"] in ("claimed", "taken_over"):
                epoch, owner = t["epoch"], t["to"]
            elif t["reason"] == "completed" and (t["epoch"] != epoch or t["from"] != owner):
                stale += 1
                v["stale_accepted"].append(
                    f"{item}: completed transfer at epoch {t['epoch']} from {t['from']}; "
                    f"the last claim was epoch {epoch} to {owner}"
                )
    stale_refused = sum(1 for log in logs.values() for r in log if r["ev"] == "complete-stale")

    # 3. stranded -----------------------------------------------------------------------------
    for i in stranded:
        v["stranded"].append(f"{i} ({items.get(i)}) was not claimable within one TTL")

    # 4. endings and their causes -------------------------------------------------------------
    for lease in leases.values():
        if len(lease.endings) != 1:
            kinds = [e["type"] for e in lease.endings]
            v["endings"].append(
                f"lease {lease.key}@{lease.token} of {lease.holder} ended {len(kinds)} "
                f"times {kinds}"
            )
    by_agent_lease = {
        (lease.holder, id(lease.segment)): lease
        for lease in leases.values()
        if lease.segment is not None
    }
    holding: Counter[str] = Counter()
    for s in signals:
        seg = open_segment(segs.get(s["agent"], []), s["line"])
        if seg is None:
            continue
        lease = by_agent_lease.get((s["agent"], id(seg)))
        if lease is None:
            continue  # a claim in flight the server refused or never saw
        lease.hits.append(s)
        if len(lease.hits) == 1 and lease.ending in LAPSES:
            holding[s["kind"]] += 1
        if lease.ending in LAPSES:
            continue
        in_flight = seg.has({"complete-sent"}, s["line"])
        if not (in_flight and lease.completed_by_holder):
            v["endings"].append(
                f"{s['kind']} of {s['agent']} (log line {s['line']}) while it held "
                f"{lease.item}@{lease.token}, which then ended {lease.ending!r}, not by a lapse"
            )
    client_losses = 0
    for lease in leases.values():
        if lease.ending not in LAPSES or lease.hits:
            continue
        seg = lease.segment
        if seg is not None and seg.has(CLIENT_LOSS):
            client_losses += 1
            continue
        v["endings"].append(
            f"lease {lease.item}@{lease.token} of {lease.holder} ended {lease.ending!r} with "
            "no kill, pause or client-side loss to explain it"
        )
    in_log = Counter(e["type"] for e in events if e["type"] in ENDINGS)
    completed_endings = sum(
        1 for e in events if e["type"] == "released" and e.get("reason") == "completed"
    )
    endings = stats["endings"]
    log_endings = {
        "released": in_log["released"] - completed_endings,
        "expired": in_log["expired"],
        "force_released": in_log["force_released"],
        "taken_over": in_log["taken_over"],
        "completed": completed_endings,
    }
    for kind, n in log_endings.items():
        if endings.get(kind, 0) != n:
            v["endings"].append(f"stats say {endings.get(kind, 0)} {kind}, the event log {n}")
    lapsed = endings.get("expired", 0) + endings.get("taken_over", 0)
    explained = holding["kill"] + holding["pause"] + holding["reap"] + client_losses
    if lapsed != explained:
        v["endings"].append(
            f"expired + taken_over = {lapsed}, but kills holding {holding['kill']} + pauses "
            f"holding {holding['pause']} + reaped holding {holding['reap']} + client-side "
            f"losses {client_losses} = {explained}"
        )
    ended = sum(endings.get(k, 0) for k in (*ENDINGS, "completed"))
    kinds = Counter(s["kind"] for s in signals)
    figures = {
        "items": len(items),
        "done": len(done),
        "kills": kinds["kill"],
        "pauses": kinds["pause"],
        "reaped": kinds["reap"],
        "kills_holding": holding["kill"],
        "pauses_holding": holding["pause"],
        "reaped_holding": holding["reap"],
        "client_losses": client_losses,
        "leases": len(leases),
        "takeovers": sum(1 for ts in transfers.values() for t in ts if t["reason"] == "taken_over"),
        "expired": endings.get("expired", 0),
        "taken_over": endings.get("taken_over", 0),
        "completed": endings.get("completed", 0),
        "released": endings.get("released", 0),
        "expired_share": round(endings.get("expired", 0) / ended, 4) if ended else None,
        "lapsed_share": round(lapsed / ended, 4) if ended else None,
        "duplicates": len(duplicates),
        "stale_accepted": stale,
        "stale_refused": stale_refused,
        "stale_progress_accepted": stale_progress,
        "stale_progress_refused": sum(
            1 for log in logs.values() for r in log if r["ev"] == "progress-stale"
        ),
        "late_completions": sum(
            1 for log in logs.values() for r in log if r["ev"] == "completed" and r.get("late")
        ),
        "stranded": len(stranded),
    }
    return Verdict(figures, v)
