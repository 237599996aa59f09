#include "user/cmd/libcurl.h"

#include "shm/base/shared_library.h"

namespace sluice {
namespace {

StatusOr<LibCurl> Load() {
  StatusOr<SharedLibrary> library =
      SharedLibrary::Open("libcurl.so.4", "the ClickHouse client", "install it with `apt install libcurl4`");
  if (!library.ok()) return library.status();
  const SharedLibrary& lib = library.value();
  LibCurl api;
  Status status;
  lib.ResolveInto("curl_global_init", &api.global_init, &status);
  lib.ResolveInto("curl_free", &api.free, &status);
  lib.ResolveInto("curl_url", &api.url, &status);
  lib.ResolveInto("curl_url_cleanup", &api.url_cleanup, &status);
  lib.ResolveInto("curl_url_set", &api.url_set, &status);
  lib.ResolveInto("curl_url_get", &api.url_get, &status);
  lib.ResolveInto("curl_url_strerror", &api.url_strerror, &status);
  lib.ResolveInto("curl_easy_init", &api.easy_init, &status);
  lib.ResolveInto("curl_easy_cleanup", &api.easy_cleanup, &status);
  lib.ResolveInto("curl_easy_reset", &api.easy_reset, &status);
  lib.ResolveInto("curl_easy_escape", &api.easy_escape, &status);
  lib.ResolveInto("curl_easy_setopt", &api.easy_setopt, &status);
  lib.ResolveInto("curl_easy_perform", &api.easy_perform, &status);
  lib.ResolveInto("curl_easy_getinfo", &api.easy_getinfo, &status);
  lib.ResolveInto("curl_easy_strerror", &api.easy_strerror, &status);
  lib.ResolveInto("curl_slist_append", &api.slist_append, &status);
  lib.ResolveInto("curl_slist_free_all", &api.slist_free_all, &status);
  if (!status.ok()) return status;
  if (CURLcode rc = api.global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK)
    return Status::Error(std::string("libcurl failed to start (curl_global_init: ") + api.easy_strerror(rc) + ")");
  return api;
}

}  // namespace

StatusOr<const LibCurl*> LoadLibCurl() {
  // Once per process (a function-local static is initialised once, even
  // with threads racing): curl_global_init may run only once.
  static const StatusOr<LibCurl> loaded = Load();
  if (!loaded.ok()) return loaded.status();
  return &loaded.value();
}

}  // namespace sluice
