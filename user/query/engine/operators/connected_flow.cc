#include "user/query/engine/operators/connected_flow.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "user/query/engine/operators/row_list_module.h"
#include "user/query/storage/trace_storage.h"

namespace sluice {
namespace {

enum class Mode { kDirectlyConnected, kFollowing, kPreceding };

// Flows by the slice they leave and the slice they enter, and each slice's
// children: built on a vtab's first call (the trace does not change).
struct Graph {
  std::vector<std::vector<uint32_t>> outgoing, incoming, children;
};

struct VTab : sqlite3_vtab {
  const TraceStorage* storage = nullptr;
  Mode mode = Mode::kFollowing;
  std::unique_ptr<Graph> graph;
};

struct Cursor : sqlite3_vtab_cursor {
  std::vector<uint32_t> rows;  // rows of `flow`, in the search's order
  size_t pos = 0;
};

const Graph& GraphOf(VTab* vtab) {
  if (vtab->graph) return *vtab->graph;
  const TraceStorage& s = *vtab->storage;
  auto graph = std::make_unique<Graph>();
  graph->outgoing.resize(s.slice.size());
  graph->incoming.resize(s.slice.size());
  graph->children.resize(s.slice.size());
  for (uint32_t row = 0; row < s.flow.size(); ++row) {
    if (s.flow.slice_out[row] < s.slice.size()) graph->outgoing[s.flow.slice_out[row]].push_back(row);
    if (s.flow.slice_in[row] < s.slice.size()) graph->incoming[s.flow.slice_in[row]].push_back(row);
  }
  for (uint32_t id = 0; id < s.slice.size(); ++id)
    if (s.slice.parent_id[id] != kNullU32) graph->children[s.slice.parent_id[id]].push_back(id);
  vtab->graph = std::move(graph);
  return *vtab->graph;
}

enum class Via { kStart, kIncomingFlow, kOutgoingFlow, kRelative };

void Search(VTab* vtab, uint32_t start, std::vector<uint32_t>* flows) {
  const TraceStorage& s = *vtab->storage;
  const Graph& g = GraphOf(vtab);
  const bool go_out = vtab->mode != Mode::kPreceding, go_in = vtab->mode != Mode::kFollowing;
  std::unordered_set<uint32_t> known = {start};
  std::deque<std::pair<uint32_t, Via>> queue = {{start, Via::kStart}};
  auto enqueue = [&](uint32_t slice, Via via) {
    if (known.insert(slice).second) queue.emplace_back(slice, via);
  };
  std::vector<uint32_t> relatives;
  while (!queue.empty()) {
    auto [slice, via] = queue.front();
    queue.pop_front();
    if (via != Via::kRelative) {
      relatives.clear();
      if (vtab->mode == Mode::kPreceding) {
        for (uint32_t p = s.slice.parent_id[slice]; p != kNullU32; p = s.slice.parent_id[p]) relatives.push_back(p);
        std::reverse(relatives.begin(), relatives.end());  // the root first
      } else if (vtab->mode == Mode::kFollowing) {
        std::vector<uint32_t> stack = {slice};
        while (!stack.empty()) {
          uint32_t at = stack.back();
          stack.pop_back();
          for (uint32_t child : g.children[at]) relatives.push_back(child), stack.push_back(child);
        }
        std::sort(relatives.begin(), relatives.end());  // slice order
      }
      for (uint32_t r : relatives) enqueue(r, Via::kRelative);
    }
    if (go_in && via != Via::kOutgoingFlow) {
      for (uint32_t row : g.incoming[slice]) {
        flows->push_back(row);
        enqueue(s.flow.slice_out[row], Via::kIncomingFlow);
      }
    }
    if (go_out && via != Via::kIncomingFlow) {
      for (uint32_t row : g.outgoing[slice]) {
        flows->push_back(row);
        enqueue(s.flow.slice_in[row], Via::kOutgoingFlow);
      }
    }
  }
}

int Connect(sqlite3* db, void* aux, int, const char* const* argv, sqlite3_vtab** out, char**) {
  int rc = sqlite3_declare_vtab(
      db, "CREATE TABLE x(id INTEGER, slice_out INTEGER, slice_in INTEGER, trace_id INTEGER, arg_set_id INTEGER, "
          "start_id HIDDEN)");
  if (rc != SQLITE_OK) return rc;
  auto* vtab = new VTab();
  vtab->storage = static_cast<const TraceStorage*>(aux);
  const std::string name = argv[0];
  vtab->mode = name == "directly_connected_flow" ? Mode::kDirectlyConnected
               : name == "preceding_flow"        ? Mode::kPreceding
                                                 : Mode::kFollowing;
  *out = vtab;
  return SQLITE_OK;
}

int BestIndex(sqlite3_vtab*, sqlite3_index_info* info) { return BindArguments(info, {5}); }

int Filter(sqlite3_vtab_cursor* base, int idx_num, const char*, int argc, sqlite3_value** argv) {
  auto* cursor = static_cast<Cursor*>(base);
  auto* vtab = static_cast<VTab*>(base->pVtab);
  cursor->rows.clear();
  cursor->pos = 0;
  if (idx_num != 1 || argc < 1 || sqlite3_value_type(argv[0]) == SQLITE_NULL) return SQLITE_OK;
  auto fail = [&](const std::string& message) {
    sqlite3_free(vtab->zErrMsg);
    vtab->zErrMsg = sqlite3_mprintf("%s", message.c_str());
    return SQLITE_ERROR;
  };
  if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER) return fail("start id should be an integer.");
  const sqlite3_int64 id = sqlite3_value_int64(argv[0]);
  if (id < 0 || static_cast<uint64_t>(id) >= vtab->storage->slice.size())
    return fail("invalid slice id " + std::to_string(id));
  Search(vtab, static_cast<uint32_t>(id), &cursor->rows);
  return SQLITE_OK;
}

int Column(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) {
  auto* cursor = static_cast<Cursor*>(base);
  const FlowTable& f = static_cast<VTab*>(base->pVtab)->storage->flow;
  const uint32_t row = cursor->rows[cursor->pos];
  switch (column) {
    case 0: sqlite3_result_int64(ctx, static_cast<sqlite3_int64>(cursor->pos)); break;
    case 1: sqlite3_result_int64(ctx, f.slice_out[row]); break;
    case 2: sqlite3_result_int64(ctx, f.slice_in[row]); break;
    case 3:
      if (f.trace_id[row] == kNullInt) sqlite3_result_null(ctx);
      else sqlite3_result_int64(ctx, f.trace_id[row]);
      break;
    case 4:
      if (f.arg_set_id[row] == kNoArgSet) sqlite3_result_null(ctx);
      else sqlite3_result_int64(ctx, f.arg_set_id[row]);
      break;
    default: sqlite3_result_null(ctx); break;
  }
  return SQLITE_OK;
}

const sqlite3_module kModule = RowListModule<VTab, Cursor>(Connect, BestIndex, Filter, Column);

}  // namespace

Status RegisterConnectedFlow(sqlite3* db, const TraceStorage* storage) {
  for (const char* name : {"directly_connected_flow", "following_flow", "preceding_flow"}) {
    if (sqlite3_create_module_v2(db, name, &kModule, const_cast<TraceStorage*>(storage), nullptr) != SQLITE_OK)
      return Status::Error(std::string("cannot register ") + name + ": " + sqlite3_errmsg(db));
  }
  return Status::Ok();
}

}  // namespace sluice
