// Test helper: prints to_json(parse_train_config(c)) for every valid config of the corpus, one
// per line, so check_train_schema.py can hold the normalised form against the schema.
#include <fstream>
#include <iostream>

#include "remote-runtime/train/train_config.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: train_config_normalise CORPUS\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  const auto corpus = nlohmann::json::parse(in);
  for (const auto& c : corpus) {
    if (!c.at("valid").get<bool>()) continue;
    auto parsed = ferry::train::parse_train_config(c.at("config"));
    if (!parsed) {
      std::cerr << c.at("name").get<std::string>() << ": " << parsed.error().to_string() << "\n";
      return 1;
    }
    std::cout << ferry::train::to_json(*parsed).dump() << "\n";
  }
  return 0;
}
