"""Public names that load on first use (PEP 562), for the packages' `__init__.py`.

A package lists its names, `_LAZY = {name: module}` (or `{name: (module,
attribute)}`, attribute None for the module itself), and sets
`__getattr__, __dir__ = _lazy.names(__name__, _LAZY)`: importing the package
loads none of them (a tool reads its files before TensorFlow loads), and
`dir()` lists them all. `tests/test_layout.py` reads each `_LAZY` as the
package's imports, and this module is the one place that imports by name.
"""

import importlib
import sys


def names(package, lazy):
    """(`__getattr__`, `__dir__`) for the package named `package`, whose public names are `lazy`."""
    def __getattr__(name):
        if name not in lazy:
            raise AttributeError("module %r has no attribute %r" % (package, name))
        target = lazy[name]
        module_name, attribute = target if isinstance(target, tuple) else (target, name)
        value = importlib.import_module(module_name)
        if attribute is not None:
            value = getattr(value, attribute)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(lazy))

    return __getattr__, __dir__
