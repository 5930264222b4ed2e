// SPDX-License-Identifier: Apache-2.0
// The version of the JSON Lines layout (docs/json-schema.md), written in the header record.
// Bump it whenever a name or the nesting of a record changes; `perf-monitor report` warns when
// it reads a file of a newer version than its own.
#pragma once

namespace pm {

// 2: one shape for every metric (family.name.labels; only the proc_*/global_* names flat), one
// name per quantity, breakdowns with an "all" whole (docs/json-schema.md, "Schema versions").
// 3: the header says what each metric is (unit, kind, description), "metrics" records what
// appears later.
inline constexpr int kJsonSchemaVersion = 3;
// The oldest version `perf-monitor report` reads without a warning.
inline constexpr int kJsonOldestReadVersion = 2;

}  // namespace pm
