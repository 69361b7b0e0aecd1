"""The package's shape: layers that import only downwards, no import circles, small modules.

Layers, lowest first: ``core`` (pure: models, decisions, validation; with ``errors``,
``settings`` and ``metrics`` beside it), ``store`` (the databases), ``service`` (the verbs over a
store), ``verbs`` (each verb's one definition), then the fronts: ``server``, ``client``,
``supervise``, ``cli``, ``mcp``, ``fence``. A module imports its own layer and the layers below
it; a front imports no other front, except the supervisor (``supervise``), which runs commands
over the client, and the CLI, which is a thin shell over the client library and the supervisor
and starts the server and the MCP server (``tenure serve``, ``tenure mcp``) through their entry
points. Imports inside functions count like any other; those under ``TYPE_CHECKING`` (names for
annotations, never imported at run time) do not.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
MAX_LINES = 600

LAYERS = {
    "core": 0, "errors": 0, "settings": 0, "metrics": 0,
    "store": 1,
    "service": 2,
    "verbs": 3,
    "server": 4, "client": 4, "supervise": 4, "cli": 4, "mcp": 4, "fence": 4, "demo": 4,
    "hooks": 4,
    "compose": 5, "entry": 5,
}  # fmt: skip
#: the fronts a front may import: the CLI runs the client, and starts the servers (``tenure
#: serve`` through the composition root, which mounts the MCP tools on the server)
FRONT_EDGES = {
    "cli": {"client", "supervise", "fence", "server.run", "mcp.entry", "compose", "hooks.command"},
    "supervise": {"client"},  # above the client, below the CLI: it runs commands over a client
    "compose": {"server", "mcp"},
    "mcp": {"client"},  # the MCP tools over a remote server (`tenure mcp`) use the client
    # direct mode runs the server's own app in the client's process (loaded only when used)
    "client": {"server.http.app"},
}


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted((SRC / "tenure").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = modules()


def resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _run_time(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``tree`` but those under ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for orelse in node.orelse for n in [orelse, *_run_time(orelse)])
            continue
        yield node
        yield from _run_time(node)


def imports(module: str, *, type_only: bool = False) -> Iterator[str]:
    """Every tenure module that ``module`` imports, anywhere in it (``type_only``: those under
    ``if TYPE_CHECKING:`` too)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree) if type_only else _run_time(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            names = [f"{base}.{a.name}" for a in node.names]
        for name in names:
            if name.split(".")[0] == "tenure":
                target = resolve(name)
                if target and target != module:
                    yield target


GRAPH = {m: set(imports(m)) for m in MODULES}
#: with the imports made for annotations only (``if TYPE_CHECKING:``)
TYPED_GRAPH = {m: set(imports(m, type_only=True)) for m in MODULES}


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_no_module_imports_the_package_root() -> None:
    """``tenure/__init__.py`` is the public face: it imports the package, never the reverse."""
    assert sorted(m for m, deps in GRAPH.items() if "tenure" in deps) == []


def test_imports_only_go_down_and_fronts_stay_apart() -> None:
    wrong = []
    for module, deps in GRAPH.items():
        mine = layer_of(module)
        if mine is None:
            continue
        for dep in deps:
            theirs = layer_of(dep)
            if theirs is None or theirs == mine:
                continue
            allowed = FRONT_EDGES.get(mine, set())
            if any(dep == f"tenure.{a}" or dep.startswith(f"tenure.{a}.") for a in allowed):
                continue
            if LAYERS[theirs] > LAYERS[mine] or (LAYERS[theirs] == LAYERS[mine] == 4):
                wrong.append(f"{module} -> {dep}")
    assert sorted(wrong) == []


def strongly_connected(graph: dict[str, set[str]] = GRAPH) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_circles() -> None:
    """A package's ``__init__`` re-exporting its modules is part of the graph like any import."""
    assert strongly_connected() == []


def test_no_import_circles_counting_type_only_imports() -> None:
    """A circle closed only by an import under ``TYPE_CHECKING`` is still two modules that
    cannot be understood apart (a module that needs another's names only for its annotations
    still depends on its shape): none either, anywhere in tenure."""
    assert strongly_connected(TYPED_GRAPH) == []


def test_the_annotation_graph_sees_type_only_imports() -> None:
    """(The check above would pass vacuously if it read no ``TYPE_CHECKING`` import.)"""
    typed_only = {m for m in MODULES if TYPED_GRAPH[m] - GRAPH[m]}
    assert typed_only, "no module imports anything for its annotations only"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_stay_small(module: str) -> None:
    lines = MODULES[module].read_text().count("\n")
    assert lines <= MAX_LINES, f"{MODULES[module]}: {lines} lines (at most {MAX_LINES})"


@pytest.mark.parametrize("module", ["tenure.client", "tenure.client.aio", "tenure.client.sync"])
def test_the_client_loads_no_service_or_store_module(module: str) -> None:
    """A client over HTTP (every CLI start, every library user) reads the verb table and the
    core's models, never the service layer or the store (direct mode imports them when used)."""
    probe = (
        f"import sys, {module}\n"
        "print('\\n'.join(m for m in sys.modules if m.startswith(('tenure.service', "
        "'tenure.store'))))"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert run.stdout.split() == []


def test_the_cli_loads_no_store_or_fence_module() -> None:
    """``tenure`` starts without the store, the fences or the service's database-side modules:
    only a command working on a database directly (``--db``, ``fence reset``) imports them."""
    probe = (
        "import sys, tenure.cli\n"
        "print('\\n'.join(m for m in sys.modules if m.startswith(('tenure.store', "
        "'tenure.fence', 'tenure.service.principals', 'tenure.service.token_floors'))))"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert run.stdout.split() == []
