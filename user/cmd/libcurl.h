// LibCurl: the part of libcurl's API the ClickHouse client uses, loaded on
// first use (shm/base/shared_library.h says why: libcurl and its
// dependencies cost every `sluice` start about 9 ms of CPU when linked).
// The members have the types curl/curl.h declares, so a call through one is
// checked as a direct call would be.
#ifndef SLUICE_USER_CMD_LIBCURL_H_
#define SLUICE_USER_CMD_LIBCURL_H_

#include <curl/curl.h>

#include "shm/base/status.h"

namespace sluice {

struct LibCurl {
  decltype(curl_global_init)* global_init = nullptr;
  decltype(curl_free)* free = nullptr;
  decltype(curl_url)* url = nullptr;
  decltype(curl_url_cleanup)* url_cleanup = nullptr;
  decltype(curl_url_set)* url_set = nullptr;
  decltype(curl_url_get)* url_get = nullptr;
  decltype(curl_url_strerror)* url_strerror = nullptr;
  decltype(curl_easy_init)* easy_init = nullptr;
  decltype(curl_easy_cleanup)* easy_cleanup = nullptr;
  decltype(curl_easy_reset)* easy_reset = nullptr;
  decltype(curl_easy_escape)* easy_escape = nullptr;
  decltype(curl_easy_setopt)* easy_setopt = nullptr;
  decltype(curl_easy_perform)* easy_perform = nullptr;
  decltype(curl_easy_getinfo)* easy_getinfo = nullptr;
  decltype(curl_easy_strerror)* easy_strerror = nullptr;
  decltype(curl_slist_append)* slist_append = nullptr;
  decltype(curl_slist_free_all)* slist_free_all = nullptr;
};

// libcurl (libcurl.so.4, Debian's libcurl4), loaded and initialised
// (curl_global_init) by the first call, once per process; later calls
// return the same table, or the same error. Thread-safe.
StatusOr<const LibCurl*> LoadLibCurl();

}  // namespace sluice

#endif  // SLUICE_USER_CMD_LIBCURL_H_
