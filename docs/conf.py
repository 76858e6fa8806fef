"""Sphinx configuration of gpugrad's documentation (the user guide and the API reference).

Sphinx because the API reference comes from the docstrings (autodoc, with napoleon reading their
Google-style ``Example:`` sections), the guide is Markdown (MyST-Parser), and ``-W --keep-going -n``
makes every warning, an unresolved internal reference included, an error. Build from the repository
root with the ``docs`` extra installed::

    python -m sphinx -W --keep-going -n -b html docs build/docs

Nothing here reaches the network: there is no intersphinx, and tests/test_docs.py checks that every
relative link and anchor of the built HTML resolves.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # gpugrad from this checkout
sys.path.insert(0, os.path.join(HERE, "_ext"))

import gpugrad  # noqa: E402

project = "gpugrad"
author = "the gpugrad developers"
copyright = "the gpugrad developers (MIT licence)"
release = version = gpugrad.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "myst_parser",
    "gpugrad_api",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "README.md"]
root_doc = "index"

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3  # `[...](page.md#a-heading)` resolves to the heading's anchor

napoleon_google_docstring = True
napoleon_numpy_docstring = False

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
add_module_names = False

nitpicky = True
# Types outside gpugrad (NumPy, CuPy, the standard library's typing forms) have no page here: intersphinx
# would need the network. gpugrad's own names must resolve.
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|cupy|cupyx|ml_dtypes|mpi4py|typing|typing_extensions|collections|"
               r"collections\.abc|types|os|pathlib|io|contextlib|enum|threading|builtins|abc|"
               r"concurrent|dataclasses|functools)(\..*)?"),
    (r"py:.*", r"(int|float|bool|str|bytes|complex|object|None|type|tuple|list|dict|set|frozenset|"
               r"callable|Callable|Any|Sequence|Iterable|Iterator|Mapping|Optional|Union|Literal|"
               r"ndarray|ArrayLike|PathLike|Generator|TypeVar|ParamSpec)"),
]

nitpick_ignore = [
    # named tuples and helper types that functions return; their fields are in the functions' docstrings
    ("py:class", name) for name in ("SVDResult", "QRResult", "EighResult", "EigResult", "SlogdetResult",
                                    "GradientExplanation", "Geometry", "_random.Generator")
] + [
    # internal modules that docstrings name as where something is done (they have no page)
    ("py:mod", name) for name in ("gpugrad.traced", "gpugrad.jacobians", "gpugrad._device_checks",
                                  "gpugrad.ops._autocast", "gpugrad._nest")
]

html_theme = "furo"
html_title = f"gpugrad {release}"
html_static_path = ["_static"]
html_show_sourcelink = False
