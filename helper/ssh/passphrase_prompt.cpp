// Terminal passphrase prompt (see passphrase_prompt.hpp).
#include "helper/ssh/passphrase_prompt.hpp"

#include "common/terminal.hpp"

namespace ferry::ssh {

PassphraseProvider terminal_passphrase_provider() {
  return [](const std::string& key_path) -> std::optional<std::string> {
    return platform::read_secret("Enter passphrase for key '" + key_path + "': ");
  };
}

}  // namespace ferry::ssh
