// SPDX-License-Identifier: Apache-2.0
// The version of the JSON Lines layout (docs/json-schema.md), written in the header record.
// Bump it whenever a name or the nesting of a record changes; `perf-monitor report` warns when
// it reads a file of a newer version than its own.
#pragma once

namespace pm {

inline constexpr int kJsonSchemaVersion = 1;

}  // namespace pm
