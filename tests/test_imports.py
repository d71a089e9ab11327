"""The import graph: every module imports on its own (no cycles), and the engine needs no torch."""

import pkgutil
import subprocess
import sys
from pathlib import Path

import mint_local
import mint_migrate

REPO = Path(__file__).resolve().parents[1]


def modules(package) -> list[str]:
    found = [package.__name__]
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not info.name.endswith("__main__"):
            found.append(info.name)
    return sorted(found)


ALL = modules(mint_migrate) + modules(mint_local)

# Imports each module first, as the only one of this project loaded: a cycle shows as an
# ImportError ("partially initialized module") for whichever module is entered first.
ALONE = """
import importlib, sys, traceback
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m.split(".")[0] in ("mint_migrate", "mint_local")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception:
        failed.append(name + ": " + traceback.format_exc().strip().splitlines()[-1])
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def test_every_module_imports_on_its_own():
    assert len(ALL) > 40 and "mint_migrate.smoke.runner" in ALL and "mint_local.process" in ALL
    done = subprocess.run([sys.executable, "-c", ALONE, *ALL], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_engine_and_the_process_helper_import_without_torch():
    """map, lint, scaffold and migrate (and both front ends) work where torch is not installed."""
    light = [
        "mint_migrate.cli", "mint_migrate.server", "mint_migrate.analyze", "mint_migrate.lint", "mint_migrate.render",
        "mint_migrate.preflight", "mint_migrate.smoke", "mint_migrate.pyparse", "mint_local.process", "mint_local.launcher",
    ]  # fmt: skip
    blocked = "import sys; sys.modules['torch'] = None; sys.modules['transformers'] = None\n" + ALONE
    done = subprocess.run([sys.executable, "-c", blocked, *light], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
