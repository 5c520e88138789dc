"""A minimal import sandbox: run a few real modules of a package that needs a GPU stack, on a CPU.

``Sandbox(root, real=...)`` loads the modules named in ``real`` from their files under ``root`` (an
unpacked wheel or an installed package's folder), by their own names, so their code objects keep their
file names and line numbers. Every other module they import is a stub, except the standard library:
the rest of the package, torch, triton, flashinfer, sgl_kernel and whatever else a GPU build needs. A
stub module hands out ``Stub`` objects for any attribute; a ``Stub`` can be called, subscripted, used
as a decorator or a base class, compared and combined, and is falsy (a feature it stands for is off).
``overrides`` replace whole modules with plain namespaces (configuration the real code reads);
``outside`` names third-party packages the real modules get for real (numpy, whose arrays the code
computes with), as the standard library is.

The sandbox keeps its modules to itself: ``with sandbox:`` puts them into ``sys.modules`` for the
duration (the real code imports lazily inside functions) and takes them out again, restoring whatever
the process had under those names (a real torch, a real installed package). Nothing is written to disk.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any


class Stub:
    """Stands in for anything a stubbed module exports. Falsy; every operation gives another Stub."""

    def __init__(self, name: str = "stub") -> None:
        object.__setattr__(self, "_name", name)

    def __repr__(self) -> str:
        return f"<stub {object.__getattribute__(self, '_name')}>"

    def __getattr__(self, name: str) -> Stub:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Stub(f"{object.__getattribute__(self, '_name')}.{name}")

    def __setattr__(self, name: str, value: object) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Stub:
        return Stub(f"{object.__getattribute__(self, '_name')}()")

    def __getitem__(self, key: object) -> Stub:
        return Stub(f"{object.__getattribute__(self, '_name')}[]")

    def __setitem__(self, key: object, value: object) -> None:
        pass

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __bool__(self) -> bool:
        return False

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (object,)  # ``class X(stubbed.Base)`` builds a plain class

    def __enter__(self) -> Stub:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __eq__(self, other: object) -> bool:
        return other is self

    def __hash__(self) -> int:
        return id(self)

    def _same(self, *args: object) -> Stub:
        return self

    __or__ = __ror__ = __and__ = __rand__ = __neg__ = __invert__ = _same

    def _computed(self, *args: object) -> Stub:
        """Arithmetic or an ordering with a stub: the real code computes a number from something the
        sandbox stands in for, so its answer would be made up. StubComputed names the stub (an adapter
        reports it as its glue not fitting the release, never as the release's answer)."""
        raise StubComputed(f"the release computed with {self!r}, which the sandbox stubs (a name the adapter does not provide)")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _computed
    __truediv__ = __floordiv__ = __mod__ = __rtruediv__ = __rfloordiv__ = __rmod__ = _computed
    __lt__ = __le__ = __gt__ = __ge__ = _computed
    __index__ = __int__ = __float__ = _computed


class StubComputed(TypeError):
    """Real code computed a number with a Stub (see Stub._computed)."""


class StubModule(types.ModuleType):
    """A module (and package) whose every attribute is a Stub."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__path__: list[str] = []
        self.__cpgraph_stub__ = True

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = Stub(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _Loader(importlib.abc.Loader):
    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        override = self.sandbox.overrides.get(spec.name)
        if override is not None:
            module = types.ModuleType(spec.name)
            module.__dict__.update(override)
            module.__path__ = []
            return module
        return StubModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        self.sandbox.modules[module.__name__] = module


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        box = self.sandbox
        if fullname in box.real:
            location = box.file_of(fullname)
            if location is None:
                return None
            package = os.path.basename(location) == "__init__.py"
            spec = importlib.util.spec_from_file_location(
                fullname, location, submodule_search_locations=[os.path.dirname(location)] if package else None
            )
            return spec
        if box.stubs(fullname):
            return importlib.machinery.ModuleSpec(fullname, _Loader(box), is_package=True)
        return None


class Sandbox:
    """Real modules ``real`` of the package ``package`` from the folder ``root`` (which holds the
    package folder), everything else of it stubbed, plus the third-party modules they import."""

    def __init__(
        self,
        root: str,
        package: str,
        real: Iterable[str],
        overrides: Mapping[str, Mapping[str, object]] | None = None,
        outside: Iterable[str] = (),
    ) -> None:
        self.root = os.path.abspath(root)
        self.package = package
        self.outside = frozenset(outside)
        self.real = frozenset(name for name in real if self._path_of(name) is not None)
        self.overrides: dict[str, Mapping[str, object]] = dict(overrides or {})
        self.modules: dict[str, types.ModuleType] = {}
        self._saved: list[dict[str, types.ModuleType | None]] = []
        self._finder = _Finder(self)
        self._seen = -1
        self._clash: list[str] = []

    def _path_of(self, name: str) -> str | None:
        parts = name.split(".")
        base = os.path.join(self.root, *parts)
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(candidate):
                return candidate
        return None

    def file_of(self, name: str) -> str | None:
        """The file module ``name`` is loaded from, when it is one of the real ones."""
        return self._path_of(name) if name in self.real else None

    def stubs(self, name: str) -> bool:
        """Is ``name`` served as a stub (or an override)? The package's other modules and anything
        outside the standard library and ``outside`` are."""
        if name in self.real:
            return False
        if name in self.overrides:
            return True
        top = name.split(".")[0]
        if top == self.package:
            return True
        return top not in sys.stdlib_module_names and top != "cpgraph" and top not in self.outside

    def load(self, name: str) -> types.ModuleType:
        """Import ``name`` inside the sandbox and return it."""
        with self:
            __import__(name)
            return sys.modules[name]

    def _conflicts(self) -> list[str]:
        """Names the process holds that the sandbox serves itself (a real torch, an installed package);
        recomputed only when the process imported something new."""
        if len(sys.modules) != self._seen:
            self._clash = [n for n in sys.modules if n not in self.modules and (n in self.real or self.stubs(n))]
            self._seen = len(sys.modules)
        return self._clash

    def __enter__(self) -> Sandbox:
        saved: dict[str, types.ModuleType | None] = {}
        for name in self._conflicts():
            module = sys.modules.pop(name, None)
            if module is not None:
                saved[name] = module
        for name, module in self.modules.items():
            saved.setdefault(name, sys.modules.get(name))
            sys.modules[name] = module
        self._saved.append(saved)
        sys.meta_path.insert(0, self._finder)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.meta_path.remove(self._finder)
        saved = self._saved.pop()
        for name in [n for n in self.real if n in sys.modules] + list(self.modules):
            module = sys.modules.pop(name, None)
            if module is not None:
                self.modules[name] = module
        for name, module in saved.items():
            if module is not None:
                sys.modules[name] = module
        self._seen = -1 if exc[0] is not None else len(sys.modules)
