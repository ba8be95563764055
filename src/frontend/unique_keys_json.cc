#include "frontend/unique_keys_json.h"

#include <cctype>
#include <set>
#include <vector>

#include "weft/error.h"

namespace weft::frontend {
namespace {

/// The 0-based byte offset of the n-th (0-based) object key in JSON `text`: a string followed
/// by ':'. npos when there are fewer.
size_t keyOffset(const std::string& text, size_t n) {
  size_t count = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '"') continue;
    size_t start = i;
    for (++i; i < text.size() && text[i] != '"'; ++i)
      if (text[i] == '\\') ++i;
    size_t j = i + 1;
    while (j < text.size() && std::isspace(static_cast<unsigned char>(text[j])))
      ++j;
    if (j < text.size() && text[j] == ':' && count++ == n) return start;
  }
  return std::string::npos;
}

} // namespace

nlohmann::json parseWithUniqueKeys(const std::string& text, const DuplicateKeyMessage& duplicate) {
  using json = nlohmann::json;
  std::vector<std::set<std::string>> open; // the keys of each object being parsed
  size_t keys = 0;                         // keys seen so far, in text order
  return json::parse(text, [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!open.empty()) open.pop_back();
    } else if (event == json::parse_event_t::key && !open.empty()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!open.back().insert(key).second) throw InputError(duplicate(key, keyOffset(text, keys)));
      ++keys;
    }
    return true;
  });
}

} // namespace weft::frontend
