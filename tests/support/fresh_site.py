"""A fresh venv laid out like a regular install of this checkout: its site-packages hold
the three packages (symlinks to the checkout) and the checkout's ``condambig_lm_eval.pth``,
so ``site`` runs the .pth line of this checkout, not the one an earlier install left in the
test environment. A plain path line (``zz_environment.pth``) appends the test
environment's site-packages (lm-eval and the rest) without running its ``.pth`` files."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PTH_NAME = "condambig_lm_eval.pth"
PTH_SOURCE = REPO_ROOT / "condambig_tasks" / PTH_NAME
PACKAGE_DIRECTORIES = {"condambig_tasks": "condambig_tasks", "condambig_metrics": "metrics",
                       "condambig": "inspect_tasks"}


def venv_with_checkout_pth(root: Path, *, see_environment: bool = True) -> Path:
    """Create the venv under ``root``; return its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True,
                   timeout=300)
    python = root / "bin" / "python"
    site = Path(subprocess.run(  # not -S: without site, sys.prefix is the base install's
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=60).stdout.strip())
    if not site.is_relative_to(root):
        raise RuntimeError(f"{site} is not the new venv's site-packages")
    for name, directory in PACKAGE_DIRECTORIES.items():
        (site / name).symlink_to(REPO_ROOT / directory, target_is_directory=True)
    shutil.copyfile(PTH_SOURCE, site / PTH_NAME)
    if see_environment:
        (site / "zz_environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python
