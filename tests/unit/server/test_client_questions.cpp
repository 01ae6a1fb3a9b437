// Questions to the person in the client's own terms: a ferry client gets ferry's requests, a
// plain LSP client window/showMessageRequest (mass delete, host key) or, for a passphrase that no
// message can carry, a window/showMessage pointing at ssh-agent with no wait at all.
#define BOOST_TEST_MODULE client_questions
#include <boost/test/unit_test.hpp>

#include <functional>
#include <vector>

#include "helper/server/client_questions.hpp"

using ferry::protocol::json;
using ferry::protocol::OutgoingRequests;
using ferry::protocol::Response;
using namespace ferry::server;

namespace {

// A client that records what it is sent and answers each request with `answer(request)`.
struct FakeClient {
  OutgoingRequests out;
  std::vector<json> sent;
  std::function<json(const json&)> answer = [](const json&) { return json(nullptr); };
  FakeClient() {
    out.attach([this](const json& m) {
      sent.push_back(m);
      if (m.contains("id")) out.route(Response{m["id"], answer(m)});
    });
  }
};

ClientTraits plain() { return ClientTraits{}; }
ClientTraits ferry_client() {
  ClientTraits t;
  t.ferry = true;
  return t;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_plain_client_is_asked_a_mass_delete_with_actions) {
  FakeClient c;
  ClientQuestions q(c.out);
  q.set_traits(plain());
  c.answer = [](const json& r) { return json{{"title", r["params"]["actions"][0]["title"]}}; };
  BOOST_TEST(q.confirm_mass_delete("deleting 150 of 200 remote files", 150, "/p", {}));
  BOOST_REQUIRE_EQUAL(c.sent.size(), 1u);
  BOOST_TEST(c.sent[0]["method"] == "window/showMessageRequest");
  BOOST_TEST(c.sent[0]["params"]["actions"][0]["title"] == "Delete 150 files");
  BOOST_TEST(c.sent[0]["params"]["message"].get<std::string>().find("deleting 150 of 200") != std::string::npos);
  c.answer = [](const json&) { return json{{"title", "Keep them"}}; };
  BOOST_TEST(!q.confirm_mass_delete("r", 150, "/p", {}));
  c.answer = [](const json&) { return json(nullptr); };  // dismissed
  BOOST_TEST(!q.confirm_mass_delete("r", 150, "/p", {}));
}

BOOST_AUTO_TEST_CASE(a_plain_client_is_told_to_use_ssh_agent_and_nothing_waits) {
  FakeClient c;
  ClientQuestions q(c.out);
  q.set_traits(plain());
  BOOST_TEST(!q.passphrase("/home/u/.ssh/id_ed25519", {}).has_value());
  BOOST_REQUIRE_EQUAL(c.sent.size(), 1u);
  BOOST_TEST(c.sent[0]["method"] == "window/showMessage");
  BOOST_TEST(!c.sent[0].contains("id"));  // a notification: no answer awaited
  BOOST_TEST(c.sent[0]["params"]["message"].get<std::string>().find("ssh-add /home/u/.ssh/id_ed25519") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_ferry_client_gets_ferrys_own_requests) {
  FakeClient c;
  ClientQuestions q(c.out);
  q.set_traits(ferry_client());
  c.answer = [](const json& r) -> json {
    if (r["method"] == "host/passphrase") return {{"passphrase", "s3cret"}};
    return {{"accept", true}};
  };
  BOOST_TEST(q.passphrase("/k", {}).value_or("") == "s3cret");
  BOOST_TEST(q.confirm_mass_delete("r", 3, "/p", {}));
  auto key = q.confirm_host_key("box", "ssh-ed25519", "SHA256:x", {});
  BOOST_TEST((key.has_value() && *key));
  BOOST_REQUIRE_EQUAL(c.sent.size(), 3u);
  BOOST_TEST(c.sent[0]["method"] == "host/passphrase");
  BOOST_TEST(c.sent[1]["method"] == "sync/confirmMassDelete");
  BOOST_TEST(c.sent[2]["method"] == "host/confirmHostKey");
}

BOOST_AUTO_TEST_CASE(traits_come_from_initialize_capabilities) {
  auto t = client_traits(json{{"capabilities",
                               {{"experimental", {{"ferry", true}}},
                                {"window", {{"workDoneProgress", true}, {"showDocument", {{"support", false}}}}},
                                {"workspace", {{"didChangeWatchedFiles", {{"dynamicRegistration", true}}}}}}},
                              {"clientInfo", {{"name", "Neovim"}}}});
  BOOST_TEST(t.ferry);
  BOOST_TEST(t.work_done_progress);
  BOOST_TEST(!t.show_document);
  BOOST_TEST(t.watched_files_registration);
  BOOST_TEST(t.name == "Neovim");
  auto none = client_traits(json{{"capabilities", {{"experimental", {{"ferry", false}}}}}});
  BOOST_TEST(!none.ferry);
  BOOST_TEST(!client_traits(json("garbage")).ferry);
}
