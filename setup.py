"""Ships ``condambig_lm_eval.pth`` at the site-packages root (regular and editable installs).

Everything else is in pyproject.toml. The .pth file lets a stock lm-eval find the tasks; see
condambig_tasks/_lm_eval_hook.py.
"""

import os

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

PTH_NAME = "condambig_lm_eval.pth"
PTH_SOURCE = os.path.join("condambig_tasks", PTH_NAME)


class BuildPyWithPth(build_py):
    def run(self):
        super().run()
        self.copy_file(PTH_SOURCE, os.path.join(self.build_lib, PTH_NAME), preserve_mode=0)

    def get_outputs(self, include_bytecode=1):
        return [*super().get_outputs(include_bytecode), os.path.join(self.build_lib, PTH_NAME)]

    def get_output_mapping(self):
        mapping = dict(super().get_output_mapping())
        mapping[os.path.join(self.build_lib, PTH_NAME)] = PTH_SOURCE
        return mapping


class EditableWheelWithPth(editable_wheel):
    """Editable installs skip build_py's extra outputs: put the .pth in the wheel root.

    ``_run_build_commands`` is setuptools' (>= 64) step that fills the unpacked wheel; every
    file left in that folder ends up in the wheel, hence at the site-packages root.
    """

    def _run_build_commands(self, dist_name, unpacked_wheel, build_lib, tmp_dir):
        result = super()._run_build_commands(dist_name, unpacked_wheel, build_lib, tmp_dir)
        self.copy_file(PTH_SOURCE, os.path.join(unpacked_wheel, PTH_NAME), preserve_mode=0)
        return result


setup(cmdclass={"build_py": BuildPyWithPth, "editable_wheel": EditableWheelWithPth})
