"""One MCP scenario over both fronts of a real ``tenure serve``: ``tenure mcp`` over stdio (a
subprocess per connection, talking HTTP to the server) and ``/mcp`` (the SDK's streamable HTTP
client). Both run the same client, so every answer must be the same: the tool list and its
schemas, each result (structured content) and each refusal (its text), once the names that
differ by construction are read alike (the principals and items of each run, the sessions each
connection was given, the instants)."""

from __future__ import annotations

import re
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
import pytest
from _mcp import text_of
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

import tenure
from conftest import LiveServer
from tenure.compose import create_app
from tenure.core.policy import Policy, PolicySet
from tenure.service.principals import Principals
from tenure.settings import Limits, Settings

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.anyio
TENURE = str(Path(sys.executable).parent / "tenure")
Connect = Callable[[str], AbstractAsyncContextManager[Client]]
BASE = "http://127.0.0.1:7676"
# Instants and the relative times said in words ("expires in 19s", "3 ms ago"): the two runs
# read the same state a moment apart.
INSTANT = re.compile(r"\b\d\d:\d\d:\d\dZ\b|\b\d+ ?ms ago\b|\bin \d+(?:ms|s|m|h)\b")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server(store_url: str) -> Iterator[LiveServer]:
    """A server of its own settings: a policy of its own (the schemas' bounds must be its) and
    a small list budget (the lists must stop where its REST replies stop)."""
    policy = PolicySet(Policy(min_ttl=2000, max_ttl=120_000, max_key_bytes=300))
    settings = Settings(db=store_url, policy=policy, limits=Limits(list_bytes=2500))
    live = LiveServer(store_url, settings).start()
    try:
        yield live
    finally:
        live.stop()


def over_stdio(server: LiveServer) -> Connect:
    @asynccontextmanager
    async def connect(token: str) -> AsyncIterator[Client]:
        env = {"TENURE_URL": server.url, "TENURE_TOKEN": token}
        params = StdioServerParameters(command=TENURE, args=["mcp"], env=env)
        async with Client(params, read_timeout_seconds=30) as client:
            yield client

    return connect


def over_http(server: LiveServer) -> Connect:
    @asynccontextmanager
    async def connect(token: str) -> AsyncIterator[Client]:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
        ):
            yield client

    return connect


class Run:
    """The answers of one front, each read with the names of its run replaced."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.names: dict[str, str] = {}
        self.answers: list[tuple[str, str, Any]] = []

    def read(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self.field(k, v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.read(v) for v in value]
        if isinstance(value, str):
            for name, alias in sorted(self.names.items(), key=lambda x: -len(x[0])):
                value = value.replace(name, alias)
            return INSTANT.sub("<instant>", value.replace(self.tag, "<run>"))
        return value

    def field(self, name: str, value: Any) -> Any:
        if isinstance(value, int) and (name.endswith("_at") or name in ("at", "expires_in_ms")):
            return "<ms>" if name == "expires_in_ms" else "<instant>"
        return self.read(value)

    async def ask(self, who: str, client: Client, tool: str, **args: Any) -> Any:
        """Call ``tool`` and record what came back; the raw structured result."""
        result = await client.call_tool(tool, args)
        if result.is_error:
            assert result.structured_content is None
            self.answers.append((who, tool, ("refused", self.read(text_of(result)))))
            return None
        self.answers.append((who, tool, ("ok", self.read(result.structured_content))))
        return result.structured_content

    def said(self, tool: str) -> Any:
        """The first answer to ``tool``."""
        return next(answer for _, name, answer in self.answers if name == tool)


async def scenario(server: LiveServer, connect: Connect, tag: str) -> Run:
    """Two connections of one agent (two sessions) and another principal, on items and a key
    of this run's own."""
    run = Run(tag)
    jo = server.token_for(f"jo-{tag}/agent-1", parent="root")
    ann = server.token_for(f"ann-{tag}", kind="human")
    item, other, key = f"{tag}-login", f"{tag}-docs", f"deploy/{tag}"
    with tenure.Client(server.url, token=server.admin_token) as admin:
        admin.items.create("fix login", id=item, priority=1, labels=[tag], body="b" * 40)
        admin.items.create("write docs", id=other, priority=2, labels=[tag])
        for n in range(12):  # past the list budget
            admin.items.create(f"chore {n} " + "x" * 150, id=f"{tag}-chore-{n}", priority=9)
    async with connect(jo) as a, connect(jo) as b, connect(ann) as c:
        tools = (await a.list_tools()).tools
        for t in tools:
            run.answers.append(("a", f"tools/list {t.name}", t.model_dump(mode="json")))
        for who, client in (("a", a), ("b", b), ("c", c)):
            me = await client.call_tool("whoami", {})
            assert me.structured_content is not None, text_of(me)
            run.names[me.structured_content["session"]] = f"<session {who}>"
            await run.ask(who, client, "whoami")
        await run.ask("a", a, "ready", limit=20)
        await run.ask("c", c, "list_items", status="open", limit=20)
        claim = await run.ask("a", a, "claim", item_id=item, task="fix", ttl_ms=20_000)
        epoch = claim["epoch"]
        # a conflict: the agent's other session, then another principal
        await run.ask("b", b, "claim", item_id=item)
        await run.ask("c", c, "claim", item_id=item)
        await run.ask("b", b, "release", item_id=item)
        # a stale epoch
        await run.ask("a", a, "progress", item_id=item, epoch=epoch + 7, message="half")
        await run.ask("a", a, "complete", item_id=item, epoch=epoch - 1)
        # the heartbeat: each connection renews its own session's leases, on every write call
        await run.ask("b", b, "heartbeat")
        await run.ask("b", b, "create_item", title="by b", id=f"{tag}-b1")
        await run.ask("a", a, "show_item", item_id=item)  # read-only: renews nothing
        await run.ask("a", a, "create_item", title="by a", id=f"{tag}-a1")
        await run.ask("a", a, "show_item", item_id=item)
        await run.ask("a", a, "heartbeat")
        await run.ask("a", a, "progress", item_id=item, epoch=epoch, message="half way")
        # locks, a refused authority, strict arguments and the policy's bounds
        await run.ask("a", a, "acquire_lock", key=key, task="release", ttl_ms=20_000)
        await run.ask("c", c, "acquire_lock", key=key)
        await run.ask("c", c, "force_release", key=key, reason="mine now")
        await run.ask("c", c, "acquire_lock", key=f"items/{other}")
        await run.ask("c", c, "claim", item_id=other, ttl_ms=300_000)
        await run.ask("c", c, "claim", item_id=other, ttl_ms=900_000)
        await run.ask("c", c, "acquire_lock", key="k" * 400)
        await run.ask("c", c, "claim", item_id=other, ttl_ms="20000")
        await run.ask("c", c, "claim", item_id=other, colour="blue")
        await run.ask("a", a, "list_leases", prefix=f"deploy/{tag}")
        await run.ask("a", a, "release_lock", key=key)
        await run.ask("a", a, "queue")
        await run.ask("a", a, "briefing")
        await run.ask("a", a, "complete", item_id=item, epoch=epoch)
        await run.ask("a", a, "progress", item_id=item, epoch=epoch, message="after")
        await run.ask("c", c, "list_items", status="done", label=tag)
        await run.ask("c", c, "show_item", item_id=f"{tag}-nothing")
        await run.ask("c", c, "no_such_tool")
    with tenure.Client(server.url, token=server.admin_token) as admin:
        chores = [f"{tag}-chore-{n}" for n in range(12)]
        for left in (other, f"{tag}-a1", f"{tag}-b1", *chores):  # out of the next run's way
            admin.items.cancel(left, "the run is over")
    return run


@pytest.mark.slow
async def test_stdio_and_http_answer_alike(server: LiveServer) -> None:
    stdio = await scenario(server, over_stdio(server), "sq")
    http = await scenario(server, over_http(server), "hq")
    differ = [
        (one, other) for one, other in zip(stdio.answers, http.answers, strict=True) if one != other
    ]
    assert not differ, "\n".join(f"stdio {one}\n/mcp  {other}\n" for one, other in differ)
    assert len(stdio.answers) == len(http.answers) > 50
    # and what both said is what the scenario is about
    said = http.said
    assert (
        said("tools/list claim")["input_schema"]["properties"]["ttl_ms"]["anyOf"][0]["minimum"]
        == 2000
    )  # the server's policy, on both fronts
    ready = said("ready")[1]["items"]
    assert len(ready) < 14  # the server's list budget, on both fronts
    assert ready[0]["body_chars"] == 40  # a list's summary leaves the body out, not its length
    refusals = [answer[1].partition(":")[0] for _, tool, answer in http.answers
                if tool == "claim" and answer[0] == "refused"]  # fmt: skip
    assert refusals == ["lease_held", "lease_held", *["invalid_request"] * 4]
    assert said("progress")[1].startswith("stale_token: ")
    beats = [answer[1] for _, tool, answer in http.answers if tool == "heartbeat"]
    assert beats[0] == {"renewed": [], "lost": []}  # b renews none of a's
    assert [x["key"] for x in beats[1]["renewed"]] == ["items/<run>-login"]
    shown = [a[1]["lease"]["renewals"] for w, t, a in http.answers if (w, t) == ("a", "show_item")]
    assert shown == [1, 2]  # a's progress and create_item renewed it; b's calls, reading: not
    assert said("force_release")[1].startswith("forbidden: ")


@pytest.mark.timeout(60, method="thread")  # a deadlock hangs: end the run, failed
async def test_more_calls_at_once_than_worker_threads(tmp_path: Path) -> None:
    """On ``/mcp`` each tool call waits, in a worker thread, for a request to the same app, which
    may need a worker thread of its own: the tools' threads are not the default ones, so calls
    past the default number at once all complete (here the default is cut to 3 threads)."""
    db = f"sqlite:///{tmp_path}/t.db"
    app = create_app(Settings(db=db))
    store = tenure.open_store(db)
    try:
        token = Principals(store).bootstrap("jo/agent-1", "agent").token
    finally:
        store.close()
    answers: list[Any] = []
    async with app.router.lifespan_context(app):
        anyio.to_thread.current_default_thread_limiter().total_tokens = 3
        transport = httpx2.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(transport=transport, base_url=BASE, headers=headers) as http,
            Client(streamable_http_client(f"{BASE}/mcp", http_client=http)) as jo,
        ):

            async def one(n: int) -> None:
                answers.append(await jo.call_tool("heartbeat" if n % 2 else "whoami", {}))

            async with anyio.create_task_group() as tg:
                for n in range(12):
                    tg.start_soon(one, n)
    assert len(answers) == 12
    assert [text_of(x) for x in answers if x.is_error] == []
