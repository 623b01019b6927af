"""Replace deep_jit's three std::regex uses (std::regex segfaulted on the
H200's image when the extension ran beside torch) with plain string search.
Measurement build only: DeepGEMM's source is not fp8gen's."""
import sys
from pathlib import Path

p = Path(sys.argv[1]) / "third-party/deep_jit/include/deep_jit/backend/cuda/backend.hpp"
s = p.read_text()
old_ver = '''        std::smatch match;
        DJ_HOST_ASSERT(std::regex_search(version, match, std::regex(R"(release (\\d+)\\.(\\d+))")),
                       "failed to parse NVCC version from:\\n{}", version);
        const int major = std::stoi(match[1].str());
        const int minor = std::stoi(match[2].str());'''
new_ver = '''        const auto at = version.find("release ");
        int major = 0, minor = 0;
        DJ_HOST_ASSERT(at != std::string::npos and std::sscanf(version.c_str() + at, "release %d.%d", &major, &minor) == 2,
                       "failed to parse NVCC version from:\\n{}", version);'''
assert old_ver in s, "version parse not found"
s = s.replace(old_ver, new_ver)
old1 = 'std::regex_search(compiler_output, std::regex(R"(spilled\\s+to\\s+local\\s+memory)", std::regex::icase))'
old2 = 'std::regex_search(compiler_output, std::regex(R"(local\\s+memory\\s+used)", std::regex::icase))'
assert old1 in s and old2 in s, "spill checks not found"
s = s.replace(old1, '(compiler_output.find("spilled") != std::string::npos)')
s = s.replace(old2, '(compiler_output.find("local memory used") != std::string::npos)')
if "<cstdio>" not in s:
    s = s.replace("#include <regex>", "#include <regex>\n#include <cstdio>")
p.write_text(s)
print("patched", p)
