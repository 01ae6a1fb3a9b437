// xml_text: the reader (spans, attributes, entities, what it refuses) and merging children into a
// file by text edits: the user's elements, comments and layout kept, ours replaced in place or
// appended, missing containers created, a self-closing container opened.
#define BOOST_TEST_MODULE xml_text
#include <boost/test/unit_test.hpp>

#include "helper/ide/xml_text.hpp"

using namespace ferry::ide;
using Keys = std::vector<std::string>;

namespace {

XmlMergeRequest request(std::vector<XmlChild> children) {
  XmlMergeRequest r;
  r.path = {{"project", {{"version", "4"}}}, {"component", {{"name", "C"}}}};
  r.key_of = [](const XmlElement& e) -> std::optional<std::string> {
    const std::string* n = e.attribute("id");
    return n ? std::optional<std::string>(*n) : std::nullopt;
  };
  r.children = std::move(children);
  return r;
}

const XmlChild kA{"a", "<item id=\"a\">\n  <v x=\"1\" />\n</item>"};
const XmlChild kB{"b", "<item id=\"b\" />"};

XmlMerge merged(std::string_view existing, const XmlMergeRequest& r) {
  auto m = merge_xml_children(existing, r);
  BOOST_REQUIRE_MESSAGE(m.has_value(), (m ? std::string() : m.error()));
  auto again = merge_xml_children(m->text, r);
  BOOST_REQUIRE(again.has_value());
  BOOST_TEST(again->text == m->text);  // idempotent
  BOOST_TEST(again->added.empty());
  return *m;
}

}  // namespace

BOOST_AUTO_TEST_CASE(reader_keeps_spans_attributes_and_text) {
  const std::string text = "<?xml version=\"1.0\"?>\n<!-- c -->\n<a k='v &amp; &#233;' j=\"&quot;\">\n  <b/>\n  t &lt; u <![CDATA[<x>]]>\n</a >\n";
  auto root = parse_xml(text);
  BOOST_REQUIRE_MESSAGE(root.has_value(), (root ? std::string() : root.error()));
  BOOST_TEST(root->tag == "a");
  BOOST_TEST(*root->attribute("k") == "v & \xC3\xA9");
  BOOST_TEST(*root->attribute("j") == "\"");
  BOOST_TEST(root->text == "t < u <x>");
  BOOST_REQUIRE_EQUAL(root->children.size(), 1u);
  const XmlElement& b = root->children[0];
  BOOST_TEST(b.self_closing);
  BOOST_TEST(text.substr(b.begin, b.end - b.begin) == "<b/>");
  BOOST_TEST(text.substr(root->begin, root->end - root->begin).ends_with("</a >"));
}

BOOST_AUTO_TEST_CASE(reader_refuses_what_is_not_xml) {
  for (const char* bad : {"", "text", "<a>", "<a></b>", "<a x=1/>", "<a x=\"1\" x=\"2\"/>", "<a>&nbsp;</a>",
                          "<a/><b/>", "<a x=\"<\"/>", "<!-- open", "<a><!-- open</a>"}) {
    BOOST_TEST(!parse_xml(bad).has_value(), bad);
  }
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "<a>";
  for (int i = 0; i < 100; ++i) deep += "</a>";
  BOOST_TEST(!parse_xml(deep).has_value());  // nesting is bounded, not a stack overflow
}

BOOST_AUTO_TEST_CASE(canonical_ignores_layout_attribute_order_and_comments) {
  auto a = parse_xml("<x b=\"2\" a=\"1\">\n  <!-- c -->\n  <y/>\n</x>");
  auto b = parse_xml("<x a=\"1\" b=\"2\"><y></y></x>");
  auto c = parse_xml("<x a=\"1\" b=\"3\"><y/></x>");
  BOOST_REQUIRE(a && b && c);
  BOOST_TEST(canonical(*a) == canonical(*b));
  BOOST_TEST(canonical(*a) != canonical(*c));
  BOOST_TEST(xml_escape("a&b<c>\"d\"\n") == "a&amp;b&lt;c&gt;&quot;d&quot;&#10;");
}

BOOST_AUTO_TEST_CASE(new_file_is_the_path_around_the_children) {
  XmlMergeRequest r = request({kA, kB});
  r.prolog = true;
  auto m = merged("", r);
  BOOST_TEST(m.text ==
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<project version=\"4\">\n"
             "  <component name=\"C\">\n"
             "    <item id=\"a\">\n"
             "      <v x=\"1\" />\n"
             "    </item>\n"
             "    <item id=\"b\" />\n"
             "  </component>\n"
             "</project>\n");
  BOOST_TEST(m.added == (Keys{"a", "b"}));
}

BOOST_AUTO_TEST_CASE(users_children_and_comments_stay_ours_replaced_in_place) {
  const std::string existing =
      "<project version=\"4\">\n"
      "  <component name=\"Other\" />\n"
      "  <component name=\"C\">\n"
      "    <!-- mine -->\n"
      "    <item id=\"mine\"><v/></item>\n"
      "    <item id=\"a\"><v x=\"0\"/></item>\n"
      "    <other/>\n"
      "  </component>\n"
      "</project>\n";
  auto m = merged(existing, request({kA, kB}));
  BOOST_TEST(m.text ==
             "<project version=\"4\">\n"
             "  <component name=\"Other\" />\n"
             "  <component name=\"C\">\n"
             "    <!-- mine -->\n"
             "    <item id=\"mine\"><v/></item>\n"
             "    <item id=\"a\">\n"
             "      <v x=\"1\" />\n"
             "    </item>\n"
             "    <other/>\n"
             "    <item id=\"b\" />\n"
             "  </component>\n"
             "</project>\n");
  BOOST_TEST(m.replaced == (Keys{"a"}));
  BOOST_TEST(m.added == (Keys{"b"}));
  BOOST_TEST(m.existing_keys == (Keys{"mine", "a"}));
}

BOOST_AUTO_TEST_CASE(same_meaning_is_left_as_the_ide_wrote_it) {
  const std::string existing = "<project version=\"4\"><component name=\"C\"><item id=\"a\"><v   x='1'/></item></component></project>";
  auto m = merged(existing, request({kA}));
  BOOST_TEST(m.text == existing);
  BOOST_TEST(m.unchanged == (Keys{"a"}));
}

BOOST_AUTO_TEST_CASE(missing_and_self_closing_containers) {
  auto no_component = merged("<project version=\"4\">\n  <component name=\"Other\" />\n</project>\n", request({kB}));
  BOOST_TEST(no_component.text ==
             "<project version=\"4\">\n"
             "  <component name=\"Other\" />\n"
             "  <component name=\"C\">\n"
             "    <item id=\"b\" />\n"
             "  </component>\n"
             "</project>\n");
  auto self_closing = merged("<project version=\"4\">\n  <component name=\"C\"/>\n</project>", request({kB}));
  BOOST_TEST(self_closing.text ==
             "<project version=\"4\">\n"
             "  <component name=\"C\">\n"
             "    <item id=\"b\" />\n"
             "  </component>\n"
             "</project>");
  auto empty_root = merged("<project version=\"4\"></project>", request({kB}));
  BOOST_TEST(empty_root.text ==
             "<project version=\"4\">\n"
             "  <component name=\"C\">\n"
             "    <item id=\"b\" />\n"
             "  </component>\n"
             "</project>");
}

BOOST_AUTO_TEST_CASE(files_ferry_cannot_read_or_does_not_know_are_left_alone) {
  auto broken = merge_xml_children("<project version=\"4\"><component name=\"C\">", request({kB}));
  BOOST_REQUIRE(!broken.has_value());
  BOOST_TEST(broken.error().find("left as it is") != std::string::npos, broken.error());
  auto other_root = merge_xml_children("<application/>", request({kB}));
  BOOST_REQUIRE(!other_root.has_value());
  BOOST_TEST(other_root.error().find("root element is <application>") != std::string::npos, other_root.error());
}
