#include "user/cmd/clickhouse_client.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <cstring>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "user/cmd/libcurl.h"

namespace sluice {
namespace {

constexpr char kUrlForm[] = "give http://HOST:8123/?database=DB (user and password as http://USER:PASSWORD@HOST...)";

// A database name as ClickHouse takes it unquoted; sluice quotes it anyway,
// but a name from a URL is kept to these so no quoting question arises.
bool IsPlainName(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// One URL part as libcurl's URL parser returns it; empty when absent.
std::string UrlPart(const LibCurl& curl, CURLU* url, CURLUPart part) {
  char* value = nullptr;
  if (curl.url_get(url, part, &value, 0) != CURLUE_OK || value == nullptr) return "";
  std::string text = value;
  curl.free(value);
  return text;
}

size_t AppendAnswer(char* data, size_t size, size_t nmemb, void* answer) {
  static_cast<std::string*>(answer)->append(data, size * nmemb);
  return size * nmemb;
}

// An INSERT's rows on their way: a thread makes chunks (RowSource) while
// libcurl sends the ones made before, so reading the trace's tables and
// sending overlap; at most kChunksAhead wait.
class RowStream {
 public:
  explicit RowStream(const ClickHouseClient::RowSource* next_rows) : next_rows_(next_rows) {
    if (next_rows_ != nullptr) maker_ = std::thread([this] { Make(); });
  }
  ~RowStream() { Stop(); }

  // Stops the maker (the transfer ended, or failed early) and waits for it.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
    if (maker_.joinable()) maker_.join();
  }
  // The RowSource's error, once stopped.
  const Status& error() const { return error_; }

  // libcurl's read callback: the next bytes of the body, 0 at its end.
  static size_t Read(char* dest, size_t size, size_t nitems, void* stream_arg) {
    auto* stream = static_cast<RowStream*>(stream_arg);
    if (stream->sent_ == stream->current_.size()) {
      std::unique_lock<std::mutex> lock(stream->mu_);
      stream->cv_.wait(lock, [stream] { return !stream->ready_.empty() || stream->made_all_; });
      if (stream->ready_.empty()) return stream->error_.ok() ? 0 : CURL_READFUNC_ABORT;
      stream->current_ = std::move(stream->ready_.front());
      stream->ready_.pop_front();
      stream->sent_ = 0;
      stream->cv_.notify_all();
    }
    const size_t n = std::min(size * nitems, stream->current_.size() - stream->sent_);
    memcpy(dest, stream->current_.data() + stream->sent_, n);
    stream->sent_ += n;
    return n;
  }

 private:
  static constexpr size_t kChunksAhead = 4;

  void Make() {
    for (;;) {
      std::string chunk;
      StatusOr<bool> more = (*next_rows_)(&chunk);
      std::unique_lock<std::mutex> lock(mu_);
      if (!more.ok()) error_ = more.status();
      else if (!chunk.empty()) ready_.push_back(std::move(chunk));
      made_all_ = !more.ok() || !*more;
      cv_.notify_all();
      if (made_all_) return;
      cv_.wait(lock, [this] { return ready_.size() < kChunksAhead || stopped_; });
      if (stopped_) return;
    }
  }

  const ClickHouseClient::RowSource* next_rows_;
  std::thread maker_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> ready_;  // Made, not yet sent.
  bool made_all_ = false;          // The RowSource said it was done, or failed.
  bool stopped_ = false;
  Status error_;
  // Only the sending thread's:
  std::string current_;
  size_t sent_ = 0;
};

// ClickHouse's exception text on one line: "Code: 60, e.displayText() =
// DB::Exception: Table x doesn't exist., e.what() = DB::Exception" becomes
// "Code: 60, DB::Exception: Table x doesn't exist.".
std::string ExceptionLine(std::string text) {
  for (std::string_view noise : {"e.displayText() = ", ", e.what() = DB::Exception"}) {
    for (size_t at; (at = text.find(noise)) != std::string::npos;) text.erase(at, noise.size());
  }
  std::string line;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t') {
      if (!line.empty() && line.back() != ' ') line += ' ';
    } else {
      line += c;
    }
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  if (line.size() > 400) line = line.substr(0, 400) + "...";
  return line;
}

// `text` between `quote`s, with backslashes and `quote`s escaped: a string
// literal in '...', an identifier in `...`.
std::string Quoted(const std::string& text, char quote) {
  std::string quoted(1, quote);
  for (char c : text) {
    if (c == '\\' || c == quote) quoted += '\\';
    quoted += c;
  }
  return quoted + quote;
}

// ClickHouse's error code in an exception text ("Code: 192, ..."); -1 if none.
int ExceptionCode(const std::string& text) {
  if (!text.starts_with("Code: ")) return -1;
  return atoi(text.c_str() + 6);
}

}  // namespace

StatusOr<std::unique_ptr<ClickHouseClient>> ClickHouseClient::Open(const std::string& url) {
  StatusOr<const LibCurl*> loaded = LoadLibCurl();
  if (!loaded.ok()) return loaded.status();
  const LibCurl& curl = *loaded.value();
  const std::string bad = "bad ClickHouse URL '" + url + "': ";
  std::unique_ptr<CURLU, decltype(curl.url_cleanup)> parsed(curl.url(), curl.url_cleanup);
  if (!parsed) return Status::Error("out of memory parsing the ClickHouse URL");
  if (CURLUcode rc = curl.url_set(parsed.get(), CURLUPART_URL, url.c_str(), 0); rc != CURLUE_OK)
    return Status::Error(bad + curl.url_strerror(rc) + "; " + kUrlForm);
  const std::string scheme = UrlPart(curl, parsed.get(), CURLUPART_SCHEME);
  if (scheme != "http" && scheme != "https")
    return Status::Error(bad + "ClickHouse's interface is http or https, not " + scheme + "; " + kUrlForm);
  const std::string path = UrlPart(curl, parsed.get(), CURLUPART_PATH);
  if (!path.empty() && path != "/")
    return Status::Error(bad + "the database goes in ?database=DB, not in the path (" + path + "); " +
                         kUrlForm);
  if (!UrlPart(curl, parsed.get(), CURLUPART_FRAGMENT).empty())
    return Status::Error(bad + "no #fragment in a ClickHouse URL; " + kUrlForm);
  // The parameters: database taken out, the others kept for every request.
  std::string database = "default", kept;
  const std::string query = UrlPart(curl, parsed.get(), CURLUPART_QUERY);
  for (size_t start = 0; start < query.size();) {
    size_t end = query.find('&', start);
    if (end == std::string::npos) end = query.size();
    const std::string param = query.substr(start, end - start);
    start = end + 1;
    if (param.starts_with("database=")) {
      database = param.substr(strlen("database="));
      if (!IsPlainName(database))
        return Status::Error(bad + "database '" + database +
                             "' is not a plain name (letters, digits, '_'); " + kUrlForm);
    } else if (param == "query" || param.starts_with("query=")) {
      return Status::Error(bad + "sluice sends the queries: leave query= out; " + kUrlForm);
    } else if (!param.empty()) {
      kept += (kept.empty() ? "" : "&") + param;
    }
  }
  if (curl.url_set(parsed.get(), CURLUPART_QUERY, kept.empty() ? nullptr : kept.c_str(), 0) != CURLUE_OK ||
      curl.url_set(parsed.get(), CURLUPART_PATH, "/", 0) != CURLUE_OK)
    return Status::Error(bad + "cannot rebuild it; " + kUrlForm);
  std::unique_ptr<ClickHouseClient> client(new ClickHouseClient());
  client->base_url_ = UrlPart(curl, parsed.get(), CURLUPART_URL);
  client->database_ = database;
  client->database_param_ = "database=" + database;
  const std::string port = UrlPart(curl, parsed.get(), CURLUPART_PORT);
  client->server_ = scheme + "://" + UrlPart(curl, parsed.get(), CURLUPART_HOST) + (port.empty() ? "" : ":" + port);
  client->api_ = &curl;
  client->curl_ = curl.easy_init();
  if (client->curl_ == nullptr) return Status::Error("cannot start libcurl (curl_easy_init failed)");
  return client;
}

ClickHouseClient::~ClickHouseClient() {
  if (curl_ != nullptr) api_->easy_cleanup(static_cast<CURL*>(curl_));
}

std::string ClickHouseClient::Quote(const std::string& value) { return Quoted(value, '\''); }

std::string ClickHouseClient::QuoteName(const std::string& name) { return Quoted(name, '`'); }

Status ClickHouseClient::CreateDatabase() {
  const std::string sql = "CREATE DATABASE IF NOT EXISTS " + QuoteName(database_);
  std::string answer;
  return Post(sql, "", &sql, nullptr, &answer, /*in_database=*/false);
}

StatusOr<std::string> ClickHouseClient::Query(const std::string& sql) {
  std::string answer;
  // The statement's first words name it in messages.
  std::string what = sql.substr(0, std::min<size_t>(sql.find(" ("), 80));
  SLUICE_RETURN_IF_ERROR(Post(what, "", &sql, nullptr, &answer));
  return answer;
}

Status ClickHouseClient::Insert(const std::string& insert, const RowSource& next_rows) {
  std::string answer;
  std::string what = insert.substr(0, insert.find(" ("));
  return Post(what, insert, nullptr, &next_rows, &answer);
}

Status ClickHouseClient::Post(const std::string& what, const std::string& query, const std::string* body,
                              const RowSource* rows, std::string* answer, bool in_database) {
  const LibCurl& api = *api_;
  CURL* curl = static_cast<CURL*>(curl_);
  api.easy_reset(curl);  // Keeps the connection; forgets the last request's options.
  std::string url = base_url_;
  auto add_param = [&url](const std::string& param) {
    url += (url.find('?') == std::string::npos ? "?" : "&") + param;
  };
  if (in_database) add_param(database_param_);
  if (!query.empty()) {
    char* escaped = api.easy_escape(curl, query.data(), static_cast<int>(query.size()));
    if (escaped == nullptr) return Status::Error("out of memory escaping a ClickHouse query");
    add_param(std::string("query=") + escaped);
    api.free(escaped);
  }
  char error[CURL_ERROR_SIZE] = "";
  api.easy_setopt(curl, CURLOPT_URL, url.c_str());
  api.easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  api.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  api.easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
  // A server that stops answering fails the statement after 5 minutes
  // without a byte either way (a long load still moves bytes all along).
  api.easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  api.easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 300L);
  api.easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendAnswer);
  api.easy_setopt(curl, CURLOPT_WRITEDATA, answer);
  api.easy_setopt(curl, CURLOPT_POST, 1L);
  // No "Expect: 100-continue" round trip before a streamed body.
  curl_slist* headers = api.slist_append(nullptr, "Expect:");
  RowStream stream(rows);
  if (rows != nullptr) {
    headers = api.slist_append(headers, "Transfer-Encoding: chunked");
    api.easy_setopt(curl, CURLOPT_READFUNCTION, RowStream::Read);
    api.easy_setopt(curl, CURLOPT_READDATA, &stream);
    api.easy_setopt(curl, CURLOPT_UPLOAD_BUFFERSIZE, 512L * 1024);
  } else {
    api.easy_setopt(curl, CURLOPT_POSTFIELDS, body->data());
    api.easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  }
  api.easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  const CURLcode rc = api.easy_perform(curl);
  stream.Stop();
  api.slist_free_all(headers);
  long http_status = 0;
  api.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &http_status);
  const std::string reason = error[0] ? error : api.easy_strerror(rc);
  if (!stream.error().ok()) return stream.error();
  // A reply that came while the rows were still being sent (a bad row
  // stops ClickHouse reading) is the answer even if sending then failed.
  if (rc != CURLE_OK && http_status == 0) {
    switch (rc) {
      case CURLE_COULDNT_RESOLVE_HOST:
        return Status::Error("cannot resolve the ClickHouse host of " + server_ + " (" + reason +
                             "): fix the host in the URL");
      case CURLE_COULDNT_CONNECT:
        return Status::Error("cannot connect to ClickHouse at " + server_ + " (" + reason +
                             "): start the server, or fix the host and port in the URL (ClickHouse's "
                             "HTTP port, 8123 unless configured)");
      case CURLE_OPERATION_TIMEDOUT:
        return Status::Error("ClickHouse at " + server_ + " did not answer " + what + " in time (" + reason +
                             "): check that the server runs and the port is its HTTP port");
      default:
        return Status::Error("ClickHouse at " + server_ + " failed " + what + " (" + reason +
                             "): see the server's log; is the port ClickHouse's HTTP port (8123)?");
    }
  }
  if (http_status != 200) {
    const std::string text = ExceptionLine(*answer);
    const int code = ExceptionCode(text);
    if (code < 0) {
      return Status::Error(server_ + " answered " + what + " with HTTP " + std::to_string(http_status) +
                           (text.empty() ? "" : " (" + text + ")") +
                           ", not as ClickHouse does: is the URL ClickHouse's HTTP port (8123)?");
    }
    std::string fix = "fix what the server names (its log has more)";
    // UNKNOWN_USER, WRONG_PASSWORD, REQUIRED_PASSWORD, IP_ADDRESS_NOT_ALLOWED,
    // AUTHENTICATION_FAILED.
    if (code == 192 || code == 193 || code == 194 || code == 195 || code == 516)
      fix = "give a user that may write, in the URL: http://USER:PASSWORD@HOST:8123/?database=DB";
    else if (code == 164)  // READONLY
      fix = "the URL's user may only read: give one that may create tables and insert";
    return Status::Error("ClickHouse at " + server_ + " refused " + what + ": " + text + "; " + fix);
  }
  return Status::Ok();
}

}  // namespace sluice
