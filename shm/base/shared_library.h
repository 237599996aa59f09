// SharedLibrary: a library opened with dlopen() when a feature first needs
// it, instead of by the dynamic loader at every start of the program.
//
// Why: the loader maps, relocates and faults in every library a binary names
// before main() runs, and each costs a run time whether it is used or not.
// libcurl and its thirty-odd dependencies (TLS, Kerberos, LDAP, IDN) cost
// `sluice` about 9 ms of CPU at each start on the reference machine
// (docs/PERFORMANCE.md, "Start-up"), a tenth of what a recording of a
// million events costs, and only `sluice export --clickhouse` uses them.
// The same holds for libedit, which only the query shell on a terminal uses.
// systemd loads its optional libraries the same way.
//
// A library opened here stays loaded for the life of the process: libraries
// such as libcurl register atexit handlers and start threads, which make
// dlclose() unsafe, and nothing is gained by unloading at exit.
#ifndef SLUICE_SHM_BASE_SHARED_LIBRARY_H_
#define SLUICE_SHM_BASE_SHARED_LIBRARY_H_

#include <string>

#include "shm/base/status.h"

namespace sluice {

class SharedLibrary {
 public:
  // Opens `file` (a soname such as "libcurl.so.4", or a path) with every
  // symbol bound now, so a missing one fails here rather than at a call.
  // `feature` is what needs it ("the ClickHouse client"), `fix` how to
  // get it ("install it with `apt install libcurl4`"). The error is one line
  // naming the three and the loader's reason.
  static StatusOr<SharedLibrary> Open(const std::string& file, const std::string& feature, const std::string& fix);

  // The address of `name` in the library, as `T*` (a function or a variable
  // type). An error names the symbol: the file is not the version sluice was
  // built against.
  template <typename T>
  Status Resolve(const char* name, T** out) const {
    void* address = nullptr;
    Status status = ResolveAddress(name, &address);
    // POSIX guarantees that a void* from dlsym converts to a function pointer.
    *out = reinterpret_cast<T*>(address);
    return status;
  }

  // Resolves `name` into *out unless an earlier call of this kind failed;
  // `status` keeps the first error. For a table of many symbols, checked
  // once at the end.
  template <typename T>
  void ResolveInto(const char* name, T** out, Status* status) const {
    if (status->ok()) *status = Resolve(name, out);
  }

  const std::string& file() const { return file_; }

 private:
  SharedLibrary(void* handle, std::string file, std::string fix)
      : handle_(handle), file_(std::move(file)), fix_(std::move(fix)) {}
  Status ResolveAddress(const char* name, void** address) const;

  void* handle_;  // From dlopen; never closed (see the top of this file).
  std::string file_;
  std::string fix_;
};

}  // namespace sluice

#endif  // SLUICE_SHM_BASE_SHARED_LIBRARY_H_
