"""The README and the user guide run as written where they can here: every Python block
compiles, and the README's first examples (an archive to one reference file, then opened from
Python) and the Icechunk page's (the archive to a repository, then opened with
icechunk-python) run on the bundled archive with the vzarr binary and the package, their
values equal to what netCDF4-python reads. (Every `vzarr` command line of the guide is parsed by the CLI's
own parser in `cargo test`: src/doc_commands.rs.)"""

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from conftest import FIXTURES, ROOT, vzarr_bin

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.S | re.M)


def blocks(path: Path, lang: str) -> list[str]:
    """The bodies of the fenced blocks of `lang` (indented ones in lists too, dedented)."""
    return [textwrap.dedent(body) for _, info, body in BLOCK.findall(path.read_text()) if info == lang]


def test_every_python_block_compiles():
    n = 0
    for doc in DOCS:
        for i, code in enumerate(blocks(doc, "python")):
            compile(code, f"{doc.name} python block {i}", "exec")
            n += 1
    assert n >= 8, n


@pytest.fixture
def readme_dir(tmp_path):
    """A working directory like the checkout's root: the sample archive in fixtures/, vzarr on
    PATH."""
    shutil.copytree(FIXTURES / "archive", tmp_path / "fixtures" / "archive")
    env = dict(os.environ, PATH=f"{Path(vzarr_bin()).resolve().parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("VZARR_ALLOW_PREFIXES", None)
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    return tmp_path, env


def test_the_readme_examples_run_as_written(readme_dir, monkeypatch):
    cwd, env = readme_dir
    readme = ROOT / "README.md"
    sh = next(b for b in blocks(readme, "sh") if "vzarr build fixtures/archive" in b)
    for line in sh.splitlines():
        p = subprocess.run(line, shell=True, cwd=cwd, env=env, capture_output=True, text=True)
        assert p.returncode == 0, f"{line}\n{p.stdout}\n{p.stderr}"
        if line.startswith("vzarr verify"):
            assert "all values match" in p.stdout, p.stdout
    import vzarr
    assert vzarr
    code = next(b for b in blocks(readme, "python") if "vzarr.open_dataset" in b)
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("VZARR_ALLOW_PREFIXES", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(cwd / "config"))
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    months = sorted(cwd.glob("fixtures/archive/tas_2023*.nc"))
    want = xr.concat([xr.open_dataset(f, engine="netcdf4")["tas"] for f in months], dim="time")
    np.testing.assert_array_equal(scope["ds"]["tas"].values, want.values)
    assert set(scope["refs"]["refs"]) >= {"zarr.json", "tas/zarr.json"}


def test_the_icechunk_recipe_runs_as_written(readme_dir):
    """docs/icechunk.md: the sample archive built into a repository (the page's first command),
    then opened with icechunk-python by the page's recipe as written (in a process of its own:
    the recipe sets zarr-python's configuration for its whole process)."""
    cwd, env = readme_dir
    doc = ROOT / "docs" / "icechunk.md"
    line = next(l for b in blocks(doc, "sh") for l in b.splitlines() if "-o tas.icechunk" in l)
    p = subprocess.run(line, shell=True, cwd=cwd, env=env, capture_output=True, text=True)
    assert p.returncode == 0, f"{line}\n{p.stdout}\n{p.stderr}"
    code = next(b for b in blocks(doc, "python") if "icechunk.Repository.open" in b)
    (cwd / "recipe.py").write_text(code)
    run = "exec(open('recipe.py').read())\nimport numpy\nnumpy.save('tas.npy', ds['tas'].values)\n"
    p = subprocess.run([sys.executable, "-c", run], cwd=cwd, env=env, capture_output=True, text=True)
    assert p.returncode == 0, f"{code}\n{p.stdout}\n{p.stderr}"
    months = sorted(cwd.glob("fixtures/archive/tas_2023*.nc"))
    want = xr.concat([xr.open_dataset(f, engine="netcdf4")["tas"] for f in months], dim="time")
    np.testing.assert_array_equal(np.load(cwd / "tas.npy"), want.values)
