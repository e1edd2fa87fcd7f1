# -*- Python -*-
import os
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "MPC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.mpc_obj_root, "test")

config.substitutions.append(("%mpc_src_root", config.mpc_src_root))
config.substitutions.append(("%mpc_obj_root", config.mpc_obj_root))
config.substitutions.append(("%PATH%", config.environment["PATH"]))

# MPC_EMULATION_ORDER: the emulated CUDA backend's order of threads and
# streams (docs/CUDA.md), to run the emulated e2e tests in the other order.
llvm_config.with_system_environment(
    ["HOME", "INCLUDE", "LIB", "TMP", "TEMP", "MPC_EMULATION_ORDER"])
llvm_config.use_default_substitutions()

tool_dirs = [config.mpc_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["mpc-opt", "mpc-compile", "mpc-import-onnx"], tool_dirs)
config.substitutions.append(("%python", sys.executable))
# PyTorch as an oracle (Debian's python3-torch, which scripts/test.sh
# installs): tests that need it say REQUIRES: torch.
import subprocess
if subprocess.run(["/usr/bin/python3", "-c", "import torch, numpy"],
                  capture_output=True).returncode == 0:
    config.available_features.add("torch")
    config.substitutions.append(("%torch_python", "/usr/bin/python3"))
    # torchvision's models (Debian's python3-torchvision): REQUIRES:
    # torchvision.
    if subprocess.run(["/usr/bin/python3", "-c", "import torchvision"],
                      capture_output=True).returncode == 0:
        config.available_features.add("torchvision")
# ONNX's backend node tests, from Debian's libonnx-testdata.
config.substitutions.append(
    ("%onnx_node_tests", "/usr/share/libonnx-testdata/data/node"))
# A build whose code runs under AddressSanitizer (scripts/sanitize.sh):
# its shadow memory cannot be mapped under an address-space limit.
if "address" in getattr(config, "mpc_sanitize", ""):
    config.available_features.add("asan")

# mpc-compile runs lld's ELF driver in its own process (the build found
# Debian's liblld-22-dev; tools/mpc-compile/CMakeLists.txt).
if getattr(config, "mpc_links_in_process", False):
    config.available_features.add("lld-in-process")

# Data-parallel training over MPI (Debian's openmpi-bin and
# libopenmpi-dev, which scripts/setup.sh installs): tests that launch ranks
# say REQUIRES: mpi and run them with %mpirun N (local ranks, one host
# thread each, allowed to outnumber the cores; as root where CI runs so).
import shutil
if config.mpc_have_mpi and shutil.which("mpirun"):
    config.available_features.add("mpi")
    config.substitutions.append(
        ("%mpirun", "mpirun --oversubscribe --bind-to none "
         "-x OMP_NUM_THREADS=1 -np"))
    for name in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"):
        config.environment[name] = "1"
    # Containers often forbid the cross-memory attach of Open MPI's shared
    # memory transport; copies through the shared segment always work.
    config.environment["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none"
# A tmpfs of a test's own (as root, where mounts are allowed): a disk that
# fills, for what the tools do then (Tools/ and Import/full-disk.test).
import tempfile
_probe = tempfile.mkdtemp()
try:
    if os.geteuid() == 0 and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", _probe],
            capture_output=True).returncode == 0:
        if subprocess.run(["umount", _probe],
                          capture_output=True).returncode == 0:
            config.available_features.add("tmpfs-mount")
    os.rmdir(_probe)
except OSError:
    pass
# The CUDA backend is built (a GPU may still be absent).
if config.mpc_have_cuda:
    config.available_features.add("cuda-backend")
    # ... and a GPU to run it on.
    import shutil
    import subprocess
    smi = shutil.which("nvidia-smi")
    if smi and subprocess.run([smi, "-L"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0:
        config.available_features.add("cuda-device")
# The host emulation of the CUDA backend is built (mpc-compile
# --emulate-cuda).
if config.mpc_have_cuda_emulation:
    config.available_features.add("cuda-emulation")
# ... with its race check (mpc-compile --racecheck), which names a race's
# source line through llvm-symbolizer.
if config.mpc_have_cuda_racecheck:
    config.available_features.add("cuda-racecheck")
    config.environment["LLVM_SYMBOLIZER_PATH"] = os.path.join(
        config.llvm_tools_dir, "llvm-symbolizer")
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
