// The agent wire's byte strings (CBOR, nlohmann's binary values) across a JSON text wire and back:
// each becomes {"$base64": "..."}. The project socket relays agent calls this way (a terminal's
// `ferry logs` riding a daemon gets a run's output bytes intact).
#pragma once

#include <nlohmann/json.hpp>

namespace ferry::protocol {

// Every binary value inside `value` as {"$base64": TEXT}.
nlohmann::json binary_as_text(const nlohmann::json& value);
// The inverse: every {"$base64": TEXT} object (that key alone) as a binary value again; one whose
// text is not base64 stays as it is.
nlohmann::json text_as_binary(const nlohmann::json& value);

}  // namespace ferry::protocol
