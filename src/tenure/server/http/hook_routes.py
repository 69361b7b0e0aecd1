"""The harness hooks' routes (:mod:`tenure.verbs.hooks`): written by hand because the
repository may come in the query string or a header as well as in the body.

``POST /v1/hooks/claude-code?repo=…&root=…`` (or headers ``Tenure-Repo``, ``Tenure-Root``): an
empty value counts as absent, since Claude Code sends an empty string for a header's unset
variable. The event is answered in a worker thread: it may take a lease and run git."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from fastapi import FastAPI, Header, Query, Response

from tenure.server.http import openapi
from tenure.server.http.deps import Caller, St, reply
from tenure.verbs import hooks as hv

#: the verbs of the table whose routes are this module's
HOOK_SERVED = (hv.CLAUDE_CODE,)

Repo = Annotated[
    str | None, Query(description="the repository's name in file keys (`TENURE_REPO`)")
]
Root = Annotated[str | None, Query(description="the repository's top directory")]
RepoHeader = Annotated[str | None, Header(alias="Tenure-Repo", include_in_schema=True)]
RootHeader = Annotated[str | None, Header(alias="Tenure-Root", include_in_schema=True)]


def add_hook_routes(app: FastAPI) -> None:
    verb = hv.CLAUDE_CODE

    @app.post(
        verb.path,
        name=verb.name,
        response_model=verb.reply,
        tags=list(verb.tags),
        description=verb.doc,
        responses=openapi.problem_responses(*verb.problems),
    )
    async def hook_claude_code(
        body: hv.ClaudeCodeEventIn,
        me: Caller,
        st: St,
        repo: Repo = None,
        root: Root = None,
        repo_header: RepoHeader = None,
        root_header: RootHeader = None,
    ) -> Response:
        given: dict[str, Any] = {
            "tenure_repo": repo or repo_header or body.tenure_repo or None,
            "tenure_root": root or root_header or body.tenure_root or None,
        }
        args = body.model_copy(update=given)
        out = await anyio.to_thread.run_sync(verb.run, st.services, me, args)
        return reply(out)
