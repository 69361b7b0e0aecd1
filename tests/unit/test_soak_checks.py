"""The fleet soak's checks fire on a corrupted history (tests/soak/checks.py).

A small clean history passes; each corruption (a double completion, a stale completion
accepted, a lapse nobody caused, a killed holder whose claim did not lapse, stats that disagree
with the event log, a lease ended twice, a stranded item) is caught by the check meant for it.
"""

from __future__ import annotations

import copy
from typing import Any

from soak.checks import check

History = dict[str, Any]


class Builder:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.transfers: dict[str, list[dict[str, Any]]] = {}
        self.logs: dict[str, list[dict[str, Any]]] = {}
        self.signals: list[dict[str, Any]] = []
        self.items: dict[str, str] = {}

    def _event(self, type: str, item: str, holder: str, token: int, **extra: Any) -> None:
        data = {"item": item} if type in ("claimed", "completed", "progress") else {}
        self.events.append(
            {
                "id": len(self.events) + 1,
                "type": type,
                "key": f"items/{item}",
                "holder": holder,
                "token": token,
                "actor": extra.pop("actor", holder),
                "reason": extra.pop("reason", None),
                "data": data,
            }
        )

    def log(self, agent: str, ev: str, **fields: Any) -> None:
        self.logs.setdefault(agent, []).append({"ev": ev, **fields})

    def claim(self, agent: str, item: str, epoch: int, previous: str | None = None) -> None:
        self.items.setdefault(item, "in_progress")
        self.log(agent, "claim-sent", item=item, takeover=previous is not None)
        self._event("claimed", item, agent, epoch)
        kind = "taken_over" if previous else "claimed"
        self.transfers.setdefault(item, []).append(
            {"item": item, "from": previous, "to": agent, "epoch": epoch, "reason": kind}
        )
        self.log(agent, "claimed", item=item, epoch=epoch)

    def server_completes(self, agent: str, item: str, epoch: int, ending: bool = True) -> None:
        """The server's records of an accepted completion (the lease's ending, the event, the
        transfer), nothing in the agent's log."""
        if ending:
            self._event("released", item, agent, epoch, reason="completed")
        self._event("completed", item, agent, epoch)
        self.transfers[item].append(
            {"item": item, "from": agent, "to": None, "epoch": epoch, "reason": "completed"}
        )
        self.items[item] = "done"

    def complete(self, agent: str, item: str, epoch: int) -> None:
        self.log(agent, "complete-sent", item=item, epoch=epoch)
        self.server_completes(agent, item, epoch)
        self.log(agent, "completed", item=item, epoch=epoch)
        self.log(agent, "left", item=item, epoch=epoch)

    def signal(self, kind: str, agent: str) -> None:
        self.signals.append({"kind": kind, "agent": agent, "line": len(self.logs[agent])})

    def lapse(self, kind: str, item: str, holder: str, token: int) -> None:
        self._event(kind, item, holder, token, actor=None)

    def stats(self) -> dict[str, Any]:
        n = {k: 0 for k in ("released", "expired", "force_released", "taken_over", "completed")}
        for e in self.events:
            if e["type"] == "released" and e["reason"] == "completed":
                n["completed"] += 1
            elif e["type"] in ("released", "expired", "force_released", "taken_over"):
                n[e["type"]] += 1
        return {"endings": n}

    def run(self, stats: dict[str, Any] | None = None, stranded: list[str] | None = None) -> Any:
        return check(
            self.logs,
            self.signals,
            self.events,
            self.transfers,
            stats or self.stats(),
            self.items,
            stranded or [],
        )


def clean() -> Builder:
    """A completes x; B is killed holding y, C takes y over and completes it; D is paused
    holding z, E takes z over, D wakes up and is refused, E completes z."""
    b = Builder()
    b.claim("A", "x", 1)
    b.complete("A", "x", 1)
    b.claim("B", "y", 1)
    b.signal("kill", "B")
    b.lapse("expired", "y", "B", 1)
    b.claim("C", "y", 2, previous="B")
    b.complete("C", "y", 2)
    b.claim("D", "z", 1)
    b.log("D", "progress", item="z", epoch=1)
    b.signal("pause", "D")
    b.lapse("taken_over", "z", "D", 1)
    b.claim("E", "z", 2, previous="D")
    b.log("D", "lost", item="z", epoch=1, reason="taken_over")
    b.log("D", "complete-sent", item="z", epoch=1)
    b.log("D", "complete-stale", item="z", epoch=1, current=2)
    b.log("D", "left", item="z", epoch=1)
    b.complete("E", "z", 2)
    return b


def test_a_clean_history_passes_with_the_figures() -> None:
    verdict = clean().run()
    assert verdict.ok, verdict.problems()
    f = verdict.figures
    assert (f["done"], f["duplicates"], f["stale_accepted"], f["stranded"]) == (3, 0, 0, 0)
    assert (f["kills"], f["kills_holding"], f["pauses"], f["pauses_holding"]) == (1, 1, 1, 1)
    assert (f["expired"], f["taken_over"], f["client_losses"], f["stale_refused"]) == (1, 1, 0, 1)


def test_an_item_completed_twice_is_a_duplicate() -> None:
    b = clean()
    b.claim("F", "x2", 1)
    b.complete("F", "x2", 1)
    # A second accepted completion of x, in the agent's log and in the server's records.
    b.log("A", "completed", item="x", epoch=1)
    b.server_completes("A", "x", 1, ending=False)
    verdict = b.run()
    assert verdict.figures["duplicates"] == 1
    assert any("x completed 2 times" in p for p in verdict.violations["duplicate"])


def test_a_duplicate_only_in_an_agents_log_is_caught() -> None:
    b = clean()
    b.log("C", "completed", item="y", epoch=2)
    verdict = b.run()
    assert verdict.figures["duplicates"] == 1
    assert not verdict.ok


def test_a_stale_completion_accepted_is_caught_in_events_and_transfers() -> None:
    b = clean()
    # D's completion with epoch 1 after E took z over at epoch 2 -- accepted by a broken server.
    b.events = [e for e in b.events if not (e["type"] == "completed" and e["holder"] == "E")]
    b.transfers["z"] = [t for t in b.transfers["z"] if t["reason"] != "completed"]
    b.server_completes("D", "z", 1, ending=False)
    verdict = b.run()
    assert verdict.figures["stale_accepted"] == 2  # once from the events, once from transfers
    assert len(verdict.violations["stale_accepted"]) == 2


def test_a_stale_progress_accepted_is_caught() -> None:
    b = clean()
    b._event("progress", "z", "D", 1)  # after E took z over at epoch 2
    b.events.insert(-2, b.events.pop())  # ... but before E completed
    verdict = b.run()
    assert verdict.figures["stale_progress_accepted"] == 1
    assert verdict.figures["stale_accepted"] == 0
    assert any("progress by D at epoch 1" in p for p in verdict.violations["stale_accepted"])


def test_a_lapse_without_a_cause_is_caught() -> None:
    b = clean()
    b.signals = [s for s in b.signals if s["kind"] != "kill"]  # nobody killed B
    verdict = b.run()
    assert any("no kill, pause or client-side loss" in p for p in verdict.violations["endings"])
    assert any("expired + taken_over = 2" in p for p in verdict.violations["endings"])


def test_a_killed_holder_whose_claim_did_not_lapse_is_caught() -> None:
    b = Builder()
    b.claim("A", "x", 1)
    b.signal("kill", "A")  # killed holding x, with no completion in flight ...
    b.server_completes("A", "x", 1)  # ... yet x@1 "completed"
    verdict = b.run()
    assert any("not by a lapse" in p for p in verdict.violations["endings"])
    assert any("never sent a completion" in p for p in verdict.violations["duplicate"])


def test_a_completion_in_flight_at_a_kill_may_be_the_ending() -> None:
    b = Builder()
    b.claim("A", "x", 1)
    b.log("A", "complete-sent", item="x", epoch=1)
    b.signal("kill", "A")  # the reply never came, the server had completed it
    b.server_completes("A", "x", 1)
    verdict = b.run()
    assert verdict.ok, verdict.problems()
    assert verdict.figures["kills_holding"] == 0


def test_stats_that_disagree_with_the_event_log_are_caught() -> None:
    b = clean()
    stats = copy.deepcopy(b.stats())
    stats["endings"]["expired"] += 1
    verdict = b.run(stats=stats)
    assert any("stats say 2 expired, the event log 1" in p for p in verdict.violations["endings"])


def test_a_lease_that_ends_twice_is_caught() -> None:
    b = clean()
    b.lapse("expired", "z", "D", 1)  # z@1 was taken over already
    verdict = b.run(stats=b.stats())
    assert any("ended 2 times" in p for p in verdict.violations["endings"])


def test_a_stranded_item_is_caught() -> None:
    b = clean()
    b.items["w"] = "in_progress"
    verdict = b.run(stranded=["w"])
    assert verdict.figures["stranded"] == 1
    assert verdict.violations["stranded"] == ["w (in_progress) was not claimable within one TTL"]


def test_a_claim_the_server_never_granted_is_caught() -> None:
    b = clean()
    b.log("A", "claim-sent", item="q", takeover=False)
    b.log("A", "claimed", item="q", epoch=7)
    verdict = b.run()
    assert any("never granted" in p for p in verdict.violations["logs"])
