#!/bin/bash
# Builds DeepGEMM on the H200 for gen bench's deepgemm arm (a peer measured,
# not an fp8gen dependency), the way the twenty-ninth session did:
#   bash hardware/sm_90a/deepgemm/build.sh deepinfer_gemm-2.8.2.tar.gz /tmp/dgpkg
# then run gen bench with PYTHONPATH=/tmp/dgpkg:. and
# CPATH=<this folder> (the stub header, for DeepGEMM's JIT as well).
# The sdist is PyPI's deepinfer-gemm 2.8.2 (DeepGEMM's source with CUTLASS
# headers); fetch it where a registry can be reached and carry it over.
# Two build-only shims, neither part of DeepGEMM's kernels:
#   elfutils/libdwfl.h  declarations of the elfutils calls it loads with
#                       dlopen for stack traces (the image has no libdw-dev)
#   no_regex.py         its NVCC version parse and spill checks without
#                       std::regex, which segfaulted in the extension
#                       beside torch 2.11 on the H200's image
# (DG_PRINT_CONFIGS=1 still segfaults it; its JIT cache keeps each
# kernel's source, template arguments included.)
set -eu
SDIST=$(realpath "$1"); TARGET=$2
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
tar -xzf "$SDIST" -C "$WORK"
SRC=$(ls -d "$WORK"/*/)
python3 "$HERE/no_regex.py" "$SRC"
for d in third-party/deep_jit/include deep_gemm/include; do
  mkdir -p "$SRC/$d/elfutils" && cp "$HERE/elfutils/libdwfl.h" "$SRC/$d/elfutils/"
done
# newer `wheel` releases moved bdist_wheel into setuptools
python3 -c "import wheel.bdist_wheel" 2>/dev/null || \
  sed -i 's/from wheel.bdist_wheel import/from setuptools.command.bdist_wheel import/' "$SRC/setup.py"
export CPATH="$HERE" DG_FORCE_BUILD=1 MAX_JOBS=${MAX_JOBS:-16}
(cd "$SRC" && python3 -m pip wheel --no-build-isolation --no-deps --no-index -w "$WORK/whl" .)
python3 -m pip install --no-deps --no-index --target "$TARGET" "$WORK"/whl/*.whl
echo "DeepGEMM installed under $TARGET"
