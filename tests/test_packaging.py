"""The package as pip sees it: one version source, the MIT licence, the built wheel's files and
metadata, and the resolution of the plain install and each CUDA extra on Python 3.10 to 3.13.

The fast tests read pyproject.toml, LICENSE and the package; the slow ones build the wheel from a
copy of this tree (so no stale ``build/`` of the checkout leaks into it) and ask pip, against the
configured index, what ``pip install gpugrad[EXTRA]`` would install on each Python version."""
import concurrent.futures
import email.parser
import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

import gpugrad as gg
from gpugrad.cli import main

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli", reason="Python 3.10 reads pyproject.toml with tomli")

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PYTHON_VERSIONS = ("3.10", "3.11", "3.12", "3.13")
EXTRAS = ("", "cuda12", "cuda13")  # "": pip install gpugrad, the CPU install
CUPY_OF_EXTRA = {"": None, "cuda12": "cupy-cuda12x", "cuda13": "cupy-cuda13x"}
# Files inside a package directory that stay in the repository on purpose, with the reason.
REPOSITORY_ONLY = {
    "benchmarks/device_run.sh": "run from a repository checkout on a lent GPU machine, gpugrad not installed",
}
COPY_IGNORE = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
                                     ".benchmarks", ".hypothesis", ".venv", "venv*", ".whl")


def minimum_version(requirement, name):
    """The ``>=`` bound of ``name`` in a requirement string, as a tuple of ints (None without one).

    Example:
        >>> minimum_version("setuptools>=77.0", "setuptools")
        (77, 0)
    """
    match = re.fullmatch(rf"{re.escape(name)}\s*>=\s*([\d.]+)\s*(,.*)?", requirement.strip())
    return tuple(int(part) for part in match.group(1).split(".")) if match else None


# --------------------------------------------------------------------------- fast: the sources

def test_the_version_has_one_source_the_package():
    project = PYPROJECT["project"]
    assert "version" not in project, "pyproject.toml states a version of its own besides gpugrad.__version__"
    assert "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "gpugrad.__version__"}
    assignments = re.findall(r"^__version__ = \"([^\"]+)\"$", (ROOT / "gpugrad" / "__init__.py").read_text(),
                             re.M)
    assert assignments == [gg.__version__], "gpugrad/__init__.py must assign __version__ once, as a literal"


def test_gpugrad_info_and_version_flag_show_the_package_version(capsys):
    assert main(["info"]) == 0
    first_line = capsys.readouterr().out.splitlines()[0]
    assert first_line.startswith(f"gpugrad {gg.__version__} (Python "), first_line
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"gpugrad {gg.__version__}"


def test_the_installed_metadata_agrees_when_installed_from_this_tree():
    try:
        dist = importlib.metadata.distribution("gpugrad")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("gpugrad is not installed (imported from the checkout on PYTHONPATH)")
    url = json.loads(dist.read_text("direct_url.json") or "{}").get("url", "")
    if not url.startswith("file://") or Path(url.removeprefix("file://")).resolve() != ROOT:
        pytest.skip(f"the installed gpugrad comes from {url or 'an index or a build folder'}, not this tree")
    assert dist.version == gg.__version__


def test_the_licence_is_mit_and_declared_by_spdx_expression():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n")
    assert re.search(r"^Copyright \(c\) 2026 the gpugrad developers$", text, re.M)
    assert "THE SOFTWARE IS PROVIDED \"AS IS\"" in text
    project = PYPROJECT["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    assert not [c for c in project["classifiers"] if c.startswith("License ::")], \
        "a License classifier beside an SPDX expression is an error for setuptools"


def test_the_build_requirement_reads_spdx_licences():
    bounds = [minimum_version(r, "setuptools") for r in PYPROJECT["build-system"]["requires"]]
    bounds = [b for b in bounds if b is not None]
    assert bounds and bounds[0] >= (77,), "setuptools reads `license = \"MIT\"` and license-files from 77 on"


def test_the_classifiers_name_each_supported_python():
    classifiers = PYPROJECT["project"]["classifiers"]
    lowest, above = PYPROJECT["project"]["requires-python"].split(",")
    assert lowest == f">={PYTHON_VERSIONS[0]}"
    major, minor = PYTHON_VERSIONS[-1].split(".")
    assert above == f"<{major}.{int(minor) + 1}"  # no newer Python than CI tests
    for version in PYTHON_VERSIONS:
        assert f"Programming Language :: Python :: {version}" in classifiers
    for prefix in ("Development Status :: ", "Environment :: GPU :: NVIDIA CUDA", "Operating System :: OS Independent",
                   "Topic :: Scientific/Engineering"):
        assert any(c.startswith(prefix) for c in classifiers), prefix


def test_the_project_urls_share_one_home():
    urls = PYPROJECT["project"]["urls"]
    assert {"Homepage", "Documentation", "Issues"} <= set(urls)
    assert all(url.startswith(urls["Homepage"]) for url in urls.values()), urls


def test_every_pin_of_the_kernelcheck_extra_says_why():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = re.search(r"^kernelcheck = \[\n(.*?)^\]", text, re.M | re.S).group(1).splitlines()
    pins = [i for i, line in enumerate(block) if line.strip().startswith('"')]
    assert len(pins) == len(PYPROJECT["project"]["optional-dependencies"]["kernelcheck"]) > 0
    for i in pins:
        assert "==" in block[i], block[i]
        assert i > 0 and block[i - 1].strip().startswith("#"), f"no comment above the pin {block[i].strip()}"


def test_every_package_folder_of_gpugrad_is_listed():
    # the list in pyproject.toml is written by hand (kernels/ and benchmarks/ map in): a folder left out
    # would be missing from the wheel, and its imports would fail only where gpugrad is installed from one
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "gpugrad").rglob("__init__.py")
             if "__pycache__" not in p.parts}
    assert found - listed == set(), f"add to pyproject.toml's [tool.setuptools] packages: {sorted(found - listed)}"


def test_py_typed_is_package_data():
    assert (ROOT / "gpugrad" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["gpugrad"]


# --------------------------------------------------------------------------- slow: the wheel and pip's resolution

def _setuptools_here():
    try:
        return tuple(int(p) for p in re.findall(r"\d+", importlib.metadata.version("setuptools"))[:2])
    except importlib.metadata.PackageNotFoundError:
        return None


def _index_reason():
    """None when pip reaches its index (it lists cupy-cuda12x's releases), else why not."""
    proc = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "cupy-cuda12x", "--timeout", "15",
                           "--retries", "1", "--disable-pip-version-check"],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode == 0 and "cupy-cuda12x" in proc.stdout:
        return None
    return f"pip cannot reach its package index: {(proc.stderr or proc.stdout).strip().splitlines()[-1:]}"


@pytest.fixture(scope="module")
def index_reason():
    return _index_reason()


@pytest.fixture(scope="module")
def wheel(index_reason):
    """The wheel ``pip wheel`` builds from a clean copy of this tree (deleted after the module)."""
    with tempfile.TemporaryDirectory(prefix="gpugrad-wheel-") as work:
        source = Path(work) / "source"
        shutil.copytree(ROOT, source, ignore=COPY_IGNORE)
        cmd = [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-w", work, "-q",
               "--disable-pip-version-check"]
        requirement = PYPROJECT["build-system"]["requires"]
        needed = max(b for b in (minimum_version(r, "setuptools") for r in requirement) if b is not None)
        if (_setuptools_here() or (0,)) >= needed:
            cmd += ["--no-build-isolation", "--check-build-dependencies"]  # offline, with this setuptools
        elif index_reason is not None:
            pytest.skip(f"no {requirement} here to build with, and {index_reason}")
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"pip wheel failed:\n{proc.stdout}\n{proc.stderr}"
        (built,) = Path(work).glob("gpugrad-*.whl")
        yield built


def _package_dirs():
    """{package name: its directory in the source tree}, from [tool.setuptools]."""
    setuptools = PYPROJECT["tool"]["setuptools"]
    dirs = {}
    for package in setuptools["packages"]:
        mapped = setuptools.get("package-dir", {}).get(package)
        dirs[package] = ROOT / (mapped or package.replace(".", "/"))
    return dirs


@pytest.mark.slow
def test_the_wheel_holds_every_file_of_its_packages_the_licence_and_py_typed(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    dist_info = f"gpugrad-{gg.__version__}.dist-info"
    assert f"{dist_info}/licenses/LICENSE" in names
    assert "gpugrad/py.typed" in names
    assert "gpugrad/data/digits.npz" in names
    missing = []
    for package, directory in _package_dirs().items():
        for path in directory.iterdir():
            if not path.is_file() or path.suffix == ".pyc":
                continue
            if path.relative_to(ROOT).as_posix() in REPOSITORY_ONLY:
                continue
            if f"{package.replace('.', '/')}/{path.name}" not in names:
                missing.append(path.relative_to(ROOT).as_posix())
    assert not missing, f"files of the packages that the wheel leaves out: {missing}"
    kernels = sorted(p.name for p in (ROOT / "kernels").glob("*.cu"))
    assert kernels and all(f"gpugrad/kernels/{k}" in names for k in kernels)


@pytest.mark.slow
def test_the_wheel_metadata_matches_the_package(wheel):
    with zipfile.ZipFile(wheel) as z:
        metadata = email.parser.Parser().parsestr(z.read(f"gpugrad-{gg.__version__}.dist-info/METADATA").decode())
    assert metadata["Version"] == gg.__version__
    assert wheel.name == f"gpugrad-{gg.__version__}-py3-none-any.whl"
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert metadata["Requires-Python"] in (">=3.10,<3.14", "<3.14,>=3.10")  # setuptools may sort the bounds
    assert set(metadata.get_all("Classifier")) == set(PYPROJECT["project"]["classifiers"])
    urls = dict(u.split(", ", 1) for u in metadata.get_all("Project-URL"))
    assert urls == PYPROJECT["project"]["urls"]
    assert set(metadata.get_all("Provides-Extra")) >= {"cuda12", "cuda13", "docs", "kernelcheck", "test"}


def _resolve(wheel, python_version, extra, target):
    """pip's install report for ``gpugrad[extra]`` from ``wheel`` on ``python_version`` (nothing installed)."""
    requirement = f"gpugrad[{extra}] @ {wheel.as_uri()}" if extra else f"gpugrad @ {wheel.as_uri()}"
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--only-binary=:all:",
           "--python-version", python_version, "--target", str(target), "--report", "-", "--quiet",
           "--disable-pip-version-check", requirement]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def resolutions(wheel, index_reason):
    """{(python version, extra): (exit code, report, stderr)}, resolved four at a time."""
    if index_reason is not None:
        pytest.skip(index_reason)
    with tempfile.TemporaryDirectory(prefix="gpugrad-resolve-") as target, \
            concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        jobs = {(v, e): pool.submit(_resolve, wheel, v, e, Path(target) / f"{v}-{e}")
                for v in PYTHON_VERSIONS for e in EXTRAS}
        yield {key: job.result() for key, job in jobs.items()}


@pytest.mark.slow
@pytest.mark.parametrize("extra", EXTRAS, ids=lambda e: e or "cpu")
@pytest.mark.parametrize("python_version", PYTHON_VERSIONS)
def test_pip_resolves_the_install_on_each_python(resolutions, python_version, extra):
    code, report, stderr = resolutions[python_version, extra]
    assert code == 0, f"pip install gpugrad[{extra}] does not resolve on Python {python_version}:\n{stderr}"
    installs = {item["metadata"]["name"].lower(): item["metadata"]["version"]
                for item in json.loads(report)["install"]}
    assert installs["gpugrad"] == gg.__version__
    numpy_major = int(installs["numpy"].split(".")[0])
    assert 1 <= numpy_major < 3
    cupy = CUPY_OF_EXTRA[extra]
    if cupy is None:
        assert not [name for name in installs if name.startswith("cupy")], installs
    else:
        assert cupy in installs, installs
    print(f"Python {python_version} gpugrad[{extra}]: " + ", ".join(f"{n}=={v}" for n, v in sorted(installs.items())))

