// protocol/spec/ferry.schema.json and the C++ validator agree: on the shared corpus, every config
// the C++ side rejects the schema rejects too, and every good one passes both.
#define BOOST_TEST_MODULE schema_agreement
#include <boost/test/unit_test.hpp>

#include <fstream>

#include "helper/deploy/host_spec.hpp"
#include "helper/deploy/project_config.hpp"
#include "protocol/spec_schemas.hpp"
#include "tests/unit/deploy/config_corpus.hpp"

using nlohmann::json;

namespace {

// The schema as the binaries carry it (embedded at build time; test_json_schema checks it is
// byte for byte protocol/spec/ferry.schema.json).
const json& load_schema() { return ferry::protocol::ferry_schema().document(); }

void each_property(const json& schema, const std::string& where, const std::function<void(const std::string&, const json&)>& f) {
  if (!schema.is_object()) return;
  if (auto p = schema.find("properties"); p != schema.end())
    for (const auto& [k, v] : p->items()) {
      f(where + "/" + k, v);
      each_property(v, where + "/" + k, f);
    }
  if (auto d = schema.find("$defs"); d != schema.end())
    for (const auto& [k, v] : d->items()) each_property(v, "#/$defs/" + k, f);
}

}  // namespace

BOOST_AUTO_TEST_CASE(schema_is_draft_2020_12_with_descriptions) {
  const json& schema = load_schema();
  BOOST_TEST(schema["$schema"] == "https://json-schema.org/draft/2020-12/schema");
  BOOST_TEST(schema["additionalProperties"] == false);
  int properties = 0;
  each_property(schema, "", [&](const std::string& where, const json& sub) {
    ++properties;
    bool described = sub.contains("description") ||
                     (sub.contains("$ref") && schema.at(json::json_pointer(sub["$ref"].get<std::string>().substr(1))).contains("description"));
    BOOST_TEST(described, where << " has no description (IDEs show it on completion)");
  });
  BOOST_TEST(properties >= 29);  // 11 top-level, 2 mapping, 5 tunnel, 3 autostop, 8 launch entry
  // The host rule is literally the C++ one.
  BOOST_TEST(schema["properties"]["host"]["pattern"] == std::string(ferry::deploy::kHostPattern));
  // So is the list of refused mapping roots, as a lookahead in front of the path shape.
  const std::string remote = schema["$defs"]["mapping"]["properties"]["remote"]["pattern"];
  BOOST_TEST(remote.starts_with("^(?!" + std::string(ferry::deploy::kRefusedRemoteRootPattern) + ")"), remote);
}

// The schema's regular expression and remote_root_refusal (which normalizes, then looks the path
// up) refuse exactly the same roots, over every listed directory in several spellings and
// neighbours that must pass.
BOOST_AUTO_TEST_CASE(schema_and_validator_agree_on_refused_mapping_roots) {
  const auto& checker = ferry::protocol::ferry_schema();
  std::vector<std::string> names = {"", "~", "root", "home", "home/bob", "home/bob/p", "homes", "bin", "boot", "dev",
                                    "dev/shm", "dev/shm/p", "dev/shmx", "dev/shm/p/../x", "etc", "etc/x/y", "etcetera", "lib", "lib32", "lib64", "libx32", "lib2",
                                    "proc", "proc/1/root", "run", "run/user/1", "sbin", "sys", "usr", "usr/local/p",
                                    "var", "var/tmp", "var/tmp/p", "var/lib", "var/lib/x", "var/log", "var/cache/a",
                                    "var/www", "tmp", "tmp/p", "opt", "opt/p", "srv", "srv/p", "mnt", "mnt/d/p",
                                    "media", "media/usb", "workspace", "data", "x.", "..y", ".hidden"};
  int refused = 0, total = 0;
  for (const auto& name : names) {
    for (const char* lead : {"/", "//", "/./"}) {
      for (const char* trail : {"", "/", "/.", "/./", "//"}) {
        std::string path = name == "~" ? std::string("~") + (std::string(lead) == "/" ? "" : lead) + trail
                                       : std::string(lead) + name + trail;
        if (name.empty() && std::string(trail).empty() && std::string(lead) == "/./") path = "/.";
        json doc{{"mappings", json::array({json{{"remote", path}}})}};
        auto cpp = ferry::deploy::parse_project(doc, "/tmp/proj");
        auto schema_errors = checker.validate(doc);
        ++total;
        refused += !cpp;
        BOOST_TEST(cpp.has_value() == schema_errors.empty(),
                   path << ": C++ " << (cpp ? "accepts" : "refuses (" + cpp.error().message + ")") << ", the schema "
                        << (schema_errors.empty() ? "accepts" : "refuses"));
      }
    }
  }
  BOOST_TEST(refused > total / 2);  // the list is exercised, not only its neighbours
}

BOOST_AUTO_TEST_CASE(schema_and_validator_agree_on_the_corpus) {
  const auto& checker = ferry::protocol::ferry_schema();
  int bad = 0;
  for (const auto& entry : ferry::test::config_corpus()) {
    BOOST_TEST_CONTEXT(entry.label) {
      json doc = json::parse(entry.json);
      auto cpp = ferry::deploy::parse_project(doc, "/tmp/proj");
      auto schema_errors = checker.validate(doc);
      BOOST_TEST(cpp.has_value() == entry.good());
      if (entry.validator_only()) {
        BOOST_TEST(schema_errors.empty(), "the schema now states this rule; drop \"(validator only)\" from the label");
      } else if (cpp) {
        BOOST_TEST(schema_errors.empty(), "schema rejects a config C++ accepts: " << (schema_errors.empty() ? "" : schema_errors[0].message));
      } else {
        ++bad;
        BOOST_TEST(!schema_errors.empty(), "schema accepts a config C++ rejects at " << cpp.error().pointer);
        // And the schema complains about the same place (or a place inside it); a missing
        // member is reported at the member's own pointer by both.
        const std::string& where = cpp.error().pointer;
        bool same_place = false;
        for (const auto& e : schema_errors) same_place = same_place || e.pointer == where || e.pointer.starts_with(where + "/");
        // A missing required key, or a rule over several keys (one of script/module), is
        // reported by the schema on its parent object.
        const std::string parent = where.substr(0, where.rfind('/'));
        for (const auto& e : schema_errors)
          same_place = same_place || (e.pointer == parent && (e.keyword == "required" || e.keyword == "oneOf"));
        BOOST_TEST(same_place, "schema errors elsewhere: " << schema_errors[0].pointer << ": " << schema_errors[0].message);
      }
    }
  }
  BOOST_TEST(bad > 40);
}

BOOST_AUTO_TEST_CASE(samples_ferry_json_passes_both) {
  std::ifstream in(FERRY_SAMPLES_CONFIG);
  json doc = json::parse(in);
  BOOST_TEST(ferry::deploy::parse_project(doc, "/tmp/samples").has_value());
  BOOST_TEST(ferry::protocol::ferry_schema().validate(doc).empty());
}
