"""The package metadata: a built wheel declares every third-party distribution the code imports.

`pip install .` in a fresh venv must give a working CLI (issue: it died on ``ModuleNotFoundError: lark`` when the
metadata declared only setuptools). The wheel is built from a copy of the source tree (no ``build/`` left in the
checkout); which distribution provides an imported module is asked of the installed environment
(`importlib.metadata.packages_distributions`), independently of setup.py.
"""

from __future__ import annotations

import ast
import email.parser
import importlib.metadata
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "perception_safety"
NOT_ON_PYPI = {"vision_msgs": "built from interfaces/vision_msgs into the venv (tools/build_vision_msgs.sh)"}
CORE_IMPORTS = {"numpy", "scipy", "pydantic", "yaml", "rich", "matplotlib", "lark", "rosbags", "cv2", "z3"}
"""Imported when the CLI starts or by the offline analyses: must be plain (not extra) requirements."""


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _third_party_imports() -> set[str]:
    """Top-level modules imported anywhere in the package that are neither stdlib nor the package itself."""
    found: set[str] = set()
    for path in (ROOT / PACKAGE).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m not in (PACKAGE, "__future__")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in ("setup.py", "setup.cfg", "pyproject.toml", "package.xml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for name in (PACKAGE, "resource", "launch", "config"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    dist = tmp_path_factory.mktemp("dist")
    cmd = [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-q", "-w", str(dist)]
    subprocess.run(cmd, check=True, timeout=240, capture_output=True)
    (whl,) = dist.glob(f"{PACKAGE}-*.whl")
    return whl


def _metadata(whl: Path) -> tuple[dict[str, list[str]], str]:
    with zipfile.ZipFile(whl) as zf:
        meta_name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        msg = email.parser.Parser().parsestr(zf.read(meta_name).decode())
        entry = zf.read(meta_name.replace("METADATA", "entry_points.txt")).decode()
    reqs: dict[str, list[str]] = {}
    for line in msg.get_all("Requires-Dist") or []:
        spec, _, marker = line.partition(";")
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)", marker)
        reqs.setdefault(extra.group(1) if extra else "", []).append(spec.strip())
    return reqs, entry


def test_wheel_declares_every_imported_distribution(wheel: Path) -> None:
    reqs, _ = _metadata(wheel)
    declared = {extra: {_norm(re.split(r"[<>=!~ \[]", r)[0]) for r in rs} for extra, rs in reqs.items()}
    everything = set().union(*declared.values())
    providers = importlib.metadata.packages_distributions()
    missing = []
    for module in sorted(_third_party_imports()):
        if module in NOT_ON_PYPI:
            continue
        dists = {_norm(d) for d in providers.get(module, [])}
        assert dists, f"{module} is imported by the package but not installed here"
        wanted = declared[""] if module in CORE_IMPORTS else everything
        if not dists & wanted:
            missing.append(f"{module} (provided by {', '.join(sorted(dists))})")
    assert not missing, "imported but not declared in setup.py: " + "; ".join(missing)
    assert "setuptools" not in declared[""], "setuptools is a build requirement, not a runtime one"


def test_requirements_are_ranges_that_admit_the_pins(wheel: Path) -> None:
    """Every declared range is a range (not a pin) and admits the version pinned in constraints.txt."""
    from packaging.requirements import Requirement

    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            pins[_norm(name)] = version.strip()
    reqs, _ = _metadata(wheel)
    for extra, specs in reqs.items():
        for text in specs:
            req = Requirement(text)
            assert not any(s.operator in ("==", "===") for s in req.specifier), f"{text}: a pin, not a range"
            assert req.specifier, f"{text}: no version range"
            pinned = pins.get(_norm(req.name))
            if pinned is not None:
                assert req.specifier.contains(pinned), f"{text} (extra {extra!r}) excludes the tested pin {pinned}"
    assert set(reqs) >= {"", "ros", "ray", "test"}


def test_wheel_carries_data_files_and_console_scripts(wheel: Path) -> None:
    _, entry = _metadata(wheel)
    for script in ("perception-safety", "safety_monitor", "bbsl_monitor", "returns_logger", "detector"):
        assert re.search(rf"^{script} = ", entry, re.M), script
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    assert f"{PACKAGE}/bbsl/grammar.lark" in names
    assert any(n.startswith(f"{PACKAGE}/io/msg/vision_msgs/") and n.endswith(".msg") for n in names)
    assert any(n.endswith(f"share/{PACKAGE}/package.xml") for n in names)
    assert any(n.endswith(f"share/ament_index/resource_index/packages/{PACKAGE}") for n in names)


def test_wheel_installed_in_a_fresh_venv_runs_the_cli(wheel: Path, tmp_path: Path) -> None:
    """The wheel alone (not the checkout) in a new venv: CLI, grammar and bundled .msg files found from there.

    The venv reaches the already-installed third-party packages through a ``.pth`` line (no network in tests);
    that the metadata names them is checked above, and the README records a full `pip install .` with downloads.
    """
    import os
    import site
    import venv

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site_dir = Path(
        subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], check=True,
                       capture_output=True, text=True).stdout.strip()
    )  # fmt: skip
    (site_dir / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n", encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True, timeout=240, capture_output=True,
    )  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    cli = env_dir / "bin" / "perception-safety"
    where = subprocess.run([py, "-c", "import perception_safety; print(perception_safety.__file__)"], cwd=tmp_path,
                           env=env, check=True, capture_output=True, text=True).stdout  # fmt: skip
    assert where.startswith(str(site_dir)), where
    spec = sorted((ROOT / "config" / "specs").glob("*.bbsl"))[0]  # parsing needs the wheel's grammar.lark
    run = subprocess.run([cli, "bbsl", "check", str(spec)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    code = (
        "from perception_safety.io.typestore import ros2_typestore; "
        "print('vision_msgs/msg/Detection2DArray' in ros2_typestore().fielddefs)"
    )
    out = subprocess.run([py, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "True", out.stderr
