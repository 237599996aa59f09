#include "user/report/report.h"

namespace sluice {

int ReportSection::ColumnIndex(const std::string& column) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == column) return static_cast<int>(i);
  return -1;
}

const ReportSection* Report::Find(const std::string& name) const {
  for (const ReportSection& section : sections)
    if (section.name == name) return &section;
  return nullptr;
}

}  // namespace sluice
