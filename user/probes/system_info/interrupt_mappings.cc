#include "user/probes/system_info/interrupt_mappings.h"

#include <charconv>

namespace sluice {
namespace {

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t at = 0;
  while (at < line.size()) {
    while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) ++at;
    size_t end = at;
    while (end < line.size() && line[end] != ' ' && line[end] != '\t') ++end;
    if (end > at) fields.push_back(line.substr(at, end - at));
    at = end;
  }
  return fields;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The field that says how the IRQ is triggered, which the name follows.
bool IsTrigger(std::string_view f) {
  return f == "Level" || f == "Edge" || EndsWith(f, "-edge") || EndsWith(f, "-fasteoi") || EndsWith(f, "-level");
}

}  // namespace

std::vector<InterruptMapping> ParseProcInterrupts(std::string_view text) {
  std::vector<InterruptMapping> mappings;
  size_t cpus = 0;
  bool header = true;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    const std::vector<std::string_view> fields = Fields(line);
    if (header) {
      header = false;
      for (std::string_view f : fields) cpus += f.substr(0, 3) == "CPU" ? 1 : 0;
      if (cpus == 0) return mappings;
      continue;
    }
    if (fields.size() <= cpus + 1) continue;
    std::string_view id = fields[0];
    if (id.size() < 2 || id.back() != ':') continue;
    id.remove_suffix(1);
    uint32_t irq = 0;
    auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), irq);
    if (ec != std::errc() || end != id.data() + id.size()) continue;
    // Fields: the id, `cpus` counts, the controller's, then the name.
    size_t name_start = fields.size() - 1;
    for (size_t i = fields.size() - 1; i > cpus; --i) {
      if (IsTrigger(fields[i])) {
        name_start = i + 1;
        break;
      }
    }
    if (name_start >= fields.size() || name_start < cpus + 2) continue;
    InterruptMapping mapping;
    mapping.irq_id = irq;
    for (size_t i = name_start; i < fields.size(); ++i) {
      if (!mapping.name.empty()) mapping.name += ' ';
      mapping.name.append(fields[i]);
    }
    mappings.push_back(std::move(mapping));
  }
  return mappings;
}

}  // namespace sluice
