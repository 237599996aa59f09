#include "shm/base/shared_library.h"

#include <dlfcn.h>

namespace sluice {

StatusOr<SharedLibrary> SharedLibrary::Open(const std::string& file, const std::string& feature,
                                            const std::string& fix) {
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    return Status::Error(feature + " needs " + file + ", which cannot be loaded (" +
                         (reason != nullptr ? reason : "unknown reason") + "): " + fix);
  }
  return SharedLibrary(handle, file, fix);
}

Status SharedLibrary::ResolveAddress(const char* name, void** address) const {
  dlerror();  // Clears an earlier error: a symbol's value may be null.
  *address = dlsym(handle_, name);
  if (const char* reason = dlerror(); reason != nullptr) {
    return Status::Error(file_ + " has no " + name + " (" + reason + "): not the version sluice was built with; " +
                         fix_);
  }
  return Status::Ok();
}

}  // namespace sluice
