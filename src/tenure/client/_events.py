"""``client.events(...)``, the one method whose shape differs between the two clients: the
blocking one returns a page (a list) or, with ``follow=True``, an endless iterator; the async one
returns :class:`AsyncEvents`, awaitable for a page and async-iterable for the log. Each client
mixes its half in (:class:`EventsMixin`, :class:`AsyncEventsMixin`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator, Iterator
from typing import Any, Literal, TypeVar, overload

from tenure.client import _wire as sh
from tenure.client._call import Call
from tenure.core.models import Event
from tenure.verbs.ops import Filters

T = TypeVar("T")


class EventsMixin:
    """``events`` of :class:`~tenure.client.Client`."""

    def _call(self, call: Call[T]) -> T:
        raise NotImplementedError

    @overload
    def events(
        self,
        after: int = 0,
        key: str | None = None,
        holder: str | None = None,
        type: str | None = None,
        limit: int = 100,
        item: str | None = None,
        wait_ms: int | None = None,
        follow: Literal[False] = False,
    ) -> list[Event]: ...

    @overload
    def events(
        self,
        after: int = 0,
        key: str | None = None,
        holder: str | None = None,
        type: str | None = None,
        limit: int = 100,
        item: str | None = None,
        wait_ms: int | None = None,
        *,
        follow: Literal[True],
    ) -> Iterator[Event]: ...

    def events(
        self,
        after: int = 0,
        key: str | None = None,
        holder: str | None = None,
        type: str | None = None,
        limit: int = 100,
        item: str | None = None,
        wait_ms: int | None = None,
        follow: bool = False,
    ) -> list[Event] | Iterator[Event]:
        """Events with ids greater than ``after``, oldest first (``item``: of that item).

        ``wait_ms``: if none is there yet, wait up to this long for one (long-poll).
        ``follow=True``: an endless iterator over the log from ``after``, long-polling for
        new events; it ends only with an error or when you stop iterating.
        """
        where = Filters(key=key, item=item, holder=holder, type=type)
        if follow:
            return self._follow(after, where)
        return self._call(sh.events(after, where, limit, wait_ms))

    def _follow(self, after: int, where: Filters) -> Iterator[Event]:
        while True:
            page, after = self._call(sh.follow_page(after, where))
            yield from page


class AsyncEventsMixin:
    """``events`` of :class:`~tenure.client.AsyncClient`."""

    async def _call(self, call: Call[T]) -> T:
        raise NotImplementedError

    def events(
        self,
        after: int = 0,
        key: str | None = None,
        holder: str | None = None,
        type: str | None = None,
        limit: int = 100,
        item: str | None = None,
        wait_ms: int | None = None,
        follow: bool = False,
    ) -> AsyncEvents:
        """Events with ids greater than ``after``, oldest first (``item``: of that item).

        ``await client.events(...)`` is one page (``wait_ms``: long-poll while there is none);
        ``async for event in client.events(follow=True)`` follows the log from ``after``.
        """
        where = Filters(key=key, item=item, holder=holder, type=type)
        page = sh.events(after, where, limit, wait_ms)
        return AsyncEvents(self, page, (after, where) if follow else None)


class AsyncEvents:
    """What :meth:`AsyncClient.events` returns: awaitable (one page) and async-iterable
    (the page's events, or with ``follow=True`` the log from ``after`` on, endlessly)."""

    def __init__(
        self,
        client: AsyncEventsMixin,
        page: Call[list[Event]],
        follow: tuple[int, Filters] | None,
    ) -> None:
        self._client, self._page, self._follow = client, page, follow

    def __await__(self) -> Generator[Any, None, list[Event]]:
        return self._client._call(self._page).__await__()

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Event]:
        if self._follow is None:
            for event in await self._client._call(self._page):
                yield event
            return
        after, where = self._follow
        while True:
            page, after = await self._client._call(sh.follow_page(after, where))
            for event in page:
                yield event
