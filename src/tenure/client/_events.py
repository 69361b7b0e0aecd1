"""``client.events(...)``, the one method whose shape differs between the two clients: the
blocking one returns a page (a list) or, with ``follow=True``, an endless iterator; the async one
returns :class:`AsyncEvents`, awaitable for a page and async-iterable for the log. Each client
mixes its half in (:class:`EventsMixin`, :class:`AsyncEventsMixin`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator, Iterator
from typing import Any, Literal, TypeVar, Unpack, overload

from tenure.client import _wire as sh
from tenure.client._call import Call
from tenure.core.models import Event, EventWhere, event_where
from tenure.verbs.ops import Filters

T = TypeVar("T")


class EventRead(EventWhere, total=False):
    """The filters of :class:`~tenure.core.models.EventWhere` and ``wait_ms``: if no event is
    there yet, wait up to this long for one (long-poll)."""

    wait_ms: int | None


def _reading(read: EventRead) -> tuple[Filters, int, int | None]:
    """``read`` checked (an unknown keyword is a :class:`TypeError`): the filters, the limit
    and the long-poll's wait."""
    wait_ms = read.pop("wait_ms", None)
    w = event_where(dict(read))
    where = Filters(w.get("key"), w.get("item"), w.get("holder"), w.get("type"))
    return where, w.get("limit", 100), wait_ms


class EventsMixin:
    """``events`` of :class:`~tenure.client.Client`."""

    def _call(self, call: Call[T]) -> T:
        raise NotImplementedError

    @overload
    def events(
        self, after: int = 0, *, follow: Literal[False] = False, **read: Unpack[EventRead]
    ) -> list[Event]: ...

    @overload
    def events(
        self, after: int = 0, *, follow: Literal[True], **read: Unpack[EventRead]
    ) -> Iterator[Event]: ...

    def events(
        self, after: int = 0, *, follow: bool = False, **read: Unpack[EventRead]
    ) -> list[Event] | Iterator[Event]:
        """Events with ids greater than ``after``, oldest first, that match the filters of
        :class:`EventRead` (``key``, ``item``, ``holder``, ``type``, ``limit``).

        ``wait_ms``: if none is there yet, wait up to this long for one (long-poll).
        ``follow=True``: an endless iterator over the log from ``after``, long-polling for
        new events; it ends only with an error or when you stop iterating.
        """
        where, limit, wait_ms = _reading(read)
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
        self, after: int = 0, *, follow: bool = False, **read: Unpack[EventRead]
    ) -> AsyncEvents:
        """Events with ids greater than ``after``, oldest first, that match the filters of
        :class:`EventRead` (``key``, ``item``, ``holder``, ``type``, ``limit``).

        ``await client.events(...)`` is one page (``wait_ms``: long-poll while there is none);
        ``async for event in client.events(follow=True)`` follows the log from ``after``.
        """
        where, limit, wait_ms = _reading(read)
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
