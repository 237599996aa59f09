#include "user/query/engine/operators/critical_path.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "user/query/engine/operators/row_list_module.h"

namespace sluice {
namespace {

// A node as the BLOB holds it: 7 int64s, kNone for NULL.
constexpr int64_t kNone = INT64_MIN;
constexpr size_t kNodeFields = 7;  // id, utid, ts, dur, idle_dur, waker_id, prev_id

struct Node {
  bool present = false;
  int64_t utid = 0, ts = 0, dur = 0;
  std::optional<int64_t> idle_dur, waker_id, prev_id;
};

int64_t OrNone(sqlite3_value* v) {
  return sqlite3_value_type(v) == SQLITE_NULL ? kNone : sqlite3_value_int64(v);
}

// Both aggregates append int64s to a std::string in their context.
struct Buffer {
  std::string* bytes;
};

void AppendStep(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  auto* buffer = static_cast<Buffer*>(sqlite3_aggregate_context(ctx, sizeof(Buffer)));
  if (!buffer) return sqlite3_result_error_nomem(ctx);
  if (!buffer->bytes) buffer->bytes = new std::string();
  for (int i = 0; i < argc; ++i) {
    const int64_t v = OrNone(argv[i]);
    buffer->bytes->append(reinterpret_cast<const char*>(&v), sizeof v);
  }
}

void AppendFinal(sqlite3_context* ctx) {
  auto* buffer = static_cast<Buffer*>(sqlite3_aggregate_context(ctx, 0));
  if (!buffer || !buffer->bytes) return sqlite3_result_zeroblob(ctx, 0);
  sqlite3_result_blob64(ctx, buffer->bytes->data(), buffer->bytes->size(), SQLITE_TRANSIENT);
  delete buffer->bytes;
  buffer->bytes = nullptr;
}

std::vector<int64_t> Int64s(sqlite3_value* v) {
  std::vector<int64_t> out;
  if (sqlite3_value_type(v) != SQLITE_BLOB) return out;
  const auto* p = static_cast<const char*>(sqlite3_value_blob(v));
  const size_t n = static_cast<size_t>(sqlite3_value_bytes(v)) / sizeof(int64_t);
  out.resize(n);
  if (n) std::memcpy(out.data(), p, n * sizeof(int64_t));
  return out;
}

struct Frame {
  int64_t root_id, depth, ts, dur, blocker_id, blocker_utid, parent_id;
};

struct StackEntry {
  int64_t node, window_start, window_end, depth, parent;
};

const Node* NodeAt(const std::vector<Node>& nodes, int64_t id) {
  if (id < 0 || static_cast<uint64_t>(id) >= nodes.size() || !nodes[static_cast<size_t>(id)].present) return nullptr;
  return &nodes[static_cast<size_t>(id)];
}

void Walk(const std::vector<Node>& nodes, int64_t root_id, std::vector<Frame>* out) {
  const Node* root = NodeAt(nodes, root_id);
  if (!root) return;
  std::vector<StackEntry> stack = {{root_id, root->ts - root->idle_dur.value_or(0), root->ts + root->dur, 0, root_id}};
  while (!stack.empty()) {
    const StackEntry e = stack.back();
    stack.pop_back();
    const Node* n = e.window_start < e.window_end ? NodeAt(nodes, e.node) : nullptr;
    if (!n) continue;
    const int64_t idle_start = n->idle_dur ? n->ts - *n->idle_dur : e.window_start;
    const int64_t start = std::max(e.window_start, idle_start), end = std::min(e.window_end, n->ts + n->dur);
    // Before this span's idle stretch: the thread's previous span, same depth.
    if (n->idle_dur && e.window_start < idle_start && n->prev_id)
      stack.push_back({*n->prev_id, e.window_start, std::min(e.window_end, idle_start), e.depth, e.parent});
    if (start >= end) continue;
    const int64_t idle_end = std::min(end, n->ts);
    if (start < idle_end) {
      if (n->waker_id) {
        stack.push_back({*n->waker_id, start, idle_end, e.depth + 1, e.parent});
      } else if (n->prev_id) {
        out->push_back({root_id, e.depth, start, idle_end - start, e.node, n->utid, e.parent});
      }
    }
    const int64_t run_start = std::max(start, n->ts);
    if (run_start < end) out->push_back({root_id, e.depth, run_start, end - run_start, e.node, n->utid, e.parent});
  }
}

struct VTab : sqlite3_vtab {};

struct Cursor : sqlite3_vtab_cursor {
  std::vector<Frame> rows;
  size_t pos = 0;
};

int Connect(sqlite3* db, void*, int, const char* const*, sqlite3_vtab** out, char**) {
  int rc = sqlite3_declare_vtab(db,
                                "CREATE TABLE x(root_id INTEGER, depth INTEGER, ts INTEGER, dur INTEGER, "
                                "blocker_id INTEGER, blocker_utid INTEGER, parent_id INTEGER, graph HIDDEN, "
                                "roots HIDDEN)");
  if (rc != SQLITE_OK) return rc;
  *out = new VTab();
  return SQLITE_OK;
}

int BestIndex(sqlite3_vtab*, sqlite3_index_info* info) { return BindArguments(info, {7, 8}); }

int Filter(sqlite3_vtab_cursor* base, int idx_num, const char*, int argc, sqlite3_value** argv) {
  auto* cursor = static_cast<Cursor*>(base);
  cursor->rows.clear();
  cursor->pos = 0;
  if (idx_num != 1 || argc < 2) return SQLITE_OK;
  const std::vector<int64_t> fields = Int64s(argv[0]);
  std::vector<Node> nodes;
  for (size_t at = 0; at + kNodeFields <= fields.size(); at += kNodeFields) {
    const int64_t id = fields[at];
    if (id < 0 || id == kNone || id > (int64_t{1} << 32)) continue;  // ids are thread_state rows
    if (static_cast<uint64_t>(id) >= nodes.size()) nodes.resize(static_cast<size_t>(id) + 1);
    Node& n = nodes[static_cast<size_t>(id)];
    n.present = true;
    n.utid = fields[at + 1];
    n.ts = fields[at + 2];
    n.dur = fields[at + 3];
    auto opt = [](int64_t v) { return v == kNone ? std::nullopt : std::optional<int64_t>(v); };
    n.idle_dur = opt(fields[at + 4]);
    n.waker_id = opt(fields[at + 5]);
    n.prev_id = opt(fields[at + 6]);
  }
  for (int64_t root : Int64s(argv[1]))
    if (root != kNone) Walk(nodes, root, &cursor->rows);
  return SQLITE_OK;
}

int Column(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) {
  auto* cursor = static_cast<Cursor*>(base);
  const Frame& f = cursor->rows[cursor->pos];
  const int64_t values[] = {f.root_id, f.depth, f.ts, f.dur, f.blocker_id, f.blocker_utid, f.parent_id};
  if (column >= 0 && column < 7) sqlite3_result_int64(ctx, values[column]);
  else sqlite3_result_null(ctx);
  return SQLITE_OK;
}

const sqlite3_module kModule = RowListModule<VTab, Cursor>(Connect, BestIndex, Filter, Column);

}  // namespace

Status RegisterCriticalPath(sqlite3* db) {
  if (sqlite3_create_function_v2(db, "__sluice_wakeup_graph", 7, SQLITE_UTF8, nullptr, nullptr, AppendStep,
                                 AppendFinal, nullptr) != SQLITE_OK ||
      sqlite3_create_function_v2(db, "__sluice_int_list", 1, SQLITE_UTF8, nullptr, nullptr, AppendStep, AppendFinal,
                                 nullptr) != SQLITE_OK)
    return Status::Error(std::string("cannot define the critical path aggregates: ") + sqlite3_errmsg(db));
  if (sqlite3_create_module_v2(db, "__sluice_critical_path_walk", &kModule, nullptr, nullptr) != SQLITE_OK)
    return Status::Error(std::string("cannot register __sluice_critical_path_walk: ") + sqlite3_errmsg(db));
  return Status::Ok();
}

}  // namespace sluice
