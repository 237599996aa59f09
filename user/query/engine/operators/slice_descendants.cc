#include "user/query/engine/operators/slice_descendants.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "user/query/engine/operators/row_list_module.h"
#include "user/query/storage/trace_storage.h"

namespace sluice {
namespace {

// Per track, the slice ids sorted by (ts, id): built on the first call.
struct TrackIndex {
  std::vector<uint32_t> offsets;  // track -> first entry in `ids`; one more than tracks
  std::vector<uint32_t> ids;
};

struct VTab : sqlite3_vtab {
  const TraceStorage* storage = nullptr;
  std::unique_ptr<TrackIndex> index;
};

struct Cursor : sqlite3_vtab_cursor {
  std::vector<uint32_t> rows;  // slice ids, ascending
  size_t pos = 0;
};

const TrackIndex& IndexOf(VTab* vtab) {
  if (vtab->index) return *vtab->index;
  const SliceTable& s = vtab->storage->slice;
  auto index = std::make_unique<TrackIndex>();
  uint32_t tracks = 0;
  for (uint32_t track : s.track_id) tracks = std::max(tracks, track + 1);
  index->offsets.assign(tracks + 1, 0);
  for (uint32_t track : s.track_id) index->offsets[track + 1]++;
  for (uint32_t t = 0; t < tracks; ++t) index->offsets[t + 1] += index->offsets[t];
  index->ids.resize(s.size());
  std::vector<uint32_t> next(index->offsets.begin(), index->offsets.end() - 1);
  for (uint32_t id = 0; id < s.size(); ++id) index->ids[next[s.track_id[id]]++] = id;
  for (uint32_t t = 0; t < tracks; ++t) {
    auto begin = index->ids.begin() + index->offsets[t], end = index->ids.begin() + index->offsets[t + 1];
    std::stable_sort(begin, end, [&s](uint32_t a, uint32_t b) { return s.ts[a] < s.ts[b]; });
  }
  vtab->index = std::move(index);
  return *vtab->index;
}

bool HasAncestor(const SliceTable& s, uint32_t id, uint32_t ancestor) {
  for (uint32_t p = s.parent_id[id]; p != kNullU32; p = s.parent_id[p])
    if (p == ancestor) return true;
  return false;
}

void Descendants(VTab* vtab, uint32_t root, std::vector<uint32_t>* out) {
  const SliceTable& s = vtab->storage->slice;
  const TrackIndex& index = IndexOf(vtab);
  const int64_t start = s.ts[root];
  const int64_t end = s.dur[root] >= 0 ? start + s.dur[root] : std::numeric_limits<int64_t>::max();
  const uint32_t track = s.track_id[root];
  auto first = index.ids.begin() + index.offsets[track], last = index.ids.begin() + index.offsets[track + 1];
  first = std::lower_bound(first, last, start, [&s](uint32_t id, int64_t ts) { return s.ts[id] < ts; });
  for (auto it = first; it != last && s.ts[*it] <= end; ++it) {
    const uint32_t id = *it;
    if (s.depth[id] <= s.depth[root]) continue;
    const bool inside = s.ts[id] > start && s.ts[id] < end;
    if (inside || HasAncestor(s, id, root)) out->push_back(id);
  }
  std::sort(out->begin(), out->end());
}

int Connect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char**) {
  int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(id INTEGER, slice_id HIDDEN)");
  if (rc != SQLITE_OK) return rc;
  auto* vtab = new VTab();
  vtab->storage = static_cast<const TraceStorage*>(aux);
  *out = vtab;
  return SQLITE_OK;
}

int BestIndex(sqlite3_vtab*, sqlite3_index_info* info) {
  const int rc = BindArguments(info, {1});
  if (rc == SQLITE_OK && info->idxNum == 1 && info->nOrderBy == 1 && info->aOrderBy[0].iColumn == 0 &&
      !info->aOrderBy[0].desc)
    info->orderByConsumed = 1;  // Ids come ascending.
  return rc;
}

int Filter(sqlite3_vtab_cursor* base, int idx_num, const char*, int argc, sqlite3_value** argv) {
  auto* cursor = static_cast<Cursor*>(base);
  auto* vtab = static_cast<VTab*>(base->pVtab);
  cursor->rows.clear();
  cursor->pos = 0;
  if (idx_num != 1 || argc < 1 || sqlite3_value_type(argv[0]) != SQLITE_INTEGER) return SQLITE_OK;
  const sqlite3_int64 id = sqlite3_value_int64(argv[0]);
  if (id < 0 || static_cast<uint64_t>(id) >= vtab->storage->slice.size()) return SQLITE_OK;
  Descendants(vtab, static_cast<uint32_t>(id), &cursor->rows);
  return SQLITE_OK;
}

int Column(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) {
  auto* cursor = static_cast<Cursor*>(base);
  if (column == 0) sqlite3_result_int64(ctx, cursor->rows[cursor->pos]);
  else sqlite3_result_null(ctx);
  return SQLITE_OK;
}

// The rowid is the slice id (the row's own), not its place in the list.
sqlite3_module MakeModule() {
  sqlite3_module m = RowListModule<VTab, Cursor>(Connect, BestIndex, Filter, Column);
  m.xRowid = [](sqlite3_vtab_cursor* base, sqlite3_int64* rowid) {
    auto* cursor = static_cast<Cursor*>(base);
    *rowid = cursor->rows[cursor->pos];
    return SQLITE_OK;
  };
  return m;
}

const sqlite3_module kModule = MakeModule();

}  // namespace

Status RegisterSliceDescendants(sqlite3* db, const TraceStorage* storage) {
  if (sqlite3_create_module_v2(db, "__intrinsic_slice_descendants", &kModule, const_cast<TraceStorage*>(storage),
                               nullptr) != SQLITE_OK)
    return Status::Error(std::string("cannot register __intrinsic_slice_descendants: ") + sqlite3_errmsg(db));
  return Status::Ok();
}

}  // namespace sluice
