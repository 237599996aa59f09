// ClickHouseClient: statements sent to a ClickHouse server over its HTTP
// interface (https://clickhouse.com/docs/en/interfaces/http), through
// libcurl's easy API, loaded when the first client opens (user/cmd/libcurl.h).
// sluice export --clickhouse loads traces with it (docs/FLEET.md).
//
// The URL names the server and the database:
//
//   http://[USER[:PASSWORD]@]HOST[:PORT]/[?database=DB[&SETTING=VALUE...]]
//
// the form ClickHouse's own HTTP interface takes: unqualified table names
// are the database's. Every parameter (user, password, settings) goes with
// every request; only CreateDatabase() leaves `database` out, as ClickHouse
// refuses a request naming a database that does not exist. USER:PASSWORD@
// is sent as HTTP basic authentication. ClickHouse's HTTP port is 8123; no
// path but "/" is served.
//
// Each statement is one POST. Its answer is the body of a 200 reply; any
// other status carries ClickHouse's exception text ("Code: N, e.displayText()
// = DB::Exception: ..."), which the error message quotes. An INSERT's rows
// are streamed: a thread of the client's makes them in chunks (a few ahead
// at most) while libcurl sends the ones before with chunked transfer
// encoding, so a table of millions of rows is never one string in memory,
// making rows and sending them overlap, and ClickHouse cuts the stream into
// blocks as it reads.
//
// Nothing here retries: a statement that failed is reported, once.
#ifndef SLUICE_USER_CMD_CLICKHOUSE_CLIENT_H_
#define SLUICE_USER_CMD_CLICKHOUSE_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include "shm/base/status.h"

namespace sluice {

struct LibCurl;

class ClickHouseClient {
 public:
  // Parses `url` (nothing is sent yet). A bad URL fails with one line naming
  // what is wrong and the form to give; so does a libcurl that cannot be
  // loaded, naming the package.
  static StatusOr<std::unique_ptr<ClickHouseClient>> Open(const std::string& url);
  ~ClickHouseClient();
  ClickHouseClient(const ClickHouseClient&) = delete;
  ClickHouseClient& operator=(const ClickHouseClient&) = delete;

  // The database the URL names; "default" when it names none.
  const std::string& database() const { return database_; }
  // The server as the URL names it, without user or password, for messages.
  const std::string& server() const { return server_; }

  // CREATE DATABASE IF NOT EXISTS for the URL's database.
  Status CreateDatabase();

  // Runs one statement; its result as ClickHouse prints it (a SELECT's
  // rows in the FORMAT it names, TabSeparated when none).
  StatusOr<std::string> Query(const std::string& sql);

  // Runs `insert` ("INSERT INTO db.t (columns) FORMAT TabSeparated") with
  // the rows `next_rows` produces: each call appends some rows to `out`
  // (empty when called) and returns true while more may follow, false after
  // the last. Its error ends the insert and is returned as is. It is called
  // on another thread, one call at a time, while Insert waits.
  using RowSource = std::function<StatusOr<bool>(std::string* out)>;
  Status Insert(const std::string& insert, const RowSource& next_rows);

  // `value` as a ClickHouse string literal: in single quotes, with
  // backslashes and quotes escaped.
  static std::string Quote(const std::string& value);
  // `name` as a ClickHouse identifier: in backquotes.
  static std::string QuoteName(const std::string& name);

 private:
  ClickHouseClient() = default;
  // POSTs to the server with `query` (if any) as the query parameter and
  // the body from `body` or `rows`; fills *answer with the reply.
  Status Post(const std::string& what, const std::string& query, const std::string* body,
              const RowSource* rows, std::string* answer, bool in_database = true);

  const LibCurl* api_ = nullptr;  // Loaded by Open (user/cmd/libcurl.h).
  void* curl_ = nullptr;        // CURL*, kept for its connection between statements.
  std::string base_url_;        // scheme://[userinfo@]host[:port]/?params (database left out)
  std::string database_param_;  // database=DB
  std::string database_;
  std::string server_;
};

}  // namespace sluice

#endif  // SLUICE_USER_CMD_CLICKHOUSE_CLIENT_H_
