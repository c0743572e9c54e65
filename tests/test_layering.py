"""Imports flow one way: cli -> core -> models. The core never imports typer or rich, and
only lanekit.cli.render writes to the terminal (the runner reports its one error itself)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "lanekit"
UI_LIBRARIES = {"typer", "rich", "click"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_core_never_imports_the_cli_or_ui_libraries() -> None:
    """Modules outside lanekit/cli import neither typer/rich nor lanekit.cli."""
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC)
        # __main__ is the top of the stack: it dispatches to the runner or to the CLI.
        if "cli" in relative.parts or relative == Path("__main__.py"):
            continue
        for name in _imports(path):
            top = name.split(".")[0]
            if top in UI_LIBRARIES or name.startswith("lanekit.cli"):
                offenders.append(f"{relative} imports {name}")
    assert offenders == []


def test_only_render_prints_in_the_cli() -> None:
    """Command modules hand results to lanekit.cli.render; they never print themselves."""
    offenders = []
    for path in sorted((SRC / "cli").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for needle in ("print(", "sys.stdout.write", "sys.stderr.write", "typer.echo"):
            if needle in text:
                offenders.append(f"cli/{path.name}: {needle}")
    assert offenders == []


def _module_names() -> dict[str, Path]:
    """Every module of src/lanekit by dotted name (a package by its own name)."""
    found = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _import_graph() -> dict[str, set[str]]:
    """module -> the lanekit modules it imports, counting every import statement: at the top,
    inside functions (lazy) and under TYPE_CHECKING. A lazy import that closes a loop is still
    a loop (the two modules cannot be understood, or split, apart), so none is exempt."""
    modules = _module_names()

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(owner(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                # `from lanekit import lanelock` imports a module; `from lanekit.x import f`, x.
                targets.update(owner(f"{base}.{alias.name}") for alias in node.names)
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_one_that_imports_it_back() -> None:
    """The import graph of src/lanekit has no cycle, however long, lazy or typing-only
    imports included; each cycle found is listed with the edges that close it."""
    graph = _import_graph()
    report = [
        {module: sorted(graph[module] & set(cycle)) for module in cycle} for cycle in _cycles(graph)
    ]
    assert report == []


def test_the_cycle_finder_finds_cycles() -> None:
    """The graph walk sees what it must: entry's lazy import of the runner, and a two-module
    loop and a three-module loop in a made-up graph (so an empty report means something)."""
    graph = _import_graph()
    assert "lanekit.run.runner" in graph["lanekit.run.entry"]
    assert "lanekit.run.lanelock" in graph["lanekit.reconcile.observe"]
    made_up = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert sorted(_cycles(made_up)) == [["a", "b"], ["c", "d", "e"]]


QUEUE_BACKEND = SRC / "queue" / "directory"
"""The directory backend: the one package that knows a queue is a directory."""
QUEUE_DIRS = frozenset({"tmp", "queue", "claimed", "done", "failed", "delayed", "records"})
"""The backend's directories (logs/ is the lanes', not the queue's)."""


def _layout_uses(source: str) -> list[str]:
    """Where `source` builds a path into a queue directory: `x / "claimed"`, an f-string with
    `/claimed/` in it, a tuple of queue directory names, or a literal "queue/<...>" path."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Div)
            and isinstance(node.right, ast.Constant)
            and node.right.value in QUEUE_DIRS
        ):
            found.append(f"line {node.lineno}: / {node.right.value!r}")
        elif isinstance(node, ast.JoinedStr):
            for part in node.values:
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    text = part.value
                    if any(f"/{name}/" in text or text == f"/{name}" for name in QUEUE_DIRS):
                        found.append(f"line {node.lineno}: f-string {text!r}")
        elif isinstance(node, ast.Tuple | ast.List | ast.Set) and len(node.elts) > 1:
            names = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            if len(names) == len(node.elts) and set(names) <= QUEUE_DIRS:
                found.append(f"line {node.lineno}: directory names {names}")
    return found


def test_only_the_directory_backend_imports_its_modules() -> None:
    """Outside lanekit/queue/directory/, the queue is the factory (lanekit.queue.open_queue),
    the JobQueue protocol and its values: nobody imports the directory backend, save the
    factory that opens it."""
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if QUEUE_BACKEND in path.parents or path == SRC / "queue" / "__init__.py":
            continue
        for name in _imports(path):
            if name.startswith("lanekit.queue.directory"):
                offenders.append(f"{path.relative_to(SRC)} imports {name}")
    assert offenders == []


def test_only_the_directory_backend_knows_the_layout() -> None:
    """No module outside lanekit/queue/directory/ builds a path into the queue's directories:
    runner, entry, history, status, doctor, selftest and the CLI ask the JobQueue."""
    offenders = {}
    for path in sorted(SRC.rglob("*.py")):
        relative = str(path.relative_to(SRC))
        if QUEUE_BACKEND in path.parents:
            continue
        uses = _layout_uses(path.read_text(encoding="utf-8"))
        if uses:
            offenders[relative] = uses
    assert offenders == {}


def test_the_layout_scan_catches_each_form() -> None:
    """Each way of spelling a queue path is detected, so the layout test can fail."""
    for snippet in (
        "p = root / 'claimed'",
        "p = f'{root}/failed/{name}'",
        "for name in ('queue', 'delayed'): pass",
    ):
        assert _layout_uses(snippet), snippet
    assert _layout_uses("p = root / 'logs'\nx = ('queue', 'lane')") == []


def test_no_import_cycle_in_the_queue_package() -> None:
    """The backend's modules import one way: none imports a module that imports it back
    (imports under TYPE_CHECKING are for mypy only and do not count)."""
    graph: dict[str, set[str]] = {}
    package = SRC / "queue"
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(("lanekit", *(parts[:-1] if parts[-1] == "__init__" else parts)))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        runtime = [
            node
            for node in tree.body
            if not (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test))
        ]
        deps: set[str] = set()
        for top in runtime:
            for node in ast.walk(top):
                if isinstance(node, ast.ImportFrom) and node.module:
                    if node.module in {"lanekit.queue", "lanekit.queue.directory"}:
                        deps.update(f"{node.module}.{alias.name}" for alias in node.names)
                    elif node.module.startswith("lanekit.queue."):
                        deps.add(node.module)
        graph[name] = deps - {name}
    assert len(graph) > 10, "the scan reads the package"

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for dep in graph.get(start, set()):
            if dep == goal or (dep not in seen and reaches(dep, goal, seen | {dep})):
                return True
        return False

    cycles = sorted(
        name for name in graph if name != "lanekit.queue" and reaches(name, name, set())
    )
    assert cycles == []


ARCHITECTURE = SRC.parents[1] / "docs" / "architecture.md"


def _layers() -> list[set[str]]:
    """docs/architecture.md's layers table, top row first: each row's packages."""
    rows = []
    for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 2 and cells[0].isdigit():
            rows.append({name.strip("`/ ") for name in cells[1].split(",")})
    return rows


def _package_graph() -> dict[str, set[str]]:
    """package -> the packages its modules import (a root module counts as its own package),
    every import statement counted, lazy and typing-only ones too."""
    graph: dict[str, set[str]] = {}
    for module, targets in _import_graph().items():
        source = module.split(".")[1] if "." in module else "lanekit"
        found = graph.setdefault(source, set())
        found.update(t.split(".")[1] if "." in t else "lanekit" for t in targets)
        found.discard(source)
    return graph


def _upward(graph: dict[str, set[str]], layers: list[set[str]]) -> list[str]:
    """The imports of `graph` that go to the importer's own row or above it."""
    row_of = {name: index for index, row in enumerate(layers) for name in row}
    return sorted(
        f"{source} -> {target}"
        for source, targets in graph.items()
        for target in targets
        if target in row_of and source in row_of and row_of[target] <= row_of[source]
    )


def test_packages_import_only_the_rows_below_them() -> None:
    """The package graph is the layers table of docs/architecture.md: a package imports only
    packages on lower rows (a row's packages do not import each other), and every package
    and root module of src/lanekit has a row."""
    layers = _layers()
    graph = _package_graph()
    assert sorted(set(graph) - set().union(*layers)) == []
    assert _upward(graph, layers) == []


def test_the_layers_table_is_read() -> None:
    """The table parses into rows, top (__main__, then cli) to bottom (errors), so an empty
    check means something; an import up a row, or along one, is caught by the same check."""
    layers = _layers()
    assert len(layers) > 8
    assert "cli" in layers[1]
    assert "errors" in layers[-1]
    made_up = {"queue": {"system", "run"}, "status": {"watch"}, "run": {"queue"}}
    assert _upward(made_up, layers) == ["queue -> run", "status -> watch"]


def _module_map() -> dict[str, set[str]]:
    """docs/architecture.md's module map: directory (relative to src/lanekit) -> modules."""
    found: dict[str, set[str]] = {}
    current = None
    for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines():
        if line.startswith("### `"):
            current = line.split("`")[1].rstrip("/")
            found[current] = set()
        elif current is not None and line.startswith("- `"):
            found[current].add(line.split("`")[1])
        elif line.startswith("## ") and current is not None:
            current = None
    return found


def test_the_module_map_matches_the_tree() -> None:
    """Every directory of src/lanekit and every module in it is in the module map, and the
    map names nothing that is not there: a newcomer can trust it."""
    tree: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        directory = str(path.parent.relative_to(SRC.parent))
        if path.stem != "__init__" or path.parent == SRC:
            tree.setdefault(directory, set()).add(path.stem)
        else:
            tree.setdefault(directory, set())
    assert _module_map() == tree
