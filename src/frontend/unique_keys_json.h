#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace weft::frontend {

/// What to say about a key given twice in one object: `key`, and the 0-based byte offset in
/// the text of the second one's opening quote.
using DuplicateKeyMessage = std::function<std::string(const std::string& key, size_t offset)>;

/// nlohmann::json::parse, but a key given twice in one object is an InputError with the message
/// `duplicate` gives. nlohmann keeps the last one silently, so what a reader took from such a
/// file would depend on the parser. Syntax errors are nlohmann's exceptions, as from parse.
nlohmann::json parseWithUniqueKeys(const std::string& text, const DuplicateKeyMessage& duplicate);

} // namespace weft::frontend
