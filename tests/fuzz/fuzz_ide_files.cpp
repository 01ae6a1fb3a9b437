// Fuzzes the readers of the IDE files `ferry ide` merges into (outside bytes: whatever a user or
// an IDE left in .idea/*.xml, .run/*.run.xml, .vscode/*.json). Reading must never crash; a merge
// that succeeds must give a file that reads again, and merging into it again changes nothing.
//
// Input: one selector byte (even: XML, odd: JSON with comments), then the file's bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "helper/debug/jsonc_merge.hpp"
#include "helper/ide/xml_text.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void xml(std::string_view text) {
  if (auto root = ferry::ide::parse_xml(text)) (void)ferry::ide::canonical(*root);
  ferry::ide::XmlMergeRequest r;
  r.path = {{"project", {}}, {"component", {{"name", "C"}}}};
  r.key_of = [](const ferry::ide::XmlElement& e) -> std::optional<std::string> {
    const std::string* id = e.attribute("id");
    return id ? std::optional<std::string>(*id) : std::nullopt;
  };
  r.children = {{"a", "<item id=\"a\">\n  <v x=\"&amp;1\" />\n</item>"}, {"b", "<item id=\"b\" />"}};
  auto first = ferry::ide::merge_xml_children(text, r);
  if (!first) return;
  check(ferry::ide::parse_xml(first->text).has_value());
  auto second = ferry::ide::merge_xml_children(first->text, r);
  check(second.has_value() && second->text == first->text && second->added.empty() && second->replaced.empty());
}

void jsonc(std::string_view text) {
  ferry::debug::JsoncMergeRequest r{"tasks", "label", {{"version", "2.0.0"}},
                                    {{{"label", "ferry: a"}, {"args", {"run", "a b"}}}, {{"label", "ferry: b"}}}};
  auto first = ferry::debug::merge_named_entries(text, r);
  if (!first) return;
  auto second = ferry::debug::merge_named_entries(first->text, r);
  check(second.has_value() && second->text == first->text && second->added.empty() && second->replaced.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 64 * 1024) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) xml(text);
  else jsonc(text);
  return 0;
}
