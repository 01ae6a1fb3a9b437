// Asks for a key's passphrase on the controlling terminal (echo off), for the CLI. The IDE path
// supplies its own PassphraseProvider; passphrases are never read from files or stored.
#pragma once

#include "helper/ssh/session.hpp"

namespace ferry::ssh {

// A provider that prompts on /dev/tty; it returns nullopt (skip the key) when there is no terminal.
PassphraseProvider terminal_passphrase_provider();

}  // namespace ferry::ssh
