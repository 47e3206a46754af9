"""Ships ``condambig_lm_eval.pth`` at the site-packages root (regular and editable installs)
and names the packages: three import names whose folders differ (``condambig_metrics`` is
``metrics/``, ``condambig`` is ``inspect_tasks/``), each with every subpackage found below it,
so a new benchmark's folders need no entry here.

Everything else is in pyproject.toml. The .pth file lets a stock lm-eval find the tasks; see
condambig_tasks/_lm_eval_hook.py.

The file comes from one extra ``build`` sub-command (setuptools' public extension point:
``build.sub_commands`` and the ``SubCommand`` protocol of ``setuptools.command.build``):

- regular wheel: the file goes to ``build_lib``, whose whole tree is the wheel's root;
- editable wheel (PEP 660): setuptools links packages only, never a file outside them, and
  documents no place for one. Its ``editable_wheel`` command (private, "internal only")
  points the ``install`` command's public ``install_lib`` option at the wheel being
  assembled before running the build sub-commands, so the file is written there. That
  folder is checked to hold exactly one ``.dist-info`` (a wheel root, not a site-packages
  folder); should setuptools stop doing this, the build fails, naming the file. No private
  setuptools name is used.
"""

import glob
import os

from setuptools import Command, find_packages, setup
from setuptools.command.build import build
from setuptools.errors import SetupError

# import name -> folder
PACKAGE_DIRS = {"condambig_tasks": "condambig_tasks", "condambig_metrics": "metrics",
                "condambig": "inspect_tasks"}
HERE = os.path.dirname(os.path.abspath(__file__))
PTH_NAME = "condambig_lm_eval.pth"
PTH_SOURCE = os.path.join("condambig_tasks", PTH_NAME)


class BuildPth(Command):
    """Copy the ``.pth`` file to the root of the wheel being built."""

    description = f"put {PTH_NAME} at the wheel root"
    user_options = []
    editable_mode = False  # set by setuptools for PEP 660 builds

    def initialize_options(self):
        self.build_lib = None

    def finalize_options(self):
        self.set_undefined_options("build_py", ("build_lib", "build_lib"))

    def run(self):
        target = self._editable_wheel_root() if self.editable_mode else self.build_lib
        self.mkpath(target)
        self.copy_file(PTH_SOURCE, os.path.join(target, PTH_NAME), preserve_mode=0)

    def _editable_wheel_root(self) -> str:
        root = self.get_finalized_command("install").install_lib
        if len(glob.glob(os.path.join(glob.escape(root), "*.dist-info"))) != 1:
            raise SetupError(f"cannot place {PTH_NAME} in the editable wheel: {root} is not "
                             "a wheel being assembled (a setuptools change?)")
        return root

    def get_source_files(self):
        return [PTH_SOURCE]

    def get_outputs(self):
        return [] if self.editable_mode else [os.path.join(self.build_lib, PTH_NAME)]

    def get_output_mapping(self):
        return {output: PTH_SOURCE for output in self.get_outputs()}


class BuildWithPth(build):
    sub_commands = [*build.sub_commands, ("build_pth", None)]


def packages() -> list[str]:
    """Every package under its import name: the roots and each folder below them with an
    ``__init__.py``."""
    return [name + suffix for name, folder in PACKAGE_DIRS.items()
            for suffix in ["", *(f".{sub}" for sub in find_packages(os.path.join(HERE, folder)))]]


setup(package_dir=PACKAGE_DIRS, packages=packages(),
      cmdclass={"build": BuildWithPth, "build_pth": BuildPth})
