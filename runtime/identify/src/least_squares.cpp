// SPDX-License-Identifier: Apache-2.0
// Opens the solver module (least_squares.hpp) the first time a fit runs.
#include "least_squares.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>
#include <stdexcept>

namespace tether::identify::lsq {

namespace {

struct Module {
  SolveFunction* solve = nullptr;
  std::string error;  // why it could not be opened (then solve is null)
};

// where the module is looked for: TETHER_FIT_MODULE if set; else beside the program, where the
// build puts it (the build's lib/, for the programs at its top and in its folders), then by
// the loader's own search (LD_LIBRARY_PATH). Not by the program's run path: under
// AddressSanitizer dlopen is called from the sanitizer's library, whose run path is its own.
std::vector<std::string> candidates() {
  const char* given = std::getenv("TETHER_FIT_MODULE");
  if (given && *given) return {given};
  std::vector<std::string> out;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (const char* dir : {"lib", "../lib"}) {
      const std::filesystem::path p = exe.parent_path() / dir / module_name;
      if (std::filesystem::exists(p, ec)) out.push_back(p.lexically_normal().string());
    }
  out.push_back(module_name);
  return out;
}

Module open_module() {
  Module m;
  const std::vector<std::string> paths = candidates();
  void* handle = nullptr;
  std::string path;
  for (const std::string& p : paths) {
    path = p;
    if ((handle = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
  }
  if (!handle) {
    const char* why = dlerror();
    m.error = "cannot open the fit's solver module " + path + " (Ceres Solver): " + (why ? why : "unknown") +
              " — it is built beside the tether program, in the build folder's lib/; "
              "set TETHER_FIT_MODULE to its path if it was moved";
    return m;
  }
  auto* abi = reinterpret_cast<AbiFunction*>(dlsym(handle, "tether_fit_abi"));
  auto* solve = reinterpret_cast<SolveFunction*>(dlsym(handle, "tether_fit_solve"));
  if (!abi || !solve || abi() != abi_version) {
    m.error = "the fit's solver module " + path + " is from another build of tether (rebuild it with the program)";
    return m;
  }
  m.solve = solve;  // the handle stays open for the life of the process
  return m;
}

const Module& module() {
  static const Module m = open_module();
  return m;
}

}  // namespace

std::string module_problem() { return module().solve ? std::string() : module().error; }

void solve(const Problem& problem, Result& result) {
  const Module& m = module();
  if (!m.solve) throw std::runtime_error(m.error);
  std::string error;
  if (!m.solve(problem, result, error)) throw std::runtime_error("the fit's solver failed: " + error);
}

}  // namespace tether::identify::lsq
