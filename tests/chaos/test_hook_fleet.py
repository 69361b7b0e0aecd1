"""A fleet of Claude Code sessions editing one repository through the HTTP hook, some dying
without a ``SessionEnd``: no file is ever edited by two sessions at once.

6 agents, 200 random edits each over 40 files. Each agent runs a string of sessions: a session
makes a few edits, then ends (``SessionEnd``) or dies (stops sending anything, possibly in the
middle of an edit); the agent then starts a new session. An edit the hook allows is an interval
the session records itself: it starts once the allow arrived and ends before its
``PostToolUse`` is sent (or at its death). The checker proves that no two intervals of one file
by two sessions overlap. The ``files/`` TTL is short, so a dead session's files come free within
the run, and a server process of its own (``tenure serve``) answers."""

from __future__ import annotations

import json
import random
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from procs import ServeAt
from tenure.service.principals import Principals
from tenure.store import open_store

pytestmark = pytest.mark.slow

AGENTS, EDITS, FILES = 6, 200, 40
TTL_MS = 3000  # a dead session's files come free after this
DEADLINE_S = 55.0
ROOT = "/home/dev/fleet"  # any absolute directory: the server names the repository by it


@dataclass
class Agent:
    n: int
    token: str
    rng: random.Random
    intervals: list[tuple[float, float, str, int]] = field(default_factory=list)
    denied: int = 0
    deaths: int = 0
    ends: int = 0
    sessions: int = 0


def event(name: str, session: str, **more: Any) -> dict[str, Any]:
    return {"hook_event_name": name, "session_id": session, "cwd": ROOT, **more}


def edit(session: str, f: int) -> dict[str, Any]:
    tool_input = {"file_path": f"{ROOT}/src/f{f:02d}.py", "old_string": "a", "new_string": "b"}
    return event("PreToolUse", session, tool_name="Edit", tool_input=tool_input)


def pick(agent: Agent) -> int:
    """Mostly a file of the agent's own part of the tree, sometimes any file."""
    if agent.rng.random() < 0.7:
        share = FILES // AGENTS
        return agent.n * share + agent.rng.randrange(share)
    return agent.rng.randrange(FILES)


def run_agent(agent: Agent, url: str, stop_at: float) -> None:
    with httpx.Client(base_url=url, timeout=30) as http:
        auth = {"Authorization": f"Bearer {agent.token}"}

        def send(ev: dict[str, Any]) -> dict[str, Any]:
            got = http.post("/v1/hooks/claude-code", content=json.dumps(ev), headers=auth)
            assert got.status_code == 200, got.text
            reply: dict[str, Any] = got.json()
            return reply

        done = 0
        while done < EDITS and time.monotonic() < stop_at:
            agent.sessions += 1
            session = f"agent{agent.n}-s{agent.sessions}"
            life = agent.rng.randint(3, 25)
            dies = agent.rng.random() < 0.35
            for i in range(life):
                if done >= EDITS or time.monotonic() >= stop_at:
                    break
                done += 1
                f = pick(agent)
                reply = send(edit(session, f))
                if reply:
                    agent.denied += 1
                    assert reply["hookSpecificOutput"]["permissionDecision"] == "deny"
                    time.sleep(agent.rng.uniform(0, 0.01))
                    continue
                start = time.monotonic()
                if dies and i == life - 1 and agent.rng.random() < 0.5:  # dies mid-edit
                    agent.intervals.append((start, time.monotonic(), session, f))
                    break
                time.sleep(agent.rng.uniform(0, 0.004))  # the edit
                agent.intervals.append((start, time.monotonic(), session, f))
                send(event("PostToolUse", session, tool_name="Edit", tool_input={}))
            if dies:
                agent.deaths += 1  # no SessionEnd: its files lapse by the TTL
            else:
                agent.ends += 1
                send(event("SessionEnd", session, reason="other"))


def overlaps(intervals: list[tuple[float, float, str, int]]) -> list[Any]:
    """Pairs of intervals of one file, by two sessions, that overlap."""
    by_file: dict[int, list[tuple[float, float, str, int]]] = defaultdict(list)
    for iv in intervals:
        by_file[iv[3]].append(iv)
    found = []
    for ivs in by_file.values():
        ivs.sort()
        for i, a in enumerate(ivs):
            for b in ivs[i + 1 :]:
                if b[0] >= a[1]:
                    break
                if b[2] != a[2]:
                    found.append((a, b))
    return found


def test_the_checker_sees_an_overlap() -> None:
    assert overlaps([(0.0, 2.0, "a", 1), (1.0, 3.0, "b", 1)])
    assert not overlaps([(0.0, 2.0, "a", 1), (1.0, 3.0, "a", 1), (3.0, 4.0, "b", 1)])
    assert not overlaps([(0.0, 2.0, "a", 1), (1.0, 3.0, "b", 2)])
    assert overlaps([(0.0, 9.0, "a", 1), (1.0, 2.0, "a", 1), (3.0, 4.0, "b", 1)])


@pytest.mark.parametrize("backend", ["sqlite"])
def test_no_file_is_edited_by_two_sessions_at_once(store_url: str, tmp_path: Path) -> None:
    store = open_store(store_url)
    try:
        tokens = [Principals(store).bootstrap(f"a{n}", "agent", ()).token for n in range(AGENTS)]
    finally:
        store.close()
    policy = {"prefixes": {"files/": {"default_ttl": TTL_MS, "min_ttl": 100}}}
    server = ServeAt(store_url, TENURE_POLICY=json.dumps(policy))
    try:
        seed = random.randrange(1 << 30)
        agents = [Agent(n, tokens[n], random.Random(seed + n)) for n in range(AGENTS)]
        stop_at = time.monotonic() + DEADLINE_S
        errors: list[BaseException] = []

        def go(agent: Agent) -> None:
            try:
                run_agent(agent, server.url, stop_at)
            except BaseException as err:
                errors.append(err)

        threads = [threading.Thread(target=go, args=(a,)) for a in agents]
        for t in threads:
            t.start()
        for t in threads:
            t.join(DEADLINE_S + 30)
        assert not errors, errors
        intervals = [iv for a in agents for iv in a.intervals]
        bad = overlaps(intervals)
        assert bad == [], f"seed {seed}: {bad[:3]}"
        # the run exercised what it claims to: contention, deaths, ends, plenty of edits
        assert sum(a.denied for a in agents) > 0, seed
        assert sum(a.deaths for a in agents) > 0 and sum(a.ends for a in agents) > 0, seed
        assert len(intervals) > AGENTS * 20, seed
        print(
            f"seed {seed}: {len(intervals)} edits, {sum(a.denied for a in agents)} denied, "
            f"{sum(a.deaths for a in agents)} deaths, {sum(a.ends for a in agents)} ends"
        )
    finally:
        server.kill()
