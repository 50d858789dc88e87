"""Finding the user's function: ``task.function`` as ``FILE.py:NAME`` or ``package.module:NAME``.

A file is relative to the study file's folder; a module is found on
``sys.path`` (installed, or beside the study file: its folder is searched
first). :func:`check_reference` checks what can be checked without running
the user's code (``seedsweep check``): the file or module exists, and when
the name is a plain ``def`` at the module's top level, that it takes one
argument. :func:`load_function` imports it (``check --resolve``, the start
of ``run``, each worker) and checks the signature of whatever the name is.
The file (or the module's file) is what the manifest hashes.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...errors import UserError

__all__ = ["Reference", "parse_reference", "check_reference", "load_function"]

_FIX_FORM = "Write task.function as FILE.py:NAME (beside the study file) or package.module:NAME."


@dataclass(frozen=True)
class Reference:
    """A parsed ``task.function``: a file (absolute) or a module, and the attribute path in it."""

    text: str
    name: str
    file: Path | None = None
    module: str | None = None


def parse_reference(text: object, base: Path, where: str) -> Reference:
    """``text`` split into a file or module and a name (no I/O).

    >>> parse_reference("train.py:fit", Path("/s"), "task.function").file
    PosixPath('/s/train.py')
    >>> parse_reference("mypkg.train:fit", Path("/s"), "task.function").module
    'mypkg.train'
    """
    if not isinstance(text, str) or text.count(":") != 1:
        raise UserError(where, f"expected 'FILE.py:NAME' or 'module:NAME', got {text!r}.", _FIX_FORM)
    target, name = (part.strip() for part in text.split(":"))
    if not target or not name or not all(p.isidentifier() for p in name.split(".")):
        raise UserError(where, f"{text!r} does not name a function after the colon.", _FIX_FORM)
    if target.endswith(".py") or "/" in target:
        path = Path(target).expanduser()
        return Reference(text=text, name=name, file=(path if path.is_absolute() else base / path).resolve())
    if not all(p.isidentifier() for p in target.split(".")):
        raise UserError(where, f"{target!r} is neither a .py file nor a module path.", _FIX_FORM)
    return Reference(text=text, name=name, module=target)


def source_file(ref: Reference, base: Path, where: str) -> Path:
    """The file that defines the function (a module is looked up without importing it)."""
    if ref.file is not None:
        if not ref.file.is_file():
            raise UserError(where, f"no such file: {ref.file}.",
                            "Give a path relative to the study file's folder (or an absolute one).")
        return ref.file
    with _on_path(base):
        try:
            module_spec = importlib.util.find_spec(ref.module)
        except (ImportError, ValueError) as exc:
            module_spec, cause = None, f" ({exc})"
        else:
            cause = ""
    if module_spec is None or not module_spec.origin or not module_spec.origin.endswith(".py"):
        raise UserError(where, f"no module named {ref.module!r} was found{cause}.",
                        "Install the package that holds it (pip install -e ...), or put the module beside the "
                        "study file; check the spelling.")
    return Path(module_spec.origin)


def check_reference(ref: Reference, base: Path, where: str) -> Path:
    """The checks that need no import: the file exists; a top-level ``def``
    of that name takes one positional argument. Returns the source file."""
    path = source_file(ref, base, where)
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as exc:
        raise UserError(f"{where} ({path}, line {exc.lineno})", f"the file does not parse: {exc.msg}.",
                        "Fix the syntax error.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(where, f"cannot read {path} ({exc}).", "Give a readable UTF-8 Python file.") from None
    if "." in ref.name:
        return path                 # a method or nested name: checked when imported
    defined = {node.name: node for node in tree.body
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    bound = {t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
             for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)}
    imported = {(a.asname or a.name).split(".")[0] for node in tree.body
                if isinstance(node, (ast.Import, ast.ImportFrom)) for a in node.names}
    node = defined.get(ref.name)
    if node is None:
        if ref.name in bound | imported or any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
                                               for n in tree.body):
            return path             # made at import time: checked when imported
        raise UserError(where, f"{path.name} defines no function {ref.name!r}.",
                        f"Define 'def {ref.name}(trial):' at the top level of {path}, or name one it defines"
                        + (f" ({', '.join(sorted(defined))})." if defined else "."))
    if isinstance(node, ast.AsyncFunctionDef):
        raise UserError(where, f"{ref.name} in {path.name} is 'async def'.", "Make it a plain 'def fit(trial):'.")
    if isinstance(node, ast.FunctionDef):
        args = node.args
        positional = args.posonlyargs + args.args
        required = len(positional) - len(args.defaults)
        kw_required = [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None]
        if required != 1 and not (required == 0 and (positional or args.vararg)) or kw_required:
            raise UserError(f"{where} ({path}, line {node.lineno})",
                            f"{ref.name}({', '.join(a.arg for a in positional)}) must take exactly one argument, "
                            "the trial.", f"Write 'def {ref.name}(trial):' and read trial.params, trial.seed, "
                            "trial.dir and trial.max_epochs; report with trial.report(dev=..., test=...).")
    return path


class _on_path:
    """``folder`` first on ``sys.path`` for the length of a ``with`` block."""

    def __init__(self, folder: Path) -> None:
        self.folder = str(folder)

    def __enter__(self) -> None:
        sys.path.insert(0, self.folder)

    def __exit__(self, *exc) -> None:
        try:
            sys.path.remove(self.folder)
        except ValueError:
            pass


def load_function(ref: Reference, base: Path, where: str) -> Callable:
    """Import the function ``ref`` names and check that it takes one argument.
    A file is imported under a name made from its path (two studies' ``train.py``
    never collide); its folder is on ``sys.path`` so its own imports work."""
    path = source_file(ref, base, where)
    if ref.file is not None:
        # named by path and content: two studies' train.py never collide, and an edited file is imported anew
        digest = hashlib.sha256(str(path).encode() + b"\0" + path.read_bytes()).hexdigest()[:16]
        module_name = f"seedsweep_user_{digest}"
        module = sys.modules.get(module_name)
        if module is None:
            module_spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[module_name] = module
            if str(path.parent) not in sys.path:
                sys.path.insert(0, str(path.parent))
            try:
                module_spec.loader.exec_module(module)
            except Exception as exc:
                del sys.modules[module_name]
                raise UserError(where, f"importing {path} raised {type(exc).__name__}: {exc}.",
                                "Fix the error at import time (run 'python FILE' to see the traceback).") from exc
    else:
        if str(base) not in sys.path:
            sys.path.insert(0, str(base))
        try:
            module = importlib.import_module(ref.module)
        except Exception as exc:
            raise UserError(where, f"importing {ref.module} raised {type(exc).__name__}: {exc}.",
                            "Fix the error at import time, or install the package.") from exc
    target = module
    for part in ref.name.split("."):
        if not hasattr(target, part):
            raise UserError(where, f"{path.name} defines no {ref.name!r}.",
                            f"Define 'def {ref.name}(trial):' in {path}, or name a function it defines.")
        target = getattr(target, part)
    if not callable(target):
        raise UserError(where, f"{ref.name} in {path.name} is a {type(target).__name__}, not a function.",
                        f"Name a function 'def {ref.name}(trial):'.")
    try:
        inspect.signature(target).bind(object())
    except TypeError:
        raise UserError(where, f"{ref.name}{inspect.signature(target)} cannot be called with one argument, the trial.",
                        f"Write 'def {ref.name.split('.')[-1]}(trial):'.") from None
    except ValueError:
        pass                        # a builtin without a signature: let it be
    return target
