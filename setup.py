# SPDX-License-Identifier: Apache-2.0
"""The native half of the Python package, for setuptools (pyproject.toml has the rest): builds
libsluice.so and the `sluice` tool with CMake and puts them in the package's _lib/ folder, where
sluice._c and `python3 -m sluice` look first. The version is CMakeLists.txt's project() version,
the one source every part of sluice takes it from.

Environment: SLUICE_CMAKE_ARGS adds CMake arguments (`-DSLUICE_CUDA=OFF`, ...);
CMAKE_BUILD_PARALLEL_LEVEL sets the build's jobs (default: the CPUs here)."""

import os
import re
import shlex
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py
try:  # setuptools 70.1 and later have their own; before, the wheel package's
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

ROOT = os.path.dirname(os.path.abspath(__file__))


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(\s*sluice\s+VERSION\s+([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("CMakeLists.txt: no project(sluice VERSION x.y.z)")
    return m.group(1)


class build_native(build_py):
    """build_py, then the library and the tool, into the wheel's sluice/_lib (or, for an editable
    install, into python/sluice/_lib of this tree)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            dest = os.path.join(ROOT, "python", "sluice", "_lib")
        else:
            dest = os.path.join(self.build_lib, "sluice", "_lib")
        cmake_dir = os.path.join(ROOT, "build-py", "cmake")
        args = ["-DCMAKE_BUILD_TYPE=Release"] + shlex.split(os.environ.get("SLUICE_CMAKE_ARGS", ""))
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 2)
        subprocess.run(["cmake", "-S", ROOT, "-B", cmake_dir] + args, check=True)
        subprocess.run(["cmake", "--build", cmake_dir, "-j", jobs, "--target", "sluice_shared",
                        "sluice_cli"], check=True)
        os.makedirs(dest, exist_ok=True)
        for name in ("libsluice.so", "sluice"):
            # the real file, not the build's symlink chain
            shutil.copy2(os.path.realpath(os.path.join(cmake_dir, name)), os.path.join(dest, name))


class NativeDistribution(Distribution):
    """Holds native code (though not a Python extension): installed to platlib, wheel not pure."""

    def has_ext_modules(self):
        return True


class native_wheel(bdist_wheel):
    """A wheel for this platform (it holds a shared library and a program), for any Python 3: the
    package reaches the library through ctypes, not Python's C API."""

    def get_tag(self):
        return ("py3", "none") + tuple(super().get_tag()[2:])


setup(version=version(), distclass=NativeDistribution,
      cmdclass={"build_py": build_native, "bdist_wheel": native_wheel},
      options={"build": {"build_base": os.path.join("build-py", "setuptools")}})
