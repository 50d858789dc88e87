"""The house rules of the layout (the documentation site's Layout page), checked on the source itself.

* imports run one way, down the floors: command line (``seedsweep``) ->
  statistics (``analysis``) -> engine (``study``) -> families
  (``study.families``) -> ground floor; no import circle among the
  project's modules (imports inside functions count); ``study`` never imports
  ``analysis``; nothing imports the command line; an import of a project
  module inside a function says why on its line;
* the site's Layout page is the tree (``python docs/layout.py --write``);
* no module of ``study/`` or ``analysis/`` over 350 lines;
* no block of six or more repeated lines within ``study/`` or ``analysis/``;
* no ``_private`` name imported (or reached as ``module._name``) across modules;
* families import only the engine's ground floor (schema, errors, files, and
  the test-bed format that the command line also reads),
  the family interface and their own modules; the engine reaches a family
  only through the registry;
* only the store joins run-directory paths;
* importing ``study`` and ``analysis`` (every module of both) changes nothing
  in ``os.environ``.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import zipfile
from collections import defaultdict
from pathlib import Path

import pytest

from seedsweep.study.rooms import INSTALLED_FOLDERS, folder_name

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("seedsweep", "study", "analysis")
MAX_LINES = 350


def modules(*roots: str) -> list[Path]:
    return sorted(p for r in roots for p in (REPO / r).rglob("*.py"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def runtime_imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, imported names) of every import, those inside
    ``if TYPE_CHECKING:`` blocks included (an annotation's import is an arrow
    too); relative imports resolved against ``path``."""
    tree = ast.parse(path.read_text())
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, folder_name(a.name), []) for a in node.names)
        elif (isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module") and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            out.append((node.lineno, folder_name(node.args[0].value), []))      # importlib.import_module("...")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            base, names = folder_name(base), [a.name for a in node.names]
            if base == "seedsweep" and set(names) <= set(INSTALLED_FOLDERS):
                out.extend((node.lineno, name, []) for name in names)     # from seedsweep import study
            else:
                out.append((node.lineno, base, names))
    return out


def test_no_module_is_over_350_lines():
    long = {str(p.relative_to(REPO)): n for p in modules(*PACKAGES)
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them along their ideas): {long}"


def _normalised(path: Path) -> list[tuple[int, str]]:
    """Code lines worth comparing: no blanks, comments, lone brackets, imports or docstring prose."""
    out = []
    in_doc = False
    for i, raw in enumerate(path.read_text().splitlines(), 1):
        line = " ".join(raw.split())
        quotes = line.count('"""')
        if in_doc or (quotes == 1 and line.startswith(('"""', 'r"""'))):
            in_doc = not in_doc if quotes == 1 else in_doc
            continue
        if (not line or line.startswith(("#", "import ", "from ", '"""')) or re.fullmatch(r"[\])}:,(\[{]+", line)):
            continue
        out.append((i, line))
    return out


def test_no_block_of_six_lines_is_repeated():
    window = 6
    seen: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for path in modules(*PACKAGES):
        lines = _normalised(path)
        for k in range(len(lines) - window + 1):
            block = tuple(text for _, text in lines[k:k + window])
            seen[block].append(f"{path.relative_to(REPO)}:{lines[k][0]}")
    repeated = {places[0]: places[1:] for places in seen.values() if len(places) > 1}
    assert not repeated, f"blocks of {window} lines written twice (give them one home): {repeated}"


def test_no_private_name_is_imported_across_modules():
    bad = []
    for path in modules(*PACKAGES, "tests", "benchmarks", "docs") + [REPO / "conftest.py"]:
        tree = ast.parse(path.read_text())
        imported_modules = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        bad.append(f"{path.relative_to(REPO)}:{node.lineno} imports {a.name}")
                    imported_modules.add(a.asname or a.name)
            elif isinstance(node, ast.Import):
                imported_modules |= {(a.asname or a.name).split(".")[0] for a in node.names}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in imported_modules and node.attr.startswith("_")
                    and not node.attr.startswith("__") and node.value.id not in ("sys", "os", "ray", "np", "pd")):
                bad.append(f"{path.relative_to(REPO)}:{node.lineno} reaches {node.value.id}.{node.attr}")
    assert not bad, "private names crossing a module boundary: " + "; ".join(bad)


#: the contracts every floor shares; test beds are one (a file format the command line expands and families score)
GROUND_FLOOR = {"study.schema", "study.errors", "study.files", "study.testbeds", "study.processes", "study.rooms"}
#: what families share: the registry, the interface, and data and model sources
FAMILY_COMMONS = {"study.families", "study.families.base", "study.families.datasets", "study.families.modelsources",
                  "study.families.sentencedata", "study.families.vectors", "study.families.evalsets",
                  "study.families.usercode", "study.families.view", "study.testbeds"}


def test_families_import_only_the_ground_floor_and_their_own_modules():
    bad = []
    for path in modules("study/families"):
        own = module_name(path).split(".")[:3]                  # study.families.<family>
        for line, target, _ in runtime_imports(path):
            if not target.startswith("study"):
                continue
            parts = target.split(".")
            allowed = target in GROUND_FLOOR or target in FAMILY_COMMONS or parts[:3] == own
            if not allowed:
                bad.append(f"{path.relative_to(REPO)}:{line} imports {target}")
    assert not bad, "families may import only schema, errors, files, the family commons and their own modules: " \
                    + "; ".join(bad)


def test_the_engine_reaches_families_only_through_the_registry():
    bad = []
    for path in modules("study"):
        if "families" in path.parts:
            continue
        for line, target, _ in runtime_imports(path):
            if target.startswith("study.families.") and target != "study.families.base":
                bad.append(f"{path.relative_to(REPO)}:{line} imports {target}")
    assert not bad, "; ".join(bad)


RUN_DIR_FILES = ("manifest.json", "configs.parquet", "trials.parquet", "epochs.parquet", "confusion.parquet",
                 "progress.json", "import.json", "claims.yaml", "looks.json", "extension.json")
#: a run directory's folders: flagged where a path is joined with them (``x / "shards"``, ``"work/..."``,
#: ``os.path.join(x, "trials")``), not as words (a table is also called "trials")
RUN_DIR_FOLDERS = ("trials", "epochs", "confusion", "shards", "work", "optuna")
PATH_ATTRIBUTES = ("path", "trials_dir", "epochs_dir", "confusion_dir", "manifest_path", "configs_path",
                   "shards_dir", "compacted_trials", "compacted_epochs", "compacted_confusion", "progress_path",
                   "import_path")


def test_only_the_store_joins_run_directory_paths():
    bad = []
    for path in modules(*PACKAGES):
        if path.relative_to(REPO).parts[:2] == ("study", "store"):          # the store room
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                    node.value in RUN_DIR_FILES or node.value.split("/")[0] in RUN_DIR_FOLDERS and "/" in node.value):
                bad.append(f"{path.relative_to(REPO)}:{node.lineno} names {node.value!r}")
            joined = [node.right] if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) else \
                node.args if isinstance(node, ast.Call) and ast.unparse(node.func) in ("os.path.join", "Path") else []
            for part in joined:
                if isinstance(part, ast.Constant) and part.value in RUN_DIR_FOLDERS:
                    bad.append(f"{path.relative_to(REPO)}:{node.lineno} joins {ast.unparse(node)}")
            if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
                    and isinstance(node.left, ast.Attribute) and node.left.attr in PATH_ATTRIBUTES
                    and "rd" in ast.unparse(node.left)):
                bad.append(f"{path.relative_to(REPO)}:{node.lineno} joins {ast.unparse(node)}")
    assert not bad, "run-directory paths outside the store: " + "; ".join(bad)


def test_importing_study_and_analysis_changes_nothing_in_the_environment():
    # First the two packages from a pristine environment; then every module of
    # both, after Ray's own import (which sets RAY_CLIENT_MODE itself: the
    # driver callback subclasses ray.tune.Callback), so only seedsweep's own
    # changes count.
    code = """
import json, os, pkgutil, importlib
def diff(a, b):
    return {k: [a.get(k), b.get(k)] for k in set(a) | set(b) if a.get(k) != b.get(k)}
pristine = dict(os.environ)
from seedsweep import study, analysis
changed = diff(pristine, dict(os.environ))
from ray import tune
before = dict(os.environ)
names = []
for pkg in (study, analysis):
    for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
            names.append(info.name)
changed.update(diff(before, dict(os.environ)))
print(json.dumps({"modules": names, "changed": changed}))
"""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert {"seedsweep.study.execution.runner", "seedsweep.study.execution.session",
            "seedsweep.study.families.transformer.model", "seedsweep.analysis.pages.dashboard"} \
        <= set(result["modules"])
    assert result["changed"] == {}, f"importing seedsweep changed os.environ: {result['changed']}"


def test_a_family_model_trains_where_ray_is_not_imported():
    # the GPU benchmark of populations runs the sentence family's classes on a
    # machine without Ray: importing study and a family's model must not import it
    code = """
import sys
from seedsweep import study
import seedsweep.study.families.sentence.population, seedsweep.study.spec.spacefile
assert "ray" not in sys.modules, "importing study imported Ray"
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]


@pytest.mark.parametrize("name", ["synthetic", "tagger", "transformer"])
def test_every_family_provides_the_typed_interface(name):
    from seedsweep.study.families import get_family
    from seedsweep.study.families.base import Family

    family = get_family(name)
    assert isinstance(family, Family)
    assert family.train_defaults.mode in ("max", "min") and family.name == name
    assert set(family.limits) <= set(family.defaults) or name == "synthetic"


# ------------------------------------------------------------ one-way imports

#: the floors, top to bottom: a module may import only from its own floor or below
FLOORS = ("command line", "analysis", "engine", "families", "ground floor")


def floor_of(module: str) -> str:
    """The floor of a project module (see :data:`FLOORS`)."""
    if module == "seedsweep" or module.startswith("seedsweep."):
        return "command line"
    if module == "analysis" or module.startswith("analysis."):
        return "analysis"
    if module in GROUND_FLOOR:
        return "ground floor"
    if module.startswith("study.families"):
        return "families"
    return "engine"


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for p in modules(*PACKAGES)}


def project_imports() -> list[tuple[str, int, str, bool]]:
    """(importer, line, imported project module, inside a function) of every
    runtime import among the project's modules, module level and inside
    functions alike. ``from package import name`` counts as an import of the
    submodule ``package.name`` when there is one, else of the package."""
    known = project_modules()
    out = []
    for importer, path in known.items():
        tree = ast.parse(path.read_text())
        in_function = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                       for n in ast.walk(f) if n is not f}
        by_line: dict[int, bool] = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) or (
                    isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module")):
                by_line[node.lineno] = id(node) in in_function
        for line, base, names in runtime_imports(path):
            targets = {f"{base}.{n}" for n in names if f"{base}.{n}" in known}
            if base in known and (not names or len(targets) < len(names)):
                targets.add(base)
            out += [(importer, line, t, by_line[line]) for t in sorted(targets) if t != importer]
    return out


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_has_no_circle():
    edges: dict[str, set[str]] = defaultdict(set)
    for importer, _, target, _ in project_imports():
        edges[importer].add(target)
    assert len(edges) > 50, "the graph was not read"
    found = circles(edges)
    assert not found, f"import circles (move what both need below them): {found}"


def test_imports_run_down_the_floors():
    up = [f"{importer} ({floor_of(importer)}):{line} imports {target} ({floor_of(target)})"
          for importer, line, target, _ in project_imports()
          if FLOORS.index(floor_of(target)) < FLOORS.index(floor_of(importer))]
    assert not up, f"imports running back up ({' -> '.join(FLOORS)}): " + "; ".join(up)


def layout_rooms() -> dict[str, tuple[str, ...]]:
    """docs/layout.py's ROOMS (the one place the rooms' order is written)."""
    sys.path.insert(0, str(REPO / "docs"))
    try:
        import layout
    finally:
        sys.path.remove(str(REPO / "docs"))
    return layout.ROOMS


#: each package's rooms, top to bottom (docs/layout.py draws them in this order): a module imports only
#: from its own room or one below it, and the package's ground floor (its top-level modules) is below them all
ROOMS = layout_rooms()


def room_of(module: str) -> tuple[str, int] | None:
    """(package, index of the module's room in :data:`ROOMS`; the ground floor is last), or None for a
    package's face and modules outside the two packages with rooms."""
    parts = module.split(".")
    if parts[0] not in ROOMS or len(parts) == 1:
        return None
    rooms = ROOMS[parts[0]]
    if parts[1] in rooms:
        return parts[0], rooms.index(parts[1])
    return parts[0], len(rooms)                       # a top-level module: the package's ground floor


def test_imports_run_down_the_rooms():
    up = []
    for importer, line, target, _ in project_imports():
        a, b = room_of(importer), room_of(target)
        if a and b and a[0] == b[0] and b[1] < a[1]:
            up.append(f"{importer}:{line} imports {target}")
    assert not up, ("imports running back up the rooms (" + "; ".join(f"{p}: {' -> '.join(r)} -> ground floor"
                                                                       for p, r in ROOMS.items()) + "): "
                    + "; ".join(up))


def test_the_rooms_are_the_tree_and_each_face_says_what_its_room_may_import():
    for pkg, rooms in ROOMS.items():
        found = {p.name for p in (REPO / pkg).iterdir() if (p / "__init__.py").is_file()}
        assert found == set(rooms), (pkg, found, rooms)
        for room in rooms:
            face = (REPO / pkg / room / "__init__.py").read_text()
            doc = ast.get_docstring(ast.parse(face)) or ""
            assert "May import" in doc or room == "families", f"{pkg}/{room}/__init__.py does not say what it may import"
    # the rules the rooms encode, named: statistics draw and read nothing, figures write no pages,
    # a study's definition neither runs nor stores
    order = {p: list(r) for p, r in ROOMS.items()}
    assert order["analysis"].index("stats") > order["analysis"].index("reading") > order["analysis"].index("figures") \
        > order["analysis"].index("pages")
    assert order["study"].index("spec") > order["study"].index("store") > order["study"].index("execution")


def test_every_name_a_room_face_lists_is_there_and_a_module_loads_no_sibling():
    code = """
import importlib, json, sys
import seedsweep.analysis.pages.report       # a report's tables: no page, no dashboard, no Kaleido
heavy = sorted(m for m in ("seedsweep.analysis.pages.htmlreport", "seedsweep.analysis.pages.dashboard", "kaleido")
               if m in sys.modules)
out = {"heavy": heavy}
for face in %r:
    mod = importlib.import_module(face)
    out[face] = {"names": len(mod.__all__), "missing": [n for n in mod.__all__ if getattr(mod, n, None) is None],
                 "outside": [n for n in mod.__all__ if not getattr(getattr(mod, n), "__module__", face).startswith(
                     ".".join(face.split(".")[:2]))]}
print(json.dumps(out))
"""
    faces = [f"seedsweep.{p}.{r}" for p, rooms in ROOMS.items() for r in rooms if r != "families"]
    r = subprocess.run([sys.executable, "-c", code % faces], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    found = json.loads(r.stdout.strip().splitlines()[-1])
    assert found.pop("heavy") == [], "a room's face loads its modules eagerly"
    for face, got in found.items():
        assert got["names"] >= 10 and not got["missing"], (face, got)


def test_no_engine_to_statistics_statistics_to_execution_or_anything_to_command_line_import():
    bad = [f"{importer}:{line} imports {target}" for importer, line, target, _ in project_imports()
           if (importer.startswith("study") and target.startswith("analysis"))
           or (importer.startswith("analysis") and target.startswith("study.execution"))   # reading runs nothing
           or (target.startswith("seedsweep") and not importer.startswith("seedsweep"))]
    assert not bad, "; ".join(bad)


def test_an_import_inside_a_function_says_why():
    known = project_modules()
    silent = []
    for importer, line, target, inside in project_imports():
        if inside:
            text = known[importer].read_text().splitlines()
            if "#" not in text[line - 1] and not text[line - 2].strip().startswith("#"):
                silent.append(f"{importer}:{line} imports {target}")
    assert not silent, "imports inside functions (move them to the top, or say on the line which heavy " \
                       "dependency they keep out): " + "; ".join(silent)


#: run in a fresh interpreter in a checkout's root: its public functions and methods, and those without a
#: docstring (``inspect.getdoc``: a method inherits its base's); packages a checkout lacks are skipped
DOCSTRING_PROBE = """
import importlib, inspect, json, os, pkgutil, sys
sys.path.insert(0, os.getcwd())
total, missing = 0, []
def here(name):   # the package as this checkout has it: seedsweep.study, or a checkout from before the namespace
    try:
        top = importlib.import_module(name)
    except ImportError:
        return None
    return top if os.path.abspath(top.__file__).startswith(os.getcwd() + os.sep) else None
for names in (("seedsweep",), ("seedsweep.study", "study"), ("seedsweep.analysis", "analysis")):
    top = next((t for t in map(here, names) if t is not None), None)
    if top is None:
        continue
    pkg = top.__name__
    names = [pkg] + [i.name for i in pkgutil.walk_packages(top.__path__, pkg + ".") if not i.name.endswith("__main__")]
    for name in names:
        for attr, obj in vars(importlib.import_module(name)).items():
            if attr.startswith("_") or getattr(obj, "__module__", None) != name:
                continue
            if inspect.isfunction(obj):
                total += 1
                if not inspect.getdoc(obj):
                    missing.append(f"{name}.{attr}")
            if inspect.isclass(obj):
                for a, f in vars(obj).items():
                    f = f.fget if isinstance(f, property) else getattr(f, "__func__", f)
                    if not a.startswith("_") and inspect.isfunction(f):
                        total += 1
                        if not inspect.getdoc(getattr(obj, a)) and not f.__doc__:
                            missing.append(f"{name}.{attr}.{a}")
print(json.dumps({"public": total, "missing": missing}))
"""


def test_every_public_function_and_method_has_a_docstring():
    r = subprocess.run([sys.executable, "-c", DOCSTRING_PROBE], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    found = json.loads(r.stdout.strip().splitlines()[-1])
    assert found["public"] > 400, found
    assert not found["missing"], f"public functions without a docstring: {found['missing']}"


def test_the_layout_page_is_the_tree():
    sys.path.insert(0, str(REPO / "docs"))
    try:
        import layout
    finally:
        sys.path.remove(str(REPO / "docs"))
    page = (REPO / layout.PAGE).read_text()
    assert layout.BEGIN in page and layout.END in page, "the Layout page has no generated block"
    now = page.split(layout.BEGIN, 1)[1].split(layout.END, 1)[0]
    assert now == layout.block(REPO), "the Layout page is not the tree: run python docs/layout.py --write"
    names = {line.split()[0] for line in now.splitlines() if line.strip() and not line.startswith("```")}
    files = {p.name for p in modules(*PACKAGES) if p.name != "__init__.py"}
    assert files <= names, f"modules missing from the Layout: {sorted(files - names)}"


def test_the_analysis_page_documents_the_notebook_api_and_nothing_else():
    from seedsweep import analysis

    section = (REPO / "docs" / "reference" / "api.md").read_text()
    spans = re.findall(r"`([^`]+)`", section)
    mentioned = {m.group(1) for s in spans if (m := re.match(r"([A-Za-z_]\w*)(?:\(|$)", s))}
    undocumented = sorted(set(analysis.__all__) - mentioned)
    assert not undocumented, f"exported by analysis but not on the Analysis page: {undocumented}"
    rows = [line.split(" | ")[0] for line in section.splitlines() if line.startswith("| `")]
    listed = {m.group(1) for row in rows for s in re.findall(r"`([^`]+)`", row)
              if (m := re.match(r"([A-Za-z_]\w*)\(", s))}
    missing = sorted(listed - set(analysis.__all__))
    assert not missing, f"documented as `seedsweep.analysis` names but not exported: {missing}"
    assert len(listed) > 30, listed


TOP_LEVEL_ROOM = re.compile(r"(?:^\s*(?:>>> |\.\.\. )?|[\"';]\s*)(?:from|import) (?:study|analysis|search_spaces)\b", re.M)


def test_the_rooms_are_imported_only_under_the_seedsweep_namespace():
    # a user's own study.py or analysis.py must stay theirs: nothing of ours may reach the rooms by their
    # top-level folder names (which work in a checkout's root and nowhere else)
    bad = []
    for path in sorted(REPO.glob("**/*")):
        if path.suffix not in (".py", ".md", ".ipynb") or {".venv", "build", "site", ".git"} & set(path.parts):
            continue
        if path.name == "test_user_namespace.py":     # a user's project, written by that test: theirs on purpose
            continue
        text = path.read_text()
        if path.suffix == ".ipynb":
            text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"] if c["cell_type"] == "code")
        bad += [f"{path.relative_to(REPO)}: {m.group(0).strip()}" for m in TOP_LEVEL_ROOM.finditer(text)]
    assert not bad, "imports of study/analysis/search_spaces outside the seedsweep namespace: " + "; ".join(bad)


def test_the_wheel_installs_one_namespace_with_every_module(tmp_path):
    # pyproject.toml lists each package by hand (package-dir maps the folders): a room added without its line
    # would be missing from every non-editable install (a cluster node's, a user's pip install)
    source = tmp_path / "source"          # a fresh copy: the checkout's build/ folder would hold stale files
    for name in ("seedsweep", "study", "analysis", "search_spaces"):
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                        "--disable-pip-version-check", str(source), "-w", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    names = set(zipfile.ZipFile(next(tmp_path.glob("*.whl"))).namelist())
    assert {n.split("/")[0] for n in names} == {"seedsweep", "seedsweep-0.1.0.dist-info"}, sorted(names)[:20]
    wanted = {f"seedsweep/{p.relative_to(REPO).as_posix()}" if p.parts[len(REPO.parts)] != "seedsweep"
              else p.relative_to(REPO).as_posix()
              for p in modules(*PACKAGES, "search_spaces") + sorted((REPO / "search_spaces").rglob("*.yaml"))}
    assert not wanted - names, f"missing from the wheel: {sorted(wanted - names)}"


def test_the_linter_passes_on_the_packages_tests_benchmarks_and_examples():
    ruff = Path(sys.executable).parent / "ruff"
    r = subprocess.run([str(ruff), "check", "--no-cache", "--output-format", "concise", str(REPO)], cwd=REPO,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"ruff check (make lint):\n{r.stdout[-3000:]}{r.stderr[-2000:]}"
    assert "All checks passed" in r.stdout


def test_reading_results_loads_nothing_that_runs_a_study():
    # every module of analysis imported: neither the engine's execution room (the runner, Ray's session, the
    # trial) nor Ray itself is loaded; the package face of study imports its Python API on first use only
    code = """
import importlib, json, pkgutil, sys
from seedsweep import analysis
for info in pkgutil.walk_packages(analysis.__path__, "seedsweep.analysis."):
    importlib.import_module(info.name)
print(json.dumps(sorted(m for m in sys.modules if m.startswith("seedsweep.study.execution") or m == "ray")))
"""
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == []


def face_allows(package: str, room: str) -> tuple[set[str], set[str]]:
    """What a room's face says it may import: the modules and rooms named in ``double backticks`` in its
    "May import:" clause (up to the first ';' or paragraph end), and the packages whose ground floor it names."""
    doc = ast.get_docstring(ast.parse((REPO / package / room / "__init__.py").read_text())) or ""
    clause = re.search(r"May import:(.*?)(?:;|\n\n|$)", doc, re.S).group(1)
    grounds = set(re.findall(r"the ground floor of\s+``(\w+)``", clause))
    named = set(re.findall(r"``([\w.]+)``", re.sub(r"the ground floor of\s+``\w+``", "", clause)))
    return named, grounds


def test_each_room_imports_only_what_its_face_says_it_may():
    faces = {(p, r): face_allows(p, r) for p, rooms in ROOMS.items() for r in rooms if r != "families"}
    bad = []
    for importer, line, target, _ in project_imports():
        parts, goal = importer.split("."), target.split(".")
        if len(parts) < 3 or (parts[0], parts[1]) not in faces or goal[:2] == parts[:2]:
            continue
        named, grounds = faces[(parts[0], parts[1])]
        ground = len(goal) == 2 and goal[0] in grounds and goal[1] not in ROOMS.get(goal[0], ())
        if not ground and not any(target == n or target.startswith(n + ".") for n in named):
            bad.append(f"{importer}:{line} imports {target} (the face of {parts[0]}.{parts[1]} allows "
                       f"{sorted(named)} and the ground floor of {sorted(grounds)})")
    assert not bad, "imports a room's face does not allow (fix the import or the face's 'May import:'): " \
                    + "; ".join(bad)


def test_every_optional_family_part_is_declared_on_the_base_with_the_registrys_default():
    # the engine asks for optional parts only through study.families.optional; FamilyBase declares each
    # with the same default, so a family author reads them in one place
    from seedsweep.study.families import OPTIONAL, optional
    from seedsweep.study.families.base import FamilyBase

    class Bare:                                   # a family that implements only the protocol
        pass

    base = FamilyBase()
    for name, default in OPTIONAL.items():
        assert name in vars(FamilyBase), f"FamilyBase does not declare the optional part {name!r}"
        ours, theirs = getattr(base, name), optional(Bare(), name)
        assert (ours(None), theirs(None)) == (default(None), default(None)) if callable(default) \
            else ours == theirs == default, name
    engine = [p for p in modules("study") if "families" not in p.parts]
    probes = [f"{p.relative_to(REPO)}:{i}" for p in engine for i, line in enumerate(p.read_text().splitlines(), 1)
              if re.search(r"(getattr|hasattr)\((family|fam|get_family\()", line)]
    assert not probes, f"the engine probes a family outside study.families.optional: {probes}"


def test_every_optional_model_part_is_declared_on_the_model_base_with_the_registrys_default():
    # the training loop asks a model for an optional hook only through study.families.model_part; ModelBase
    # declares each with the same default, so a model author reads them in one place
    from seedsweep.study.families import MODEL_OPTIONAL, model_part
    from seedsweep.study.families.base import ModelBase

    base = ModelBase()
    for name, default in MODEL_OPTIONAL.items():
        assert name in vars(ModelBase), f"ModelBase does not declare the optional model part {name!r}"
        ours, theirs = getattr(base, name), model_part(object(), name)
        assert (ours(1), theirs(1)) == (default(1), default(1)) if callable(default) else ours == theirs == default, \
            name
    engine = [p for p in modules("study") if "families" not in p.parts]
    probes = [f"{p.relative_to(REPO)}:{i}" for p in engine for i, line in enumerate(p.read_text().splitlines(), 1)
              if re.search(r"(getattr|hasattr)\(model\b", line)]
    assert not probes, f"the engine probes a model outside study.families.model_part: {probes}"


def _defined_names(tree: ast.AST):
    """(name, line) of every function, class, parameter and assigned name a module defines."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name, node.lineno
        elif isinstance(node, ast.arg):
            yield node.arg, node.lineno
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield node.id, node.lineno
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            yield node.attr, node.lineno


def test_one_word_per_concept():
    # docs/reference/layout.md, "One word per concept": a ledger is only the reproduction ledger over many
    # studies; a batch (trials per Tuner.fit) is never called a wave; a bare `spec` parameter is a ComparisonSpec
    ledger_homes = {"seedsweep/ledger.py", "analysis/pages/reproductions.py", "seedsweep/cli.py"}
    bad = []
    for path in modules("study", "analysis", "seedsweep"):
        rel = str(path.relative_to(REPO))
        tree = ast.parse(path.read_text())
        if "ledger" in path.stem and rel not in ledger_homes:
            bad.append(f"{rel}: a module named ledger")
        for name, line in _defined_names(tree):
            if "ledger" in name.lower() and rel not in ledger_homes:
                bad.append(f"{rel}:{line} {name} (ledger means the reproduction ledger only)")
            if "wave" in name.lower() and path.name == "feed.py":
                bad.append(f"{rel}:{line} {name} (the trials of one Tuner.fit are a batch)")
        for node in ast.walk(tree):
            if isinstance(node, ast.arg) and node.arg == "spec" and node.annotation is not None \
                    and "ComparisonSpec" not in ast.unparse(node.annotation):
                bad.append(f"{rel}:{node.lineno} spec: {ast.unparse(node.annotation)} (name it trial, import_spec…)")
    assert not bad, "one word per concept (docs/reference/layout.md): " + "; ".join(bad)
