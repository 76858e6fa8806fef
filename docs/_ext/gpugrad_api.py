"""Two directives that write autodoc directives from gpugrad's own ``__all__`` lists, so the API reference
lists every public name, under the name a user calls it by (``gpugrad.exp``, not ``gpugrad.ops.elementwise.math.exp``),
and a name added to an ``__all__`` appears without an edit here.

``.. gpugrad-members:: MODULE`` documents the classes and functions of ``MODULE.__all__`` (or of
``:names:``, space-separated) as ``MODULE.name``; ``:skip:`` leaves names out.
``.. gpugrad-ops::`` gives each op family (``gpugrad.ops._MODULES``) a section with its ops as ``gpugrad.name``.
"""
import importlib
import re
import inspect

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles


def autodoc_lines(module_name, names):
    """The autodoc directives (reST lines) of ``module_name.<name>`` for each class and function in ``names``."""
    module = importlib.import_module(module_name)
    lines = []
    for name in names:
        obj = getattr(module, name)
        if inspect.isclass(obj) and obj.__module__.split(".")[0] in ("gpugrad", "docs_probe"):
            lines += [f".. autoclass:: {module_name}.{name}", "   :members:"]
            # an error's bases say what to catch it as; other classes' bases are private helpers
            lines += ["   :show-inheritance:", ""] if issubclass(obj, BaseException) else [""]
        elif callable(obj) and not inspect.isclass(obj) and not inspect.ismodule(obj):
            lines += [f".. autofunction:: {module_name}.{name}", ""]
        elif isinstance(obj, (tuple, frozenset, dict, str, int, float)) and module_name != "gpugrad":
            lines += data_lines(module, name, obj)  # a module's table (gg's NumPy constants aside)
    return lines


def data_lines(module, name, value):
    """A ``py:data`` entry for a module's table: its value and the ``#`` comment above its assignment."""
    found = re.search(rf"((?:^#.*\n)*)^{name}\b[^=\n]*=", inspect.getsource(module), re.M)
    comment = " ".join(line.lstrip("# ") for line in found.group(1).splitlines()) if found else ""
    shown = repr(value)
    lines = [f".. py:data:: {name}", f"   :module: {module.__name__}"]
    lines += [f"   :value: {shown}"] if len(shown) < 300 else []
    return lines + ["", f"   {comment}" if comment else "", ""]


class _Generated(SphinxDirective):
    def parse_lines(self, lines):
        node = nodes.section() if any(line.startswith("---") for line in lines) else nodes.container()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, source=f"<{self.name}>"), node)
        return node.children


class GpugradMembers(_Generated):
    required_arguments = 1
    option_spec = {"names": directives.unchanged, "skip": directives.unchanged}

    def run(self):
        module_name = self.arguments[0]
        module = importlib.import_module(module_name)
        names = self.options["names"].split() if "names" in self.options else list(module.__all__)
        skip = set(self.options.get("skip", "").split())
        return self.parse_lines(autodoc_lines(module_name, [n for n in names if n not in skip]))


class GpugradOps(_Generated):
    def run(self):
        from gpugrad import ops
        lines = []
        for module in ops._MODULES:
            family = module.__name__.rsplit(".", 1)[1]
            summary = (module.__doc__ or "").strip().split("\n", 1)[0].rstrip(".")
            title = f"{family.replace('_', ' ').capitalize()}"
            public = [name for name in module.__all__ if name in ops.__all__]  # raw and linalg ops live elsewhere
            if public:
                lines += [title, "-" * len(title), "", f".. py:module:: {module.__name__}", "",
                          f"*{summary}* (``gpugrad/ops/{family}.py``)", ""]
                lines += autodoc_lines("gpugrad", public)
        return self.parse_lines(lines)


def setup(app):
    app.add_directive("gpugrad-members", GpugradMembers)
    app.add_directive("gpugrad-ops", GpugradOps)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
