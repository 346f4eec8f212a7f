"""A package's public names loaded from their submodule on first use (PEP 562 module ``__getattr__``).

Importing a submodule runs its package's ``__init__`` first: one that imports every submodule makes any import
from the package load all of it (a worker reading PCD samples would load scipy.interpolate for the fit). With
``__getattr__ = lazy_exports(__name__, {...})``, ``from package import name`` still works and loads only the
submodule that defines ``name``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], object]:
    """The ``__getattr__`` of ``package``: ``exports`` maps each public name to the submodule that defines it."""

    def lazy_getattr(name: str) -> object:
        sub = exports.get(name)
        if sub is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{sub}"), name)
        setattr(sys.modules[package], name, value)  # later lookups are plain attribute reads
        return value

    return lazy_getattr
